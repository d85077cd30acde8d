//! What differs between two routings of one fabric, entry by entry: LFT entries (with the
//! 64-LID blocks a subnet manager sends them in, [`crate::tables::LFT_BLOCK`]), SL2VL entries, path SLs.
//! `fabroute diff` prints it; the figures count like RFTR's delta (`fault::Delta`).
//!
//! Both routings must be tables of the same [`Fabric`] (switch indices, end-port indices and
//! LIDs are the fabric's). Compared:
//! - LFTs: every switch, every LID `1..=max` (the larger of the two tables' highest LIDs; an
//!   entry beyond a table is "no route");
//! - SL2VL: on switches the rows (input `0..=P`, output `1..=P`), on CAs and routers the row of
//!   each port (input 0, output = that port) — the rows an SL2VL dump holds;
//! - path SLs: every (source end port, destination LID owned by a port of the fabric).

use crate::tables::update::lft_block;
use crate::tables::{PathSl, Routing, NUM_SLS};
use fabric::SwitchIdx;
use fabric::{Fabric, Lid, NodeId, NO_PORT};
use rayon::prelude::*;

/// One LFT entry that differs (`None`: no route).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LftChange {
    /// Switch index.
    pub sw: u32,
    pub lid: Lid,
    pub old: Option<u8>,
    pub new: Option<u8>,
}

impl LftChange {
    /// The LinearForwardingTable block holding the entry.
    #[inline]
    pub fn block(&self) -> u16 {
        lft_block(self.lid)
    }
}

/// One SL2VL entry that differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sl2VlChange {
    pub node: NodeId,
    pub inp: u8,
    pub out: u8,
    pub sl: u8,
    pub old: u8,
    pub new: u8,
}

/// One path SL that differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PathSlChange {
    /// Source end-port index (into `Fabric::end_ports`).
    pub src: u32,
    pub dlid: Lid,
    pub old: u8,
    pub new: u8,
}

/// Every difference between two routings, each list sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableDiff {
    /// By (switch index, LID).
    pub lft: Vec<LftChange>,
    /// By (node, input port, output port, SL).
    pub sl2vl: Vec<Sl2VlChange>,
    /// By (source, DLID).
    pub path_sl: Vec<PathSlChange>,
}

fn entry(p: u8) -> Option<u8> {
    Some(p).filter(|&p| p != NO_PORT)
}

impl TableDiff {
    /// The differences from `old` to `new`, both tables of `f`.
    pub fn between(f: &Fabric, old: &Routing, new: &Routing) -> TableDiff {
        let max = old.max_lid.max(new.max_lid);
        let lft = (0..f.num_switches() as u32)
            .into_par_iter()
            .map(SwitchIdx)
            .flat_map_iter(|s| {
                (1..=max).filter_map(move |lid| {
                    let (a, b) = (old.out_port_checked(s, lid), new.out_port_checked(s, lid));
                    (a != b).then_some(LftChange {
                        sw: s.0,
                        lid,
                        old: entry(a),
                        new: entry(b),
                    })
                })
            })
            .collect();
        let mut sl2vl = Vec::new();
        for (i, node) in f.nodes.iter().enumerate() {
            let n = NodeId(i as u32);
            if old.sl2vl.is_identity(n) && new.sl2vl.is_identity(n) {
                continue;
            }
            let rows: Vec<(u8, u8)> = if node.kind.is_end() {
                (1..=node.nports).map(|o| (0, o)).collect()
            } else {
                (0..=node.nports)
                    .flat_map(|i| (1..=node.nports).map(move |o| (i, o)))
                    .collect()
            };
            for (inp, out) in rows {
                for sl in 0..NUM_SLS as u8 {
                    let (a, b) = (old.sl2vl.vl(n, inp, out, sl), new.sl2vl.vl(n, inp, out, sl));
                    if a != b {
                        sl2vl.push(Sl2VlChange {
                            node: n,
                            inp,
                            out,
                            sl,
                            old: a,
                            new: b,
                        });
                    }
                }
            }
        }
        TableDiff {
            lft,
            sl2vl,
            path_sl: path_sl_changes(f, &old.path_sl, &new.path_sl),
        }
    }

    /// True when the routings agree everywhere compared.
    pub fn is_empty(&self) -> bool {
        self.lft.is_empty() && self.sl2vl.is_empty() && self.path_sl.is_empty()
    }

    /// The distinct (switch index, block) pairs holding a changed entry, sorted: the
    /// LinearForwardingTable blocks a subnet manager would send.
    pub fn lft_blocks(&self) -> Vec<(u32, u16)> {
        let mut v: Vec<(u32, u16)> = self.lft.iter().map(|c| (c.sw, c.block())).collect();
        v.dedup();
        v
    }

    /// Switches with at least one changed LFT entry.
    pub fn switches_touched(&self) -> usize {
        let mut v: Vec<u32> = self.lft.iter().map(|c| c.sw).collect();
        v.dedup();
        v.len()
    }

    /// Nodes with at least one changed SL2VL entry.
    pub fn sl2vl_nodes(&self) -> usize {
        let mut v: Vec<NodeId> = self.sl2vl.iter().map(|c| c.node).collect();
        v.dedup();
        v.len()
    }
}

/// Every (source end port, owned DLID) whose SL differs. Uniform and per-destination tables
/// are compared without visiting every pair when both sides allow it.
fn path_sl_changes(f: &Fabric, old: &PathSl, new: &PathSl) -> Vec<PathSlChange> {
    if let (PathSl::Uniform(a), PathSl::Uniform(b)) = (old, new) {
        if a == b {
            return Vec::new();
        }
    }
    let lids: Vec<Lid> = (1..f.lid_owner.len())
        .filter(|&l| f.lid_port(l as Lid).is_some())
        .map(|l| l as Lid)
        .collect();
    let per_pair = |s: &PathSl| matches!(s, PathSl::PerPair { .. });
    // Without a per-pair side the SL depends on the destination only: find those first.
    let lids: Vec<Lid> = if per_pair(old) || per_pair(new) {
        lids
    } else {
        lids.into_iter()
            .filter(|&l| old.get(0, l) != new.get(0, l))
            .collect()
    };
    (0..f.end_ports.len() as u32)
        .into_par_iter()
        .flat_map_iter(|src| {
            let lids = &lids;
            lids.iter().filter_map(move |&dlid| {
                let (a, b) = (old.get(src as usize, dlid), new.get(src as usize, dlid));
                (a != b).then_some(PathSlChange {
                    src,
                    dlid,
                    old: a,
                    new: b,
                })
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tables::two_switches as two;

    #[test]
    fn lft_entries_blocks_and_switches() {
        let f = two();
        let a = Routing::empty(&f);
        let mut b = a.clone();
        assert!(TableDiff::between(&f, &a, &b).is_empty());
        b.lft_of_mut(SwitchIdx(0))[4] = 4;
        b.lft_of_mut(SwitchIdx(0))[5] = 4;
        b.lft_of_mut(SwitchIdx(0))[129] = 1;
        b.lft_of_mut(SwitchIdx(1))[128] = 4;
        let d = TableDiff::between(&f, &a, &b);
        let got: Vec<(u32, Lid, Option<u8>, Option<u8>)> =
            d.lft.iter().map(|c| (c.sw, c.lid, c.old, c.new)).collect();
        assert_eq!(
            got,
            vec![
                (0, 4, None, Some(4)),
                (0, 5, None, Some(4)),
                (0, 129, None, Some(1)),
                (1, 128, None, Some(4)),
            ]
        );
        assert_eq!(d.lft_blocks(), vec![(0, 0), (0, 2), (1, 2)]);
        assert_eq!(d.switches_touched(), 2);
        // The other way round: old and new swap.
        let back = TableDiff::between(&f, &b, &a);
        assert_eq!((back.lft[0].old, back.lft[0].new), (Some(4), None));
    }

    #[test]
    fn sl2vl_rows_and_path_sls() {
        let f = two();
        let a = Routing::empty(&f);
        let mut b = a.clone();
        let (s1, h0) = (f.node_by_name("s1").unwrap(), f.node_by_name("h0").unwrap());
        b.sl2vl.set(s1, 1, 4, 3, 7);
        b.sl2vl.set(h0, 0, 1, 2, 5);
        // Only identity values elsewhere: a table made explicit changes nothing else.
        let d = TableDiff::between(&f, &a, &b);
        let got: Vec<(NodeId, u8, u8, u8, u8, u8)> = d
            .sl2vl
            .iter()
            .map(|c| (c.node, c.inp, c.out, c.sl, c.old, c.new))
            .collect();
        assert_eq!(got, vec![(s1, 1, 4, 3, 3, 7), (h0, 0, 1, 2, 2, 5)]);
        assert_eq!(d.sl2vl_nodes(), 2);
        // Per destination: LID 128 of h1 gets SL 1 for every source (2 end ports).
        let mut per = vec![0u8; f.max_lid() as usize + 1];
        per[128] = 1;
        b.path_sl = PathSl::PerDest(per);
        let d = TableDiff::between(&f, &a, &b);
        let got: Vec<(u32, Lid, u8, u8)> = d
            .path_sl
            .iter()
            .map(|c| (c.src, c.dlid, c.old, c.new))
            .collect();
        assert_eq!(got, vec![(0, 128, 0, 1), (1, 128, 0, 1)]);
        // Per pair against uniform: only the pair that differs.
        let stride = f.max_lid() as usize + 1;
        let mut sl = vec![2u8; 2 * stride];
        sl[stride + 5] = 0;
        b.path_sl = PathSl::PerPair { stride, sl };
        let c = TableDiff::between(&f, &b, &{
            let mut u = a.clone();
            u.path_sl = PathSl::Uniform(2);
            u
        });
        let got: Vec<(u32, Lid, u8, u8)> = c
            .path_sl
            .iter()
            .map(|c| (c.src, c.dlid, c.old, c.new))
            .collect();
        assert_eq!(got, vec![(1, 5, 0, 2)]);
    }
}
