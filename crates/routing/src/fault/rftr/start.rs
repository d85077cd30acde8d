//! RFTR's start: the base routing taken in (its LFTs LID-major, LID offsets above 0
//! cleared, the turn rule's classes and distances), the base paths of every switch to every
//! end port, and the tables built from them.

use super::*;
use rayon::prelude::*;

/// The VLs (one past the highest on an inter-switch hop of any SL in use) and SLs (one past
/// the highest path SL) a routing uses.
fn vls_and_sls(f: &Fabric, r: &Routing) -> (u8, u8) {
    let sls = match &r.path_sl {
        PathSl::Uniform(s) => *s + 1,
        PathSl::PerDest(v) => v.iter().copied().max().unwrap_or(0) + 1,
        PathSl::PerPair { sl, .. } => sl.iter().copied().max().unwrap_or(0) + 1,
    };
    let mut vls = 0u8;
    for &n in &f.switches {
        let np = f.node(n).nports;
        for i in 0..=np {
            for o in 1..=np {
                for sl in 0..sls {
                    vls = vls.max(r.sl2vl.vl(n, i, o, sl) + 1);
                }
            }
        }
    }
    (vls.max(1), sls)
}

/// Base paths walked from a few switches: `(switch, end, hop count or SAME)` and the hops
/// of all, in order.
#[derive(Default)]
struct BasePaths {
    paths: Vec<(u32, u32, u32)>,
    hops: Vec<ChannelId>,
}

impl<'f> Rftr<'f> {
    /// Starts RFTR from a base routing. The routing's virtual LIDs (offsets ≥ 1) are cleared.
    /// With a turn rule (`Base::Turns`, or an `Arc` of a rule) the base paths must obey it (an
    /// error names the first path that does not), and RFTR owns every SL and VL; with
    /// `Base::FreshVls` the base keeps its path SLs and SL2VL tables and repaired paths go on
    /// VLs and SLs above the ones it uses (module documentation).
    pub fn new(
        f: &'f Fabric,
        base: &Routing,
        how: impl Into<Base<'f>>,
        cfg: RftrConfig,
    ) -> Result<Self, RftrError> {
        let how = how.into();
        let (rule, fresh, cfg): (Arc<dyn TurnRule + 'f>, _, _) = match how {
            Base::Turns(r) => (r, None, cfg),
            Base::FreshVls => {
                let (vls, sls) = vls_and_sls(f, base);
                if vls >= cfg.vls {
                    return Err(RftrError::NoFreshVl {
                        base: vls,
                        available: cfg.vls,
                    });
                }
                if sls >= cfg.max_sls {
                    return Err(RftrError::NoFreshSl {
                        base: sls,
                        available: cfg.max_sls,
                    });
                }
                let fresh = Fresh {
                    base_vls: vls,
                    base_sls: sls,
                    layers: Layers::new(f.links.len() * 2, (cfg.vls - vls) as usize),
                };
                // Every repaired path takes a virtual LID: base-LID entries carry the base's
                // SLs, which know nothing of the fresh VLs.
                let cfg = RftrConfig {
                    reuse_dead_base: false,
                    prefer_base_lid: false,
                    ..cfg
                };
                (Arc::new(AllTurns), Some(fresh), cfg)
            }
        };
        if cfg.vls == 0 || cfg.vls > crate::tables::NUM_DATA_VLS {
            return Err(RftrError::Vls(cfg.vls));
        }
        if cfg.max_sls == 0 || cfg.max_sls as usize > NUM_SLS {
            return Err(RftrError::Sls(cfg.max_sls));
        }
        let ns = f.num_switches();
        let ne = f.end_ports.len();
        let mut routing = base.clone();
        let lmc = f.end_lmc();
        // Clear virtual LIDs.
        for &p in &f.end_ports {
            let base_lid = f.port(p).lid;
            for k in 1..(1u32 << f.port(p).lmc) {
                let lid = base_lid as u32 + k;
                if lid <= routing.max_lid as u32 {
                    for s in f.switch_ids() {
                        routing.lft_of_mut(s)[lid as usize] = NO_PORT;
                    }
                }
            }
        }
        if fresh.is_none() {
            // SL2VL: every SL to VL 0 everywhere (SL 0 only when keeping the base's), then
            // RFTR sets entries for SLs ≥ 1.
            for n in 0..f.nodes.len() {
                let node = NodeId(n as u32);
                if cfg.keep_sl2vl {
                    let np = f.node(node).nports;
                    for i in 0..=np {
                        for o in 0..=np {
                            if routing.sl2vl.vl(node, i, o, 0) != 0 {
                                routing.sl2vl.set(node, i, o, 0, 0);
                            }
                        }
                    }
                } else {
                    routing.sl2vl.table_mut(node).fill(0);
                }
            }
            routing.path_sl = PathSl::PerPair {
                stride: routing.stride(),
                sl: written(ne * routing.stride(), 0),
            };
        } else {
            // The base's own SLs, per pair, for RFTR to overwrite pair by pair.
            let stride = routing.stride();
            let mut sl = written(ne * stride, 0);
            for e in 0..ne {
                for lid in 0..stride {
                    sl[e * stride + lid] = base.path_sl.get(e, lid as Lid);
                }
            }
            routing.path_sl = PathSl::PerPair { stride, sl };
        }
        let mut end_sw = vec![NONE; ne];
        let mut end_swport = vec![NO_PORT; ne];
        let mut slot_of = vec![NONE; ns];
        let mut slot_switch = Vec::new();
        let mut slot_ends: Vec<Vec<u32>> = Vec::new();
        for (e, &p) in f.end_ports.iter().enumerate() {
            if let Some(r) = f.attached_switch(p) {
                let Some(s) = f.switch_of(f.port(r).node).map(|s| s.0) else {
                    continue;
                };
                end_sw[e] = s;
                end_swport[e] = f.port(r).num;
                if slot_of[s as usize] == NONE {
                    slot_of[s as usize] = slot_switch.len() as u32;
                    slot_switch.push(s);
                    slot_ends.push(Vec::new());
                }
                slot_ends[slot_of[s as usize] as usize].push(e as u32);
            }
        }
        let nch = f.links.len() * 2;
        let ch_class: Vec<u8> = (0..nch as u32).map(|c| rule.class(ChannelId(c))).collect();
        let ncls = ch_class.iter().map(|&c| c as usize + 1).max().unwrap_or(1);
        if ncls > MAX_CLASSES {
            return Err(RftrError::Classes {
                rule: rule.name(),
                classes: ncls,
            });
        }
        // One representative channel per class gives the penalty table (legality depends
        // only on the classes: the TurnRule invariant).
        let mut rep_ch = vec![NONE; ncls];
        for (c, &k) in ch_class.iter().enumerate() {
            if rep_ch[k as usize] == NONE {
                rep_ch[k as usize] = c as u32;
            }
        }
        let mut pen = vec![0u8; ncls * ncls];
        for a in 0..ncls {
            for b in 0..ncls {
                if rep_ch[a] != NONE && rep_ch[b] != NONE {
                    pen[a * ncls + b] =
                        u8::from(!rule.legal(f, ChannelId(rep_ch[a]), ChannelId(rep_ch[b])));
                }
            }
        }
        let ch_dst_sw: Vec<u32> = (0..nch as u32)
            .map(|c| f.dst_switch(ChannelId(c)).map_or(NONE, |s| s.0))
            .collect();
        let ch_port: Vec<u8> = (0..nch as u32)
            .map(|c| f.port(f.channel_src(ChannelId(c))).num)
            .collect();
        let mut me = Rftr {
            f,
            rule,
            cfg,
            mask: FaultMask::none(f),
            by_lid: lid_major(&routing, ns),
            routing,
            paths: PathStore::new(ns, f.links.len() * 2),
            slot_of,
            slot_switch,
            slot_ends,
            end_sw,
            end_swport,
            sel: Vec::new(),
            colours: SlColouring::new(fresh.as_ref().map_or(1, |x| x.base_sls), cfg.max_sls),
            fresh,
            lid_used: vec![1; ne],
            lmc,
            delta: Delta::default(),
            last: StepLog::default(),
            reports: Vec::new(),
            ch_class,
            ncls,
            pen,
            ch_dst_sw,
            ch_port,
            plane: Plane::new(f, None),
            ch_dead: vec![false; nch],
            pre_tab: Vec::new(),
            tries: Vec::new(),
            pre_cache: FxHashMap::default(),
            pending: Pending::new(ns),
            walk_suf: Vec::new(),
            walks_forgotten: Vec::new(),
            in_switch: Arc::default(),
            pre_map_pool: Vec::new(),
            suf_cache: FxHashMap::default(),
            suf_pool: Vec::new(),
            alive_buf: Vec::new(),
            sdist: Arc::new(Vec::new()),
            sdist_top: 0,
            legal: Arc::default(),
            deviation_scratch: (Vec::new(), Vec::new()),
            early_deviation: EarlyDeviation::default(),
            in_links: Arc::default(),
            dist: FxHashMap::default(),
            dist_pool: Vec::new(),
            legal_reach: FxHashMap::default(),
            legal_reach_pool: Vec::new(),
            bfs_queue: Vec::new(),
            reach_dist: Vec::new(),
            stamp: vec![0; ns],
            stamp_gen: 0,
            cand_hops: Vec::new(),
            cand_vls: Vec::new(),
            cand_req: Vec::new(),
            cand_bufs: Vec::new(),
            order_scratch: Vec::new(),
            rewritten: vec![0; ns],
            group_e: NONE,
            cur_prev: NONE,
            claimed: vec![0; ns],
            group: 0,
            lid_short: false,
            fault_bufs: FaultBufs::default(),
            own_path: vec![(0, NONE); ns],
            shortest: vec![(0, 0); ns],
        };
        me.sel = vec![NONE; me.slot_switch.len() * ne];
        me.sdist = Arc::new(static_distances(f, &me.ch_dst_sw));
        me.sdist_top = me
            .sdist
            .iter()
            .copied()
            .filter(|&d| d != FAR)
            .max()
            .unwrap_or(0);
        me.in_links = Arc::new(InLinks::new(f, &me.ch_dst_sw, &me.ch_class, me.ncls));
        let legal = LegalDistances::new(
            f,
            &me.ch_dst_sw,
            &me.ch_class,
            &me.pen,
            me.ncls,
            &me.in_links,
        );
        me.legal = Arc::new(legal);
        me.in_switch = Arc::new(walks::InSwitch::new(f, &me.ch_dst_sw, &me.ch_port));
        me.reserve_base_paths()?;
        me.store_base_paths()?;
        me.paths.index_base();
        me.build_tries();
        me.paths.reserve_headroom();
        me.walk_all();
        me.warm_pools();
        Ok(me)
    }

    /// Stores the base paths from every switch with end ports to every end port (the
    /// sources' paths: the DRT; the IRT, the suffixes, is read from the tables): walked on every thread, a wave of switch chunks at a time, and stored in
    /// switch order, so path ids and the first error are those of walking them one by one.
    fn store_base_paths(&mut self) -> Result<(), RftrError> {
        const CHUNK: usize = 8;
        let (ns, ne) = (self.f.num_switches(), self.f.end_ports.len());
        let wave = CHUNK * 8 * rayon::current_num_threads().max(1);
        let sources = self.slot_switch.len() as u64;
        let ends = self.end_sw.iter().filter(|&&t| t != NONE).count() as u64;
        for lo in (0..ns).step_by(wave) {
            // The tables' size projected from the sources walked so far (their hops per
            // source for the rest), before each wave allocates more.
            let done = self
                .slot_switch
                .iter()
                .filter(|&&s| (s as usize) < lo)
                .count() as u64;
            if let Some(hops) = (self.paths.total_hops() as u64 * sources).checked_div(done) {
                self.check_size(sources * ends, hops)?;
                // A base longer than the distances (Up*/Down* on a torus: a third more)
                // would otherwise double the arena, and copy it, as it fills: taken once,
                // with an eighth to spare for the projection's error (each copy of an arena
                // of gigabytes costs seconds, and an allocator may keep the old one mapped
                // for a while).
                let h = hops as usize;
                if h > self.paths.hops.capacity() {
                    let room = (h / 4).min(crate::fault::paths::HEADROOM_HOPS) + 4096;
                    self.paths.reserve_hops_total(h + h / 8 + room);
                }
            }
            let hi = (lo + wave).min(ns);
            let starts: Vec<usize> = (lo..hi).step_by(CHUNK).collect();
            let walked: Vec<Result<BasePaths, RftrError>> = starts
                .par_iter()
                .map(|&a| self.walk_base_paths(a as u32..(a + CHUNK).min(hi) as u32))
                .collect();
            for w in walked {
                let w = w?;
                let mut at = 0;
                for &(s, e, len) in &w.paths {
                    let slot = self.slot_of[s as usize] as usize;
                    if len == SAME {
                        self.sel[slot * ne + e as usize] = SAME;
                        continue;
                    }
                    let hops = &w.hops[at..at + len as usize];
                    at += len as usize;
                    self.sel[slot * ne + e as usize] = self.paths.push_base(s, e, hops);
                }
            }
        }
        self.check_size(sources * ends, self.paths.total_hops() as u64)
    }

    /// Refuses tables of `paths` base paths and `hops` hops in all that would pass the
    /// memory limit (`RftrConfig::memory_limit`) or the hop count a table can index.
    fn check_size(&self, paths: u64, hops: u64) -> Result<(), RftrError> {
        let bytes = self.table_bytes(paths, hops);
        let limit = self.cfg.memory_limit;
        // (with room for repairs: path ranges are u32 offsets)
        let indexable = hops <= (u32::MAX / 2) as u64;
        if !indexable || limit.is_some_and(|l| bytes > l) {
            return Err(RftrError::TooLarge {
                paths,
                hops,
                bytes,
                limit: if indexable { limit } else { None },
            });
        }
        Ok(())
    }

    /// About how many bytes the reachability tables of `paths` base paths of `hops` hops
    /// take once built: per hop its channel, its entry in the channel index and (as on a
    /// torus, the most seen) a sixth of a 24-byte trie node; per path 18 bytes of arrays
    /// and 4 of selection; the path-SL table, the prefix rows and the tries' per-switch
    /// lists, whose sizes are known; the room kept for repairs.
    pub(super) fn table_bytes(&self, paths: u64, hops: u64) -> u64 {
        let ns = self.f.num_switches() as u64;
        let sources = self.slot_switch.len() as u64;
        let path_sl = match &self.routing.path_sl {
            PathSl::PerPair { sl, .. } => sl.len() as u64,
            _ => 0,
        };
        let rows = sources * ns * (self.ncls as u64 + 1) * 8;
        let trie_lists = sources * (ns * 8 + 64 * 24);
        let room = 1024 * 22 + 4096 * 4;
        // The kept base-LID walks: 4 bytes per (end port, switch).
        let walks = self.f.end_ports.len() as u64 * ns * 4;
        hops * 13
            + paths * 22
            + path_sl
            + rows
            + trie_lists
            + room
            + walks
            + 2 * self.by_lid.len() as u64
    }

    /// The base paths of the switches with end ports in `range` to every end port:
    /// `(switch, end, hops)` with `SAME` for an end port on the switch itself; a path that
    /// breaks the turn rule is the error. (A path that does not arrive is no path.)
    fn walk_base_paths(&self, range: std::ops::Range<u32>) -> Result<BasePaths, RftrError> {
        let f = self.f;
        let mut out = BasePaths::default();
        let mut buf = Vec::new();
        for s in range {
            let slot = self.slot_of[s as usize];
            if slot == NONE {
                // A switch without end ports sources no traffic: its paths would be no
                // source's prefix, and suffixes are read from the tables.
                continue;
            }
            for e in 0..f.end_ports.len() as u32 {
                let t = self.end_sw[e as usize];
                if t == NONE {
                    continue;
                }
                if t == s {
                    out.paths.push((s, e, SAME));
                    continue;
                }
                let lid = f.port(f.end_ports[e as usize]).lid;
                buf.clear();
                if !self.walk_switch_major(s, e, lid, &mut buf) {
                    continue;
                }
                for w in buf.windows(2) {
                    if !self.rule.legal(f, w[0], w[1]) {
                        let at = f.port(f.channel_dst(w[0])).node;
                        return Err(RftrError::BaseBreaksRule {
                            rule: self.rule.name(),
                            at: f.node(at).name.clone(),
                            from: f.node(f.switches[s as usize]).name.clone(),
                            lid,
                        });
                    }
                }
                out.paths.push((s, e, buf.len() as u32));
                out.hops.extend_from_slice(&buf);
            }
        }
        Ok(out)
    }

    /// Reserves the path store for the base paths (one per switch and end port, about as
    /// long as the fault-free distance), so that filling it does not grow and copy arrays
    /// of hundreds of MB on large fabrics. Capacity only: pages are mapped when written.
    /// Refuses tables that the fault-free distances already show too large
    /// (`check_size`): the base paths are at least that long.
    pub(super) fn reserve_base_paths(&mut self) -> Result<(), RftrError> {
        let ns = self.f.num_switches();
        let mut ends_on = vec![0u64; ns];
        for &t in &self.end_sw {
            if t != NONE {
                ends_on[t as usize] += 1;
            }
        }
        let paths = self.slot_switch.len() * self.end_sw.iter().filter(|&&t| t != NONE).count();
        // Hops: the fault-free distances when known (a base path may be longer: the
        // arrays grow as usual then).
        let d: u64 = if self.sdist.is_empty() {
            0
        } else {
            self.sdist
                .chunks(ns)
                .enumerate()
                .filter(|&(s, _)| self.slot_of[s] != NONE)
                .map(|(_, row)| {
                    row.iter()
                        .zip(&ends_on)
                        .filter(|(&d, _)| d != FAR)
                        .map(|(&d, &n)| d as u64 * n)
                        .sum::<u64>()
                })
                .sum()
        };
        self.check_size(paths as u64, d)?;
        let hops = (d + d / 8) as usize;
        // with the headroom `PathStore::reserve_headroom` adds after them
        use crate::fault::paths::{HEADROOM_HOPS, HEADROOM_PATHS};
        self.paths.reserve(
            paths + (paths / 4).min(HEADROOM_PATHS) + 1024,
            hops + (hops / 4).min(HEADROOM_HOPS) + 4096,
        );
        Ok(())
    }

    /// Fills the suffix tables' pool with written buffers for a repair (a few per LID
    /// offset: tables go back to the pool after each destination, `end_group`), so that the first repair finds its memory mapped instead of
    /// faulting fresh pages in. (Prefix tables are kept, not pooled: `pre_tab`.)
    pub(super) fn warm_pools(&mut self) {
        let ns = self.f.num_switches();
        // The lists of a fault's start and the bookkeeping it leaves, mapped for a fault
        // that moves 32 (end, switch) pairs per switch (a link of a 16x16x8 torus moves up
        // to about 18); a larger one grows them.
        let n = ns * 32;
        self.fault_bufs = FaultBufs {
            behind: mapped(n, (0, 0)),
            hit: mapped(2 * n, 0),
            pairs: mapped(n, (0, 0, 0, 0)),
        };
        self.walks_forgotten = mapped(n, (0, 0));
        self.pending.map(n);
        let dests = self.f.end_ports.len().min(4 << self.lmc);
        self.suf_pool = (0..dests)
            .map(|_| {
                let mut st = SuffixTable::default();
                st.reset(ns);
                st
            })
            .collect();
    }
}
