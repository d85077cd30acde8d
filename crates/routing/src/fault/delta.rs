//! The delta a subnet manager pushes after a repair: changed LFT entries (counted in the
//! 64-LID blocks that LinearForwardingTable MADs carry), changed SL2VL entries, and the new
//! (DLID, SL) of every affected source end port.

use crate::tables::update::lft_block;
use fabric::{Lid, SwitchIdx};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Delta {
    /// (switch index, LID) → (old port, new port); first old and last new are kept.
    pub lft: BTreeMap<(u32, Lid), (u8, u8)>,
    /// (switch index, in port, out port, SL) → (old VL, new VL).
    pub sl2vl: BTreeMap<(u32, u8, u8, u8), (u8, u8)>,
    /// (source end port, destination end port) → (new DLID, SL).
    pub sources: BTreeMap<(u32, u32), (Lid, u8)>,
}

impl Delta {
    pub fn lft_change(&mut self, sw: SwitchIdx, lid: Lid, old: u8, new: u8) {
        self.lft
            .entry((sw.0, lid))
            .and_modify(|e| e.1 = new)
            .or_insert((old, new));
    }
    pub fn sl2vl_change(&mut self, sw: SwitchIdx, inp: u8, out: u8, sl: u8, old: u8, new: u8) {
        self.sl2vl
            .entry((sw.0, inp, out, sl))
            .and_modify(|e| e.1 = new)
            .or_insert((old, new));
    }
    pub fn source_change(&mut self, src: u32, dst: u32, dlid: Lid, sl: u8) {
        self.sources.insert((src, dst), (dlid, sl));
    }
    /// Entries that really differ from the start (a change undone later does not count).
    pub fn lft_entries(&self) -> usize {
        self.lft.values().filter(|(o, n)| o != n).count()
    }
    /// Distinct (switch, 64-LID block) pairs holding a changed entry.
    pub fn lft_blocks(&self) -> usize {
        let mut blocks: Vec<(u32, u16)> = self
            .lft
            .iter()
            .filter(|(_, (o, n))| o != n)
            .map(|(&(sw, lid), _)| (sw, lft_block(lid)))
            .collect();
        blocks.dedup();
        blocks.len()
    }
    /// How many switches have at least one changed LFT entry.
    pub fn switches_touched(&self) -> usize {
        self.touched_switches().len()
    }
    /// The switches with at least one changed LFT entry, ascending.
    pub fn touched_switches(&self) -> Vec<u32> {
        let mut s: Vec<u32> = self
            .lft
            .iter()
            .filter(|(_, (o, n))| o != n)
            .map(|(&(sw, _), _)| sw)
            .collect();
        s.dedup();
        s
    }
    pub fn sl2vl_entries(&self) -> usize {
        self.sl2vl.values().filter(|(o, n)| o != n).count()
    }
    /// Summary counts for reports.
    pub fn counts(&self) -> DeltaCounts {
        DeltaCounts {
            lft_entries: self.lft_entries(),
            lft_blocks: self.lft_blocks(),
            switches: self.switches_touched(),
            sl2vl_entries: self.sl2vl_entries(),
            source_updates: self.sources.len(),
        }
    }
}

/// Sizes of a delta.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeltaCounts {
    pub lft_entries: usize,
    pub lft_blocks: usize,
    pub switches: usize,
    pub sl2vl_entries: usize,
    pub source_updates: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_undo() {
        let mut d = Delta::default();
        d.lft_change(SwitchIdx(0), 1, 255, 3);
        d.lft_change(SwitchIdx(0), 63, 255, 3);
        d.lft_change(SwitchIdx(0), 64, 255, 3);
        d.lft_change(SwitchIdx(1), 5, 2, 4);
        d.lft_change(SwitchIdx(1), 5, 4, 2); // undone
        assert_eq!(d.lft_entries(), 3);
        assert_eq!(d.lft_blocks(), 2);
        assert_eq!(d.switches_touched(), 1);
    }
}
