//! Diagnostics shared by the readers: capped warnings, where things were read, and duplicate
//! detection for GUIDs and LIDs with the line of each first claim.

use crate::model::{Lid, NodeId, MAX_LMC, MAX_UNICAST_LID};
use rustc_hash::FxHashMap;

// Diagnostics

/// Warnings with a cap so a huge damaged file does not produce a huge list.
#[derive(Debug, Default)]
pub(crate) struct Warnings {
    list: Vec<String>,
    suppressed: usize,
}

impl Warnings {
    const CAP: usize = 200;
    pub fn push(&mut self, msg: String) {
        if self.list.len() < Self::CAP {
            self.list.push(msg);
        } else {
            self.suppressed += 1;
        }
    }
    pub fn finish(mut self) -> Vec<String> {
        if self.suppressed > 0 {
            self.list
                .push(format!("… and {} more warnings", self.suppressed));
        }
        self.list
    }
}

/// Where something was read: index into a file-name table and 1-based line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Loc {
    pub file: u32,
    pub line: u32,
}

impl Loc {
    pub fn new(file: usize, line: usize) -> Loc {
        Loc {
            file: file as u32,
            line: u32::try_from(line).unwrap_or(u32::MAX),
        }
    }
}

/// Who owns a GUID (node GUID or port GUID) and where it was first read.
#[derive(Debug, Default)]
pub(crate) struct GuidTable {
    map: FxHashMap<u64, (NodeId, Loc)>,
}

impl GuidTable {
    /// Claims `guid` for node `n`; the same node may claim a GUID several times (a switch's
    /// port-0 GUID usually equals its node GUID). Returns the earlier claimant on conflict.
    pub fn claim(&mut self, guid: u64, n: NodeId, at: Loc) -> Result<(), (NodeId, Loc)> {
        if guid == 0 {
            return Ok(());
        }
        match self.map.get(&guid) {
            Some(&(o, l)) if o != n => Err((o, l)),
            Some(_) => Ok(()),
            None => {
                self.map.insert(guid, (n, at));
                Ok(())
            }
        }
    }
}

/// Which port claimed each unicast LID (with its LMC range) and where.
#[derive(Debug, Default)]
pub(crate) struct LidTable {
    owner: Vec<(u32, u8, Loc)>,
}

impl LidTable {
    const FREE: u32 = u32::MAX;
    /// Claims `lid .. lid + 2^lmc` for `(n, port)`. Errors name the earlier owner. The LID
    /// range itself must already be validated (unicast, LMC ≤ 7).
    pub fn claim(
        &mut self,
        lid: Lid,
        lmc: u8,
        n: NodeId,
        port: u8,
        at: Loc,
    ) -> Result<(), (u32, u8, Loc, Lid)> {
        if lid == 0 || lid > MAX_UNICAST_LID || lmc > MAX_LMC {
            return Ok(());
        }
        let end = (lid as usize + (1usize << lmc)).min(MAX_UNICAST_LID as usize + 1);
        if self.owner.len() < end {
            self.owner.resize(end, (Self::FREE, 0, Loc::default()));
        }
        for l in lid as usize..end {
            let o = self.owner[l];
            if o.0 != Self::FREE && (o.0 != n.0 || o.1 != port) {
                return Err((o.0, o.1, o.2, l as Lid));
            }
        }
        for o in &mut self.owner[lid as usize..end] {
            *o = (n.0, port, at);
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lid_table_reports_the_first_owner() {
        let mut t = LidTable::default();
        let at = Loc::new(0, 7);
        assert!(t.claim(4, 2, NodeId(1), 1, at).is_ok()); // 4..=7
        assert!(t.claim(4, 2, NodeId(1), 1, at).is_ok()); // same port again
        assert_eq!(
            t.claim(6, 0, NodeId(2), 1, Loc::new(0, 9)),
            Err((1, 1, at, 6))
        );
        assert!(t.claim(8, 0, NodeId(2), 1, at).is_ok());
        assert!(
            t.claim(MAX_UNICAST_LID + 1, 0, NodeId(3), 1, at).is_ok(),
            "ignored, never panics"
        );
    }
}
