//! Other SMs on the subnet and the STANDBY state (IBA 14.4): an SM that finds a master at
//! start stays STANDBY, answers SMInfo as such, polls the master with SMInfo Get, and
//! gives the caller the word when the master goes silent, so that it can take over
//! ([`crate::Live::take_over`]).
//!
//! Other SMs are found as the spec says: every end port whose PortInfo.CapabilityMask has
//! IsSM is asked for its SMInfo. The Get is LID-routed to the LID the port holds (ibsim
//! forwards LID-routed and directed-route SMInfo alike to the SM's client; the answer to a
//! directed-route request would need the return path, which the SM's transport does not
//! build), so an SM on a port without a LID yet — another SM still bringing the subnet
//! up — is not seen.

use crate::discover::Discovery;
use crate::pipe::{Pipe, Req};
use crate::SmError;
use mad::attr::{cap, sm_state, SmInfo};
use mad::{attr_id, Method, Route, Smp, Transport, MAD_SIZE};
use std::time::Duration;

/// Another SM found on the subnet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtherSm {
    /// The node it runs on (its description as discovered).
    pub node: String,
    /// The LID of its port, as the port holds it.
    pub lid: u16,
    /// What it answered.
    pub info: SmInfo,
}

/// Whether an SM of `(priority, guid)` outranks one of `other`: the higher priority, then
/// the lower GUID (IBA 14.4.1.1).
pub fn outranks(me: (u8, u64), other: (u8, u64)) -> bool {
    me.0 > other.0 || (me.0 == other.0 && me.1 < other.1)
}

/// Asks every end port that advertises an SM (other than the SM's own port) for its SMInfo.
/// Ports that do not answer are left out.
pub fn find_sms<T: Transport>(pipe: &mut Pipe<T>, d: &Discovery) -> Result<Vec<OtherSm>, SmError> {
    let f = &d.fabric;
    let mut who = Vec::new();
    let mut reqs = Vec::new();
    for &p in &f.end_ports {
        let pi = &d.port_info[p.idx()];
        if p == d.sm_port || pi.cap_mask() & cap::IS_SM == 0 || pi.lid() == 0 {
            continue;
        }
        reqs.push(Req::get(Route::Lid(pi.lid()), attr_id::SM_INFO, 0));
        who.push((f.node(f.port(p).node).name.clone(), pi.lid()));
    }
    let got = pipe.run(&reqs)?;
    Ok(who
        .into_iter()
        .zip(got)
        .filter_map(|((node, lid), r)| {
            r.ok().map(|s| OtherSm {
                node,
                lid,
                info: SmInfo::decode(&s.data),
            })
        })
        .collect())
}

/// The SM to follow as a standby, if any: a master (the highest-ranked one, should there be
/// several), else a higher-ranked SM that is itself still discovering or standing by.
/// `None`: this SM is to be master.
pub fn master_to_follow(me: (u8, u64), others: &[OtherSm]) -> Option<&OtherSm> {
    let rank = |o: &OtherSm| (o.info.priority, o.info.guid);
    let best = |state: &dyn Fn(u8) -> bool| {
        others
            .iter()
            .filter(|o| state(o.info.state))
            .reduce(|a, b| if outranks(rank(b), rank(a)) { b } else { a })
    };
    if let Some(m) = best(&|s| s == sm_state::MASTER) {
        return Some(m);
    }
    best(&|s| s == sm_state::DISCOVERING || s == sm_state::STANDBY)
        .filter(|o| outranks(rank(o), me))
}

/// Why a standby stops standing by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MasterLost {
    /// No answer to a poll (after the pipeline's retries).
    Silent,
    /// It answered, but no longer as master (it went STANDBY or NOT_ACTIVE).
    NotMaster(u8),
}

/// An SM in the STANDBY state: see the module documentation.
#[derive(Debug)]
pub struct Standby<T> {
    pipe: Pipe<T>,
    me: SmInfo,
    master: OtherSm,
    poll: Duration,
    next_poll: Duration,
    /// Polls the master answered.
    pub polls_answered: u64,
    /// When the master last answered (the transport's clock).
    pub last_answer: Duration,
    /// SMInfo Gets this standby answered.
    pub sm_info_answered: u64,
}

impl<T: Transport> Standby<T> {
    /// Stands by `master`, polling it every `poll`. `me` is this SM's SMInfo (its state is
    /// set to STANDBY).
    pub fn new(pipe: Pipe<T>, me: SmInfo, master: OtherSm, poll: Duration) -> Self {
        let now = pipe.now();
        Standby {
            pipe,
            me: SmInfo {
                state: sm_state::STANDBY,
                ..me
            },
            master,
            poll,
            next_poll: now + poll,
            polls_answered: 0,
            last_answer: now,
            sm_info_answered: 0,
        }
    }

    pub fn pipe_mut(&mut self) -> &mut Pipe<T> {
        &mut self.pipe
    }

    /// How long ago the master last answered a poll (or the standby started).
    pub fn silent_for(&self) -> Duration {
        self.pipe.now().saturating_sub(self.last_answer)
    }

    /// Gives the pipeline back (to discover the fabric again and take over).
    pub fn into_pipe(self) -> Pipe<T> {
        self.pipe
    }

    /// Waits up to `max_wait` (not past the next poll), answering SMInfo Gets as a
    /// standby, then polls the master when the poll is due. `Some` when the master is
    /// lost.
    pub fn step(&mut self, max_wait: Duration) -> Result<Option<MasterLost>, SmError> {
        let now = self.pipe.now();
        let wait = max_wait.min(self.next_poll.saturating_sub(now));
        // Traps go to the master; a standby does not handle them.
        let _ = self.pipe.wait_trap(wait)?;
        self.pipe.traps.clear();
        self.answer_requests()?;
        if self.pipe.now() < self.next_poll {
            return Ok(None);
        }
        let got = self
            .pipe
            .run(&[Req::get(Route::Lid(self.master.lid), attr_id::SM_INFO, 0)])?;
        self.next_poll = self.pipe.now() + self.poll;
        self.answer_requests()?;
        match got.into_iter().next() {
            Some(Ok(s)) => {
                let info = SmInfo::decode(&s.data);
                if info.state != sm_state::MASTER {
                    return Ok(Some(MasterLost::NotMaster(info.state)));
                }
                self.master.info = info;
                self.polls_answered += 1;
                self.last_answer = self.pipe.now();
                Ok(None)
            }
            _ => Ok(Some(MasterLost::Silent)),
        }
    }

    /// SMInfo Gets are answered with this SM's STANDBY state; every other request waiting
    /// is dropped (hosts ask the master, whose LID their ports hold).
    fn answer_requests(&mut self) -> Result<(), SmError> {
        self.me.act_count = self.pipe.stats.sent as u32;
        while let Some(r) = self.pipe.requests.pop_front() {
            if let Some(a) = sm_info_answer(&r.mad, &self.me) {
                self.sm_info_answered += 1;
                self.pipe.answer(&a, r.from)?;
            }
        }
        Ok(())
    }
}

/// The answer to a LID-routed SMInfo Get: `info`. `None` for anything else.
pub(crate) fn sm_info_answer(m: &[u8; MAD_SIZE], info: &SmInfo) -> Option<[u8; MAD_SIZE]> {
    if m[1] != mad::CLASS_SUBN_LID {
        return None;
    }
    let smp = Smp::decode(m).ok()?;
    (smp.attr == attr_id::SM_INFO && smp.method == Method::Get)
        .then(|| smp.response(0, info.encode()).encode())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sm(priority: u8, guid: u64, state: u8) -> OtherSm {
        OtherSm {
            node: format!("H{guid}"),
            lid: guid as u16,
            info: SmInfo {
                guid,
                priority,
                state,
                ..SmInfo::default()
            },
        }
    }

    #[test]
    fn priority_then_lower_guid_ranks_first() {
        assert!(outranks((5, 9), (4, 1)));
        assert!(outranks((5, 1), (5, 9)));
        assert!(!outranks((5, 9), (5, 1)));
        assert!(!outranks((3, 1), (4, 9)));
        assert!(!outranks((5, 1), (5, 1)));
    }

    #[test]
    fn a_master_is_followed_whatever_its_priority() {
        let others = [
            sm(1, 7, sm_state::MASTER),
            sm(9, 3, sm_state::STANDBY),
            sm(0, 2, sm_state::NOT_ACTIVE),
        ];
        assert_eq!(master_to_follow((15, 1), &others).unwrap().info.guid, 7);
        // Two masters (a split that healed): the higher-ranked one.
        let two = [sm(1, 7, sm_state::MASTER), sm(2, 8, sm_state::MASTER)];
        assert_eq!(master_to_follow((0, 1), &two).unwrap().info.guid, 8);
    }

    #[test]
    fn without_a_master_the_highest_ranked_sm_becomes_master() {
        let others = [sm(4, 7, sm_state::STANDBY), sm(4, 5, sm_state::DISCOVERING)];
        assert_eq!(master_to_follow((3, 1), &others).unwrap().info.guid, 5);
        assert_eq!(master_to_follow((4, 1), &others), None);
        assert_eq!(master_to_follow((5, 9), &others), None);
        assert_eq!(
            master_to_follow((0, 1), &[sm(9, 2, sm_state::NOT_ACTIVE)]),
            None
        );
    }
}
