//! Multicast trees: one spanning tree per group over the live switches, and its MFT masks.
//!
//! **Root.** The live switch with the smallest greatest distance (switch hops) to the
//! switches of the group's members, ties by the smaller sum of those distances, then the
//! fewer groups already rooted there (equally central switches take turns, so groups do not
//! all pile onto one root's links), then the lower GUID — OpenSM's choice of a central
//! switch, made per group.
//!
//! **Up*/down* trees** ([`TreeRule::UpDown`], for engines whose base is an up*/down* rule:
//! updn, dnup, ftree). A flood from any sender climbs its branch to the meeting point and
//! goes down the others, so when every tree cable from a child to its parent is an *up*
//! channel of the unicast ranking, every multicast path is a legal up*/down* path and the
//! union of unicast and multicast dependencies stays acyclic on one VL. The root is then
//! taken among the tops of the ranking (switches without an up channel), the distance is
//! counted over up channels only, and a branch climbs only up. A group no top reaches from
//! all its members by up channels alone gets a shortest tree instead, and is counted.
//!
//! **Branches.** The member switches are taken nearest the root first; each climbs towards
//! the root one hop at a time, always to a neighbour one hop nearer, until it meets the tree.
//! Among those neighbours (and the parallel cables to them) it prefers one already in the
//! tree (a smaller tree), then the cable the fewest earlier groups' trees use (the load is
//! spread across groups, as the unicast engines spread routes), then the lower switch index
//! and port. Every path to the root is a shortest one, so the depth is the root's greatest
//! distance to a member switch.
//!
//! **Masks.** Every tree cable's port at both ends, and every full member's port at its
//! switch. Members that are down (their port, link or switch dead, or cut off from the
//! root's component) are counted as unreached and left out.
//!
//! Cost: the switch distances once per set of faults (the up-channel distances to the tops
//! of the ranking, or the n² hop matrix for shortest trees, only when a group needs it;
//! [`TreeCache`] keeps them across calls), then per group O(n × member switches) for the
//! root and O(tree × degree) for the branches. Routing a group alone
//! ([`route_groups_with`]) can count the trees already in place ([`OtherTrees`]) in the
//! root's turn-taking and the branches' load, as if they had been routed first.

use super::{Group, GroupMft, Mfts, PortMask};
use crate::engines::common::{hop_matrix, Topo, INF};
use crate::engines::EngineError;
use crate::turn::UpDownRule;
use fabric::{Fabric, FaultMask, Lid};
use serde::Serialize;

/// What routing one group gave.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupStats {
    pub mlid: Lid,
    /// Root switch index (`None`: no member is up).
    pub root: Option<u32>,
    /// Switches in the tree.
    pub switches: usize,
    /// Greatest switch hops from the root to a member's switch.
    pub depth: u32,
    pub members: usize,
    /// Members left out: down or cut off from the root.
    pub unreached: usize,
}

/// How trees are shaped (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub enum TreeRule<'a> {
    /// Shortest paths to a central root.
    Shortest,
    /// Every child-to-parent cable an up channel of the rule.
    UpDown(&'a UpDownRule),
}

impl<'a> TreeRule<'a> {
    /// Up*/down* trees when the engine has a rule ([`engine_up_down_rule`]), else shortest.
    pub fn of(rule: Option<&'a UpDownRule>) -> Self {
        rule.map_or(TreeRule::Shortest, TreeRule::UpDown)
    }
}

/// The trees of every group and their MFTs.
#[derive(Clone, Debug, Default)]
pub struct McastRouting {
    pub mfts: Mfts,
    pub groups: Vec<GroupStats>,
    /// Per link: how many groups' trees use it.
    pub link_load: Vec<u32>,
    /// Groups that got a shortest tree because no top of the up*/down* ranking reaches all
    /// their members by up channels.
    pub not_up_down: usize,
}

impl McastRouting {
    /// The most groups' trees on one link.
    pub fn max_link_load(&self) -> u32 {
        self.link_load.iter().copied().max().unwrap_or(0)
    }
    /// The deepest tree.
    pub fn max_depth(&self) -> u32 {
        self.groups.iter().map(|g| g.depth).max().unwrap_or(0)
    }
    /// Members no tree reaches, over all groups.
    pub fn unreached(&self) -> usize {
        self.groups.iter().map(|g| g.unreached).sum()
    }
}

/// Distance rows to candidate roots: `(root, distance of every switch to it)`.
#[derive(Debug)]
struct Rows {
    roots: Vec<usize>,
    /// Distance rows of `n` entries (INF: no way); root `i`'s is row `row_of[i]`.
    dist: Vec<u16>,
    row_of: Vec<usize>,
}

impl Rows {
    fn row(&self, i: usize, n: usize) -> &[u16] {
        let r = self.row_of[i];
        &self.dist[r * n..(r + 1) * n]
    }
    /// Shortest distances: every live switch a candidate, its row of the hop matrix.
    fn shortest(t: &Topo) -> Rows {
        let roots: Vec<usize> = (0..t.n).filter(|&s| t.alive[s]).collect();
        Rows {
            row_of: roots.clone(),
            roots,
            dist: hop_matrix(t),
        }
    }
    /// Up-channel distances to the tops of the ranking.
    fn up_down(t: &Topo, rule: &UpDownRule) -> Rows {
        let n = t.n;
        let up = |a: &crate::engines::common::Adj| rule.is_up(fabric::ChannelId(a.ch));
        let roots: Vec<usize> = (0..n)
            .filter(|&s| t.alive[s] && !t.links(s).iter().any(up))
            .collect();
        let mut dist = vec![INF; roots.len() * n];
        let mut queue: Vec<usize> = Vec::with_capacity(n);
        for (i, &r) in roots.iter().enumerate() {
            let d = &mut dist[i * n..(i + 1) * n];
            d[r] = 0;
            queue.clear();
            queue.push(r);
            let mut h = 0;
            while h < queue.len() {
                let v = queue[h];
                h += 1;
                // Switches with an up channel into v.
                for a in t.links(v) {
                    let u = a.peer as usize;
                    let back = fabric::ChannelId(a.ch).reverse();
                    if d[u] == INF && rule.is_up(back) {
                        d[u] = d[v] + 1;
                        queue.push(u);
                    }
                }
            }
        }
        Rows {
            row_of: (0..roots.len()).collect(),
            roots,
            dist,
        }
    }
}

/// The up*/down* rule of `engine` on `f` with `opts`, when its base has one (updn, dnup,
/// ftree): the trees then obey it ([`TreeRule::UpDown`]); `None` for shortest trees.
pub fn engine_up_down_rule(
    f: &Fabric,
    engine: &dyn crate::engines::Engine,
    opts: &crate::engines::RouteOptions,
) -> Option<UpDownRule> {
    match engine.rftr_base(f, opts) {
        Ok(crate::turn::Base::Turns(t)) => t.as_up_down().cloned(),
        _ => None,
    }
}

/// The distances trees are routed by, kept between calls of [`route_groups_with`] while the
/// faults stay the same: a join or leave routes one group again, and the switch distances
/// (n² for shortest trees) would otherwise be computed again for it. One cache belongs to
/// one fabric and one tree rule.
#[derive(Debug, Default)]
pub struct TreeCache {
    mask: Option<FaultMask>,
    shortest: Option<Rows>,
    updown: Option<Rows>,
}

impl TreeCache {
    fn fit(&mut self, mask: &FaultMask) {
        if self.mask.as_ref() != Some(mask) {
            *self = TreeCache {
                mask: Some(mask.clone()),
                ..TreeCache::default()
            };
        }
    }
}

/// What the groups routed before put on the fabric, for [`route_groups_with`] to spread
/// new trees around: per link the trees using it, per switch the trees rooted there.
#[derive(Clone, Copy, Debug)]
pub struct OtherTrees<'a> {
    pub link_load: &'a [u32],
    pub rooted: &'a [u32],
}

/// Routes every group on the live fabric (see the module documentation).
pub fn route_groups(
    f: &Fabric,
    mask: &FaultMask,
    groups: &[Group],
    rule: TreeRule<'_>,
) -> Result<McastRouting, EngineError> {
    route_groups_with(f, mask, groups, rule, &mut TreeCache::default(), None)
}

/// [`route_groups`] with the distances of `cache` (computed on first use under `mask`), and
/// the load of `others` (trees already in place, not routed again here) counted as if
/// their groups had been routed first: a group routed alone spreads around them. The
/// returned link loads are those of `groups` only.
pub fn route_groups_with(
    f: &Fabric,
    mask: &FaultMask,
    groups: &[Group],
    rule: TreeRule<'_>,
    cache: &mut TreeCache,
    others: Option<OtherTrees<'_>>,
) -> Result<McastRouting, EngineError> {
    let t = Topo::live(f, mask)?;
    let n = t.n;
    cache.fit(mask);
    if let TreeRule::UpDown(r) = rule {
        if cache.updown.is_none() {
            cache.updown = Some(Rows::up_down(&t, r));
        }
    }
    let updown = match rule {
        TreeRule::UpDown(r) => cache.updown.as_ref().map(|rows| (rows, r)),
        TreeRule::Shortest => None,
    };
    let base_load = |l: usize| others.map_or(0, |o| o.link_load.get(l).copied().unwrap_or(0));
    // End port -> (switch index, switch port), for live end ports.
    let mut at: Vec<Option<(u32, u8)>> = vec![None; f.ports.len()];
    for e in &t.ends {
        at[e.port.idx()] = Some((e.sw, e.sw_port));
    }
    let mut out = McastRouting {
        mfts: Mfts::default(),
        groups: Vec::with_capacity(groups.len()),
        link_load: vec![0; f.links.len()],
        not_up_down: 0,
    };
    // Per-group scratch, reused: tree membership by stamp, masks by switch.
    let mut stamp = vec![u32::MAX; n];
    let mut masks = vec![PortMask::default(); n];
    let mut touched: Vec<u32> = Vec::new();
    let mut sws: Vec<u32> = Vec::new();
    let mut rooted = vec![0u32; n];
    if let Some(o) = others {
        for (r, &k) in rooted.iter_mut().zip(o.rooted) {
            *r = k;
        }
    }
    for (gi, g) in groups.iter().enumerate() {
        let gi = gi as u32;
        sws.clear();
        let mut down = 0;
        for m in &g.members {
            match at[m.port.idx()] {
                Some((s, _)) => sws.push(s),
                None => down += 1,
            }
        }
        sws.sort_unstable();
        sws.dedup();
        let mut stats = GroupStats {
            mlid: g.mlid,
            root: None,
            switches: 0,
            depth: 0,
            members: g.members.len(),
            unreached: down,
        };
        // An up*/down* tree when a top reaches every member switch by up channels.
        let mut chosen: Option<(&[u16], usize, Option<&UpDownRule>)> = None;
        if let Some((rows, r)) = updown {
            if let Some((i, reach)) = choose_root(&t, rows, &sws, &rooted) {
                if reach == sws.len() {
                    chosen = Some((rows.row(i, n), rows.roots[i], Some(r)));
                }
            }
            if chosen.is_none() && !sws.is_empty() {
                out.not_up_down += 1;
            }
        }
        if chosen.is_none() {
            let shortest = cache.shortest.get_or_insert_with(|| Rows::shortest(&t));
            chosen = choose_root(&t, shortest, &sws, &rooted)
                .map(|(i, _)| (shortest.row(i, n), shortest.roots[i], None));
        }
        let Some((row, root, up_rule)) = chosen else {
            stats.unreached = g.members.len();
            out.mfts.groups.push(GroupMft {
                mlid: g.mlid,
                sl: g.sl,
                switches: Vec::new(),
            });
            out.groups.push(stats);
            continue;
        };
        stats.root = Some(root as u32);
        rooted[root] += 1;
        let dist = |s: usize| row[s];
        // Nearest first, so that later branches meet earlier ones.
        sws.sort_by_key(|&s| (dist(s as usize), s));
        touched.clear();
        stamp[root] = gi;
        touched.push(root as u32);
        for &m in &sws {
            let m = m as usize;
            if dist(m) == INF {
                continue;
            }
            stats.depth = stats.depth.max(dist(m) as u32);
            let mut u = m;
            while stamp[u] != gi {
                let du = dist(u);
                let best = t
                    .links(u)
                    .iter()
                    .filter(|a| dist(a.peer as usize) as u32 + 1 == du as u32)
                    .filter(|a| up_rule.is_none_or(|r| r.is_up(fabric::ChannelId(a.ch))))
                    .min_by_key(|a| {
                        let link = fabric::ChannelId(a.ch).link().idx();
                        (
                            stamp[a.peer as usize] != gi,
                            base_load(link) + out.link_load[link],
                            a.peer,
                            a.port,
                        )
                    });
                // A switch at distance d > 0 has a neighbour at d - 1 (symmetric hops).
                let Some(best) = best else {
                    break;
                };
                let ch = fabric::ChannelId(best.ch);
                out.link_load[ch.link().idx()] += 1;
                masks[u].set(best.port);
                let peer = best.peer as usize;
                masks[peer].set(f.port(f.channel_dst(ch)).num);
                stamp[u] = gi;
                touched.push(u as u32);
                u = peer;
            }
        }
        for m in &g.members {
            // (Members that are down were counted above.)
            let Some((s, p)) = at[m.port.idx()] else {
                continue;
            };
            if dist(s as usize) == INF {
                stats.unreached += 1;
            } else if m.full {
                masks[s as usize].set(p);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        let mut entries = Vec::with_capacity(touched.len());
        for &s in &touched {
            let mk = std::mem::take(&mut masks[s as usize]);
            if !mk.is_empty() {
                entries.push((s, mk));
            }
        }
        stats.switches = entries.len();
        out.mfts.groups.push(GroupMft {
            mlid: g.mlid,
            sl: g.sl,
            switches: entries,
        });
        out.groups.push(stats);
    }
    out.mfts.groups.sort_by_key(|g| g.mlid);
    Ok(out)
}

/// The member switches' central root among `rows` (see the module documentation): the
/// candidate reaching most of them, then the smallest (greatest distance, sum of distances,
/// groups already rooted there, GUID): equally central roots take turns. Returns the row index and how many member switches it reaches.
fn choose_root(t: &Topo, rows: &Rows, sws: &[u32], rooted: &[u32]) -> Option<(usize, usize)> {
    let n = t.n;
    // (members not reached, greatest distance, sum, groups rooted, GUID)
    type Key = (usize, u32, u64, u32, u64);
    let mut best: Option<(Key, usize, usize)> = None;
    for (i, &s) in rows.roots.iter().enumerate() {
        let row = rows.row(i, n);
        let mut reach = 0usize;
        let (mut far, mut sum) = (0u32, 0u64);
        for &m in sws {
            let d = row[m as usize];
            if d != INF {
                reach += 1;
                far = far.max(d as u32);
                sum += d as u64;
            }
        }
        if reach == 0 {
            continue;
        }
        let key = (usize::MAX - reach, far, sum, rooted[s], t.guid(s));
        if best.is_none_or(|(k, _, _)| key < k) {
            best = Some((key, i, reach));
        }
    }
    best.map(|(_, i, reach)| (i, reach))
}
