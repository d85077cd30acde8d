//! Multicast: groups, their spanning trees, the multicast forwarding tables (MFTs) a subnet
//! manager programs, and the independent check of those tables.
//!
//! **Model.** A [`Group`] is an MLID (0xC000–0xFFFE), an optional MGID, the SL its packets
//! carry and its members: end ports that are full members (they send and receive) or
//! send-only members (they send and receive nothing). An [`Mfts`] holds, per group, the port
//! mask of every switch in its tree. A switch forwards a multicast packet to every port of
//! its mask except the one it arrived on (IBA 18.2.4.3.3), so a mask set that is a tree —
//! every tree edge in the masks at both ends, every receiving member's port at its switch —
//! delivers one copy to every receiver from any sender and loops nowhere.
//!
//! **Jobs, one per file:** [`groups`] reads the group file (`route --mcast FILE`) and makes
//! the IPoIB broadcast group; [`tree`] routes the trees (root, branches, load spread across
//! groups); [`repair`] mends the trees a fault cuts; [`check`] walks the MFTs from every sender and adds their channel dependencies
//! to the unicast CDG; [`own_vl`] finds multicast an SL and a VL where it closes no loop.
//! `opensm::mcfdbs` writes and reads OpenSM's `opensm.mcfdbs`.
//!
//! No I/O; deterministic for a given fabric, mask and group list.

pub mod check;
pub mod groups;
pub mod own_vl;
pub mod repair;
pub mod tree;

pub use check::{check_mcast, mcast_cycles, McastCheck, McastIssue};
pub use groups::{ipoib_group, parse_groups, GroupError};
pub use own_vl::{candidate_vls, free_sl, map_sl};
pub use repair::{repair_trees, TreeRepair};
pub use tree::{
    engine_up_down_rule, route_groups, route_groups_with, GroupStats, McastRouting, OtherTrees,
    TreeCache, TreeRule,
};

use fabric::{Lid, PortId};

/// The first multicast LID.
pub const MLID_FIRST: Lid = 0xC000;
/// The last multicast LID a group may take (0xFFFF is the permissive LID).
pub const MLID_LAST: Lid = 0xFFFE;
use crate::tables::update::{mft_block, mft_position, Update};
pub use crate::tables::update::{MFT_BLOCK, MFT_POSITION_PORTS};

/// A member of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Member {
    pub port: PortId,
    /// Full member (sends and receives); `false`: send-only.
    pub full: bool,
}

/// A multicast group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub mlid: Lid,
    pub mgid: Option<u128>,
    pub sl: u8,
    /// Sorted by port, each port once.
    pub members: Vec<Member>,
}

impl Group {
    /// The members that receive (full members).
    pub fn receivers(&self) -> impl Iterator<Item = PortId> + '_ {
        self.members.iter().filter(|m| m.full).map(|m| m.port)
    }
}

/// A switch's port mask for one MLID: ports 0..=255.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PortMask(pub [u64; 4]);

impl PortMask {
    #[inline]
    pub fn set(&mut self, p: u8) {
        self.0[p as usize / 64] |= 1 << (p % 64);
    }
    #[inline]
    pub fn has(&self, p: u8) -> bool {
        self.0[p as usize / 64] >> (p % 64) & 1 == 1
    }
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    pub fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }
    /// The ports set, ascending.
    pub fn ports(&self) -> impl Iterator<Item = u8> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &bits)| {
            let mut b = bits;
            std::iter::from_fn(move || {
                (b != 0).then(|| {
                    let i = b.trailing_zeros();
                    b &= b - 1;
                    (w as u32 * 64 + i) as u8
                })
            })
        })
    }
}

/// One group's MFT entries: the mask of every switch (index) its tree reaches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupMft {
    pub mlid: Lid,
    pub sl: u8,
    /// Sorted by switch index; no empty mask.
    pub switches: Vec<(u32, PortMask)>,
}

impl GroupMft {
    /// The mask of switch `s` (empty when the tree does not reach it).
    pub fn mask(&self, s: u32) -> PortMask {
        self.switches
            .binary_search_by_key(&s, |e| e.0)
            .map(|i| self.switches[i].1)
            .unwrap_or_default()
    }
}

/// The multicast forwarding tables of a fabric: one entry per MLID, sorted by MLID.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mfts {
    pub groups: Vec<GroupMft>,
}

impl Mfts {
    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.switches.is_empty())
    }
    /// The entry of `mlid`.
    pub fn group(&self, mlid: Lid) -> Option<&GroupMft> {
        self.groups
            .binary_search_by_key(&mlid, |g| g.mlid)
            .ok()
            .map(|i| &self.groups[i])
    }
    /// Per switch index, its (MLID, mask) entries ascending by MLID.
    pub fn by_switch(&self, num_switches: usize) -> Vec<Vec<(Lid, PortMask)>> {
        let mut v = vec![Vec::new(); num_switches];
        for g in &self.groups {
            for &(s, m) in &g.switches {
                if let Some(e) = v.get_mut(s as usize) {
                    e.push((g.mlid, m));
                }
            }
        }
        v
    }
    /// The MFT blocks a switch manager writes: (switch, MLID block, port position) triples
    /// with a non-zero 16-port mask in some MLID of the block, as the SM programs them.
    pub fn blocks(&self, num_switches: usize) -> usize {
        self.updates(num_switches).len()
    }

    /// Every MFT update that writes these tables on switches that hold nothing: each (switch,
    /// block, position) with a port in some MLID of the block, sorted.
    pub fn updates(&self, num_switches: usize) -> std::collections::BTreeSet<Update> {
        let mut s = std::collections::BTreeSet::new();
        for g in &self.groups {
            for &(sw, m) in &g.switches {
                if (sw as usize) < num_switches {
                    s.extend(m.ports().map(|p| Update::Mft {
                        sw,
                        block: mft_block(g.mlid),
                        position: mft_position(p),
                    }));
                }
            }
        }
        s
    }
}

/// One MFT entry that differs between two sets of tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MftChange {
    pub switch: u32,
    pub mlid: Lid,
    pub old: PortMask,
    pub new: PortMask,
}

impl MftChange {
    /// The MFT blocks the change touches.
    pub fn blocks(&self) -> impl Iterator<Item = Update> + '_ {
        let block = mft_block(self.mlid);
        (0..256 / MFT_POSITION_PORTS).filter_map(move |pos| {
            let differs = (0..MFT_POSITION_PORTS).any(|i| {
                let p = (pos * MFT_POSITION_PORTS + i) as u8;
                self.old.has(p) != self.new.has(p)
            });
            differs.then_some(Update::Mft {
                sw: self.switch,
                block,
                position: pos as u8,
            })
        })
    }
}

/// The distinct MFT blocks a list of changes touches.
pub fn mft_blocks(changes: &[MftChange]) -> usize {
    let set: std::collections::BTreeSet<Update> = changes.iter().flat_map(|c| c.blocks()).collect();
    set.len()
}

impl Mfts {
    /// Every (switch, MLID) entry whose mask differs from `other`'s (an absent entry is an
    /// empty mask), by MLID then switch.
    pub fn diff(&self, other: &Mfts) -> Vec<MftChange> {
        let mut mlids: Vec<Lid> = self
            .groups
            .iter()
            .chain(&other.groups)
            .map(|g| g.mlid)
            .collect();
        mlids.sort_unstable();
        mlids.dedup();
        let empty = GroupMft::default();
        let mut out = Vec::new();
        for mlid in mlids {
            let a = self.group(mlid).unwrap_or(&empty);
            let b = other.group(mlid).unwrap_or(&empty);
            let mut sws: Vec<u32> = a.switches.iter().chain(&b.switches).map(|e| e.0).collect();
            sws.sort_unstable();
            sws.dedup();
            for s in sws {
                let (old, new) = (a.mask(s), b.mask(s));
                if old != new {
                    out.push(MftChange {
                        switch: s,
                        mlid,
                        old,
                        new,
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_masks_hold_every_port() {
        let mut m = PortMask::default();
        for p in [0u8, 1, 63, 64, 200, 255] {
            m.set(p);
        }
        assert_eq!(m.ports().collect::<Vec<_>>(), vec![0, 1, 63, 64, 200, 255]);
        assert_eq!(m.count(), 6);
        assert!(!m.has(2));
    }
}
