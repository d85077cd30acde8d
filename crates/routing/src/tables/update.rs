//! The units a subnet manager writes tables in, and the one place that compares and copies
//! tables by them. `diff`, RFTR's delta, full reconfiguration's figures, the simulator's SM
//! and `fabroute sm`'s pushes and read-backs all build on this file:
//!
//! - a LinearForwardingTable SMP carries one block of [`LFT_BLOCK`] LIDs of one switch;
//! - an SLtoVLMappingTable SMP carries one (input port, output port) row of 16 SLs;
//! - a MulticastForwardingTable SMP carries one block of [`MFT_BLOCK`] MLIDs at one position
//!   of [`MFT_POSITION_PORTS`] ports of one switch.
//!
//! [`plan`] lists the updates that move the live switches from one routing to another;
//! [`apply`] performs one of them on a copy of the tables.

use super::{Routing, NUM_SLS};
use fabric::{Fabric, Lid, NodeId, NodeKind, SwitchIdx, MAX_UNICAST_LID};
use serde::Serialize;
use std::ops::Range;

/// LIDs per LinearForwardingTable block.
pub const LFT_BLOCK: usize = 64;
/// MLIDs per MulticastForwardingTable block.
pub const MFT_BLOCK: usize = 32;
/// Ports per MulticastForwardingTable position (a 16-bit port mask per MLID).
pub const MFT_POSITION_PORTS: usize = 16;
/// The first multicast LID: MFT block 0 starts there.
const MLID_BASE: usize = MAX_UNICAST_LID as usize + 1;

/// One SMP's worth of tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Update {
    /// LFT block `block` (LIDs `64·block ..`) of switch index `sw`.
    Lft { sw: u32, block: u16 },
    /// The SL-to-VL row (`inp`, `out`) of a node: on a switch any input (0 = its management
    /// port) and output; on a CA or router input 0 and the port itself as output.
    Sl2Vl { node: NodeId, inp: u8, out: u8 },
    /// MFT block `block` (MLIDs `0xC000 + 32·block ..`), ports `16·position ..` of switch
    /// index `sw`.
    Mft { sw: u32, block: u16, position: u8 },
}

/// The LFT block holding `lid`.
#[inline]
pub fn lft_block(lid: Lid) -> u16 {
    lid / LFT_BLOCK as u16
}

/// The LIDs of LFT block `block` within tables of `stride` entries (LIDs `0..stride`).
#[inline]
pub fn lft_block_lids(block: usize, stride: usize) -> Range<usize> {
    let lo = (block * LFT_BLOCK).min(stride);
    lo..((block + 1) * LFT_BLOCK).min(stride)
}

/// How many LFT blocks hold LIDs `0..stride`.
#[inline]
pub fn lft_block_count(stride: usize) -> usize {
    stride.div_ceil(LFT_BLOCK)
}

/// The blocks in which two LFT rows differ, each with how many of its entries differ. Rows of
/// different lengths are compared over the shorter.
pub fn lft_block_changes<'a>(a: &'a [u8], b: &'a [u8]) -> impl Iterator<Item = (u16, usize)> + 'a {
    a.chunks(LFT_BLOCK)
        .zip(b.chunks(LFT_BLOCK))
        .enumerate()
        .filter_map(|(k, (x, y))| {
            let n = x.iter().zip(y).filter(|(p, q)| p != q).count();
            (n > 0).then_some((k as u16, n))
        })
}

/// True when LFT block `block` of switch `sw` differs between `old` and `new` (over
/// the LIDs both tables hold).
pub fn lft_block_differs(old: &Routing, new: &Routing, sw: SwitchIdx, block: usize) -> bool {
    let r = lft_block_lids(block, old.stride().min(new.stride()));
    old.lft_of(sw)[r.clone()] != new.lft_of(sw)[r]
}

/// The SL-to-VL rows a subnet manager sets on node `n`: on a switch every (input, output)
/// with input `0..=P`, output `1..=P` and the two different (a packet never leaves by the
/// port it came in); on a CA or router `(0, port)` for each port.
pub fn sl2vl_rows(f: &Fabric, n: NodeId) -> impl Iterator<Item = (u8, u8)> {
    let node = f.node(n);
    let (np, switch) = (node.nports, node.kind == NodeKind::Switch);
    let ins = if switch { 0..=np } else { 0..=0 };
    ins.flat_map(move |i| {
        (1..=np)
            .filter(move |&o| o != i || !switch)
            .map(move |o| (i, o))
    })
}

/// Row (`inp`, `out`) of node `n`'s SL-to-VL table: the VL of each SL.
pub fn sl2vl_row(r: &Routing, n: NodeId, inp: u8, out: u8) -> [u8; NUM_SLS] {
    std::array::from_fn(|sl| r.sl2vl.vl(n, inp, out, sl as u8))
}

/// True when row (`inp`, `out`) of node `n` differs between `old` and `new`.
pub fn sl2vl_row_differs(old: &Routing, new: &Routing, n: NodeId, inp: u8, out: u8) -> bool {
    (0..NUM_SLS as u8).any(|sl| old.sl2vl.vl(n, inp, out, sl) != new.sl2vl.vl(n, inp, out, sl))
}

/// The MFT block holding multicast LID `mlid` (at or above 0xC000).
#[inline]
pub fn mft_block(mlid: Lid) -> u16 {
    ((mlid as usize).saturating_sub(MLID_BASE) / MFT_BLOCK) as u16
}

/// The MLIDs of MFT block `block`.
#[inline]
pub fn mft_block_mlids(block: usize) -> Range<usize> {
    let lo = MLID_BASE + block * MFT_BLOCK;
    lo..lo + MFT_BLOCK
}

/// The MFT position holding port `port`.
#[inline]
pub fn mft_position(port: u8) -> u8 {
    port / MFT_POSITION_PORTS as u8
}

/// Every update that moves the nodes `live` accepts from `old` to `new`, both tables of `f`:
/// the LFT blocks that differ, by (switch, block), then the SL-to-VL rows that differ, by
/// (node, input, output).
pub fn plan(
    f: &Fabric,
    old: &Routing,
    new: &Routing,
    live: impl Fn(NodeId) -> bool,
) -> Vec<Update> {
    let mut v = Vec::new();
    let stride = old.stride().min(new.stride());
    for s in f.switch_ids() {
        if live(f.switch_node(s)) {
            let (a, b) = (&old.lft_of(s)[..stride], &new.lft_of(s)[..stride]);
            v.extend(lft_block_changes(a, b).map(|(block, _)| Update::Lft { sw: s.0, block }));
        }
    }
    for i in 0..f.nodes.len() {
        let n = NodeId(i as u32);
        if !live(n) || (old.sl2vl.is_identity(n) && new.sl2vl.is_identity(n)) {
            continue;
        }
        for (inp, out) in sl2vl_rows(f, n) {
            if sl2vl_row_differs(old, new, n, inp, out) {
                v.push(Update::Sl2Vl { node: n, inp, out });
            }
        }
    }
    v
}

/// Copies what update `u` carries from `new` into `cur` (tables of one fabric). Returns false for an
/// MFT update: multicast tables are not part of a [`Routing`] (`mcast::Mfts` holds them).
pub fn apply(cur: &mut Routing, new: &Routing, u: Update) -> bool {
    match u {
        Update::Lft { sw, block } => {
            let r = lft_block_lids(block as usize, cur.stride().min(new.stride()));
            let src = &new.lft_of(SwitchIdx(sw))[r.clone()];
            cur.lft_of_mut(SwitchIdx(sw))[r].copy_from_slice(src);
            true
        }
        Update::Sl2Vl { node, inp, out } => {
            for sl in 0..NUM_SLS as u8 {
                let vl = new.sl2vl.vl(node, inp, out, sl);
                if cur.sl2vl.vl(node, inp, out, sl) != vl {
                    cur.sl2vl.set(node, inp, out, sl, vl);
                }
            }
            true
        }
        Update::Mft { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tables::two_switches as two;

    #[test]
    fn block_arithmetic() {
        assert_eq!((lft_block(0), lft_block(63), lft_block(64)), (0, 0, 1));
        assert_eq!(lft_block_lids(2, 131), 128..131);
        assert_eq!(lft_block_lids(3, 131), 131..131);
        assert_eq!(lft_block_count(131), 3);
        assert_eq!(lft_block_count(128), 2);
        assert_eq!(
            (mft_block(0xC000), mft_block(0xC01F), mft_block(0xC020)),
            (0, 0, 1)
        );
        assert_eq!(mft_block_mlids(1), 0xC020..0xC040);
        assert_eq!((mft_position(15), mft_position(16)), (0, 1));
        let (a, mut b) = (vec![1u8; 130], vec![1u8; 130]);
        b[3] = 2;
        b[5] = 2;
        b[129] = 0;
        assert_eq!(
            lft_block_changes(&a, &b).collect::<Vec<_>>(),
            vec![(0, 2), (2, 1)]
        );
    }

    #[test]
    fn rows_a_manager_sets() {
        let f = two();
        let s0 = f.node_by_name("s0").unwrap();
        let h0 = f.node_by_name("h0").unwrap();
        let rows: Vec<_> = sl2vl_rows(&f, s0).collect();
        assert_eq!(rows.len(), 5 * 4 - 4);
        assert!(rows.contains(&(0, 1)) && rows.contains(&(4, 1)) && !rows.contains(&(2, 2)));
        assert_eq!(sl2vl_rows(&f, h0).collect::<Vec<_>>(), vec![(0, 1)]);
    }

    #[test]
    fn plan_then_apply_makes_the_tables_equal() {
        let f = two();
        let old = Routing::empty(&f);
        let mut new = old.clone();
        new.lft_of_mut(SwitchIdx(0))[4] = 4;
        new.lft_of_mut(SwitchIdx(0))[129] = 1;
        new.lft_of_mut(SwitchIdx(1))[2] = 0;
        let (s1, h1) = (f.node_by_name("s1").unwrap(), f.node_by_name("h1").unwrap());
        new.sl2vl.set(s1, 1, 4, 3, 7);
        new.sl2vl.set(h1, 0, 1, 2, 5);
        let p = plan(&f, &old, &new, |_| true);
        assert_eq!(
            p,
            vec![
                Update::Lft { sw: 0, block: 0 },
                Update::Lft { sw: 0, block: 2 },
                Update::Lft { sw: 1, block: 0 },
                Update::Sl2Vl {
                    node: s1,
                    inp: 1,
                    out: 4
                },
                Update::Sl2Vl {
                    node: h1,
                    inp: 0,
                    out: 1
                },
            ]
        );
        // Switch s1 is dead: none of its updates.
        let live = plan(&f, &old, &new, |n| n != s1);
        assert_eq!(live.len(), 3);
        let mut cur = old.clone();
        for &u in &p {
            assert!(apply(&mut cur, &new, u));
            assert!(!plan(&f, &cur, &new, |_| true).contains(&u));
        }
        assert_eq!(cur.lft, new.lft);
        assert!(plan(&f, &cur, &new, |_| true).is_empty());
        let mft = Update::Mft {
            sw: 0,
            block: 0,
            position: 0,
        };
        assert!(!apply(&mut cur, &new, mft));
    }
}
