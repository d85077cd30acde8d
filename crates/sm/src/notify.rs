//! Event subscriptions and the Reports that follow them: hosts subscribe with an SA Set of
//! InformInfo; after a repair every subscribed source whose (DLID, SL) toward a
//! destination changed gets a Report of trap 69 ("RePath") naming that destination's GID,
//! so it asks for a new PathRecord instead of polling; end ports cut off or back get trap
//! 65 or 64 ("GID out of / in service") at every subscriber whose subscription covers them.
//!
//! Reports are sent once, without waiting for the subscriber's ReportResp (whose arrival is
//! counted among the pipeline's strays) and without resending.

use crate::live::Live;
use crate::SmError;
use fabric::{Fabric, PortId};
use mad::inform::{self, notice_type, trap, InformInfo, SaNotice, INFORM_INFO_LEN};
use mad::sa::{sa_status, Gid, DEFAULT_GID_PREFIX};
use mad::{Address, Transport};
use std::collections::BTreeSet;

/// Most subscriptions kept; more are refused with `ERR_NO_RESOURCES`.
pub const MAX_SUBSCRIPTIONS: usize = 4096;

/// One subscription: who gets the Reports (the LID it came from, the QP it named) and what
/// it asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subscription {
    pub lid: u16,
    pub qpn: u32,
    pub info: InformInfo,
}

/// Every subscription the SA holds.
#[derive(Clone, Debug, Default)]
pub struct Subscriptions {
    pub list: Vec<Subscription>,
    next_tid: u64,
}

impl Subscriptions {
    /// An SA Set of InformInfo (the 36 bytes of the request's data) from LID `from`:
    /// subscribes or unsubscribes; returns the MAD status and the InformInfo to echo.
    pub fn set(&mut self, from: u16, data: &[u8]) -> (u16, [u8; INFORM_INFO_LEN]) {
        let mut b = [0u8; INFORM_INFO_LEN];
        b.copy_from_slice(&data[..INFORM_INFO_LEN]);
        let info = InformInfo::decode(&b);
        if !info.is_generic {
            // Vendor notices: none are produced here.
            return (sa_status::REQ_INVALID, b);
        }
        let same = |s: &Subscription| {
            s.lid == from
                && s.info.trap_number == info.trap_number
                && s.info.kind == info.kind
                && s.info.gid == info.gid
                && s.info.lid_begin == info.lid_begin
                && s.info.lid_end == info.lid_end
        };
        if info.subscribe {
            if !self.list.iter().any(same) {
                if self.list.len() >= MAX_SUBSCRIPTIONS {
                    return (sa_status::NO_RESOURCES, b);
                }
                self.list.push(Subscription {
                    lid: from,
                    qpn: info.qpn,
                    info,
                });
            }
        } else {
            let n = self.list.len();
            self.list.retain(|s| !same(s));
            if self.list.len() == n {
                return (sa_status::NO_RECORDS, b);
            }
        }
        (0, b)
    }

    fn tid(&mut self) -> u64 {
        self.next_tid += 1;
        // Apart from the SMPs' TIDs (the low 32 bits count from 1).
        (0x5245_504f << 32) | self.next_tid
    }
}

/// A port's GID (default prefix, its GUID as the SA shows it).
fn gid(f: &Fabric, p: PortId) -> Gid {
    Gid {
        prefix: DEFAULT_GID_PREFIX,
        guid: f.shown_port_guid(p),
    }
}

/// A port's LIDs: base and last of its LMC range.
fn lids(f: &Fabric, p: PortId) -> (u16, u16) {
    let port = f.port(p);
    (port.lid, port.lid + ((1u16 << port.lmc) - 1))
}

impl<T: Transport> Live<'_, T> {
    /// Sends the Reports for what changed: trap 69 to every subscribed source of
    /// `moved` (pairs of end-port indices whose (DLID, SL) changed), about the destination;
    /// trap 65 about each port of `gone` and 64 about each of `back`, to every subscriber
    /// covering them. Returns the Reports sent.
    pub(crate) fn notify(
        &mut self,
        moved: &[(u32, u32)],
        gone: &[PortId],
        back: &[PortId],
    ) -> Result<u64, SmError> {
        if self.sa.subs.list.is_empty() {
            return Ok(0);
        }
        let f = self.f;
        let sm_gid = gid(f, self.sm_port);
        let mut out: BTreeSet<(u16, u32, u16, PortId)> = BTreeSet::new();
        for &(s, d) in moved {
            let (src, dst) = (f.end_ports[s as usize], f.end_ports[d as usize]);
            let (lo, hi) = lids(f, src);
            for sub in &self.sa.subs.list {
                if (lo..=hi).contains(&sub.lid)
                    && sub
                        .info
                        .covers(notice_type::INFO, trap::REPATH, gid(f, dst), lids(f, dst))
                {
                    out.insert((sub.lid, sub.qpn, trap::REPATH, dst));
                }
            }
        }
        for (ports, t) in [
            (gone, trap::GID_OUT_OF_SERVICE),
            (back, trap::GID_IN_SERVICE),
        ] {
            for &p in ports {
                for sub in &self.sa.subs.list {
                    if sub
                        .info
                        .covers(notice_type::SUBN_MGMT, t, gid(f, p), lids(f, p))
                    {
                        out.insert((sub.lid, sub.qpn, t, p));
                    }
                }
            }
        }
        let mut sent = 0;
        for (lid, qpn, t, about) in out {
            // A subscriber behind a port that is gone cannot be reached.
            if gone
                .iter()
                .any(|&p| (lids(f, p).0..=lids(f, p).1).contains(&lid))
            {
                continue;
            }
            let notice = SaNotice {
                kind: if t == trap::REPATH {
                    notice_type::INFO
                } else {
                    notice_type::SUBN_MGMT
                },
                trap_number: t,
                issuer_lid: self.sm_lid,
                issuer_gid: sm_gid,
                about: gid(f, about),
            };
            let tid = self.sa.subs.tid();
            self.pipe
                .answer(&inform::report(&notice, tid), Address { lid, qpn })?;
            sent += 1;
        }
        Ok(sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(subs: &mut Subscriptions, from: u16, subscribe: bool, trap_number: u16) -> u16 {
        subs.set(
            from,
            &InformInfo::generic(subscribe, trap_number, 1).encode(),
        )
        .0
    }

    #[test]
    fn subscriptions_are_kept_once_and_bounded() {
        let mut subs = Subscriptions::default();
        assert_eq!(set(&mut subs, 5, true, trap::REPATH), 0);
        assert_eq!(set(&mut subs, 5, true, trap::REPATH), 0);
        assert_eq!(subs.list.len(), 1, "the same subscription twice is one");
        assert_eq!(set(&mut subs, 5, true, trap::GID_OUT_OF_SERVICE), 0);
        assert_eq!(set(&mut subs, 5, false, trap::REPATH), 0);
        assert_eq!(subs.list.len(), 1);
        assert_eq!(
            set(&mut subs, 6, false, trap::REPATH),
            sa_status::NO_RECORDS
        );
        // A flood: refused once full, and the memory stays bounded.
        for lid in 0..(MAX_SUBSCRIPTIONS as u16 + 10) {
            let st = set(&mut subs, 100 + lid, true, trap::ALL);
            assert_eq!(
                st != 0,
                subs.list.len() == MAX_SUBSCRIPTIONS && st == sa_status::NO_RESOURCES
            );
        }
        assert_eq!(subs.list.len(), MAX_SUBSCRIPTIONS);
    }
}
