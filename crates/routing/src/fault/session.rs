//! A fault session: one base routing, a sequence of faults repaired by RFTR, every repair
//! checked independently, and full reconfiguration of the same faults beside it. What
//! `fabroute fault` does, as a library type with typed reports; sweeps start from the same
//! [`Session::start`].

use super::reconf::{full_reconfiguration, Reconfig, ReconfigReport};
use super::rftr::{FaultReport, Rftr, RftrConfig, RftrError};
use super::tracker::Tracker;
use super::verify::{check_state, SelectedCheck, Snapshot};
use crate::cdg;
use crate::engines::{Engine, EngineError, RouteOptions};
use crate::tables::Routing;
use fabric::Fault;
use fabric::{Fabric, FaultMask};
use serde::Serialize;

/// Why a session cannot start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The engine cannot pin its choices, route the fault-free fabric, or name its turn rule.
    #[error("{engine}: {error}")]
    Engine {
        engine: &'static str,
        error: EngineError,
    },
    #[error(transparent)]
    Rftr(#[from] RftrError),
}

impl SessionError {
    /// The engine's own reason when it declines to be a base, else the whole message.
    pub fn reason(&self) -> String {
        match self {
            SessionError::Engine {
                error: EngineError::NotApplicable(why),
                ..
            } => why.clone(),
            e => e.to_string(),
        }
    }

    /// RFTR's refusal of tables over the memory limit (`RftrError::TooLarge`), the one
    /// start error a caller may answer otherwise than by giving up (the SM by full
    /// reconfiguration, `fault` and `sweep` by naming `--memory-limit`).
    pub fn too_large(&self) -> Option<&RftrError> {
        match self {
            SessionError::Rftr(e @ RftrError::TooLarge { .. }) => Some(e),
            _ => None,
        }
    }
}

/// What one fault did: RFTR's repair and the independent check of the state after it (the
/// new walks together with the surviving old ones).
#[derive(Clone, Debug, Serialize)]
pub struct FaultStep {
    pub fault: Fault,
    pub repair: FaultReport,
    pub check: SelectedCheck,
}

impl FaultStep {
    /// Every remaining pair repaired, every selected pair delivered, the union CDG acyclic.
    pub fn ok(&self) -> bool {
        self.ok_but_cut() && self.repair.unsupported_pairs == 0
    }
    /// [`FaultStep::ok`], except for pairs the faults cut off (no live path joins them).
    pub fn ok_but_cut(&self) -> bool {
        self.checked() && self.repair.unsupported_pairs == self.repair.disconnected_pairs
    }
    /// The independent check passed: every selected pair delivered, the union CDG acyclic
    /// (pairs left unrepaired aside).
    pub fn checked(&self) -> bool {
        self.check.deadlock_free && self.check.undelivered == 0
    }
}

/// Full reconfiguration of the faults so far: the engine run again on the faulty fabric,
/// compared with the base tables, and checked.
#[derive(Clone, Debug)]
pub struct Full {
    pub routing: Routing,
    pub report: ReconfigReport,
    pub deadlock_free: bool,
}

/// How a session checks each repair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CheckMode {
    /// Every selected pair walked, and the migration union of the walks before and after
    /// the fault searched for cycles ([`check_state`]): cost grows with all pairs.
    #[default]
    Full,
    /// Only the table columns the fault or the repair touched walked again, against the
    /// union of every walk since the start kept as an ordered DAG ([`Tracker`]): cost grows
    /// with what the fault touches, after one whole walk at the first fault.
    Incremental,
}

/// The phases [`Session::apply_then`] reports, for a caller that times them (before the
/// first, the check prepares what it needs from before the repair: the full check's
/// snapshot, or the incremental check's one whole walk at the first fault).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// RFTR starts the repair (what the check needs from before it is ready).
    Repairing,
    /// The repair is done (its delta is ready); the bookkeeping it left for the next fault
    /// starts ([`Rftr::settle`]).
    Settling,
    /// That is done too; the repair's check starts.
    Checking,
}

/// See the module documentation.
pub struct Session<'f> {
    f: &'f Fabric,
    engine: &'f dyn Engine,
    opts: RouteOptions,
    base: Routing,
    cfg: RftrConfig,
    rftr: Rftr<'f>,
    steps: Vec<FaultStep>,
    mode: CheckMode,
    tracker: Option<Tracker<'f>>,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("engine", &self.engine.name())
            .field("steps", &self.steps.len())
            .finish_non_exhaustive()
    }
}

impl<'f> Session<'f> {
    /// Pins the engine's choices on the fault-free fabric ([`Engine::pin_choices`]), routes
    /// it, and starts RFTR from those tables with the engine's turn rule.
    pub fn start(
        f: &'f Fabric,
        engine: &'f dyn Engine,
        opts: &RouteOptions,
        cfg: RftrConfig,
    ) -> Result<Self, SessionError> {
        let (opts, base) = Self::route_base(f, engine, opts)?;
        Self::from_base(f, engine, opts, base, cfg)
    }

    /// The first half of [`Session::start`]: the options with the engine's choices pinned,
    /// and the fault-free tables routed with them.
    pub fn route_base(
        f: &Fabric,
        engine: &dyn Engine,
        opts: &RouteOptions,
    ) -> Result<(RouteOptions, Routing), SessionError> {
        let err = |error| SessionError::Engine {
            engine: engine.name(),
            error,
        };
        let opts = engine.pin_choices(f, opts).map_err(err)?;
        let base = engine.route(f, &FaultMask::none(f), &opts).map_err(err)?;
        Ok((opts, base))
    }

    /// The second half: RFTR from `base` (routed by `engine` with `opts`) and the engine's
    /// turn rule.
    pub fn from_base(
        f: &'f Fabric,
        engine: &'f dyn Engine,
        opts: RouteOptions,
        base: Routing,
        cfg: RftrConfig,
    ) -> Result<Self, SessionError> {
        let rule = engine
            .rftr_base(f, &opts)
            .map_err(|error| SessionError::Engine {
                engine: engine.name(),
                error,
            })?;
        let rftr = Rftr::new(f, &base, rule, cfg)?;
        Ok(Session {
            f,
            engine,
            opts,
            base,
            cfg,
            rftr,
            steps: Vec::new(),
            mode: CheckMode::Full,
            tracker: None,
        })
    }

    /// Checks the repairs from now on as `mode` says (default [`CheckMode::Full`]).
    pub fn set_check_mode(&mut self, mode: CheckMode) {
        self.mode = mode;
    }

    /// Repairs one more fault and checks the result.
    pub fn apply(&mut self, fault: Fault) -> &FaultStep {
        self.apply_then(fault, |_| {})
    }

    /// [`Session::apply`], calling `at` as each [`Phase`] starts (a caller times the repair
    /// and its check apart with it: what the check prepares before the repair — the full
    /// check's snapshot, the incremental check's first whole walk — comes before
    /// [`Phase::Repairing`]).
    pub fn apply_then(&mut self, fault: Fault, mut at: impl FnMut(Phase)) -> &FaultStep {
        let (repair, check) = match self.mode {
            CheckMode::Full => {
                let before = Snapshot::of(&self.rftr);
                at(Phase::Repairing);
                let repair = self.rftr.apply(fault);
                at(Phase::Settling);
                self.rftr.settle();
                at(Phase::Checking);
                (repair, check_state(&self.rftr, Some(&before)))
            }
            CheckMode::Incremental => {
                if self.tracker.is_none() {
                    self.tracker = Some(Tracker::start(&self.rftr));
                }
                at(Phase::Repairing);
                let repair = self.rftr.apply(fault);
                at(Phase::Settling);
                self.rftr.settle();
                at(Phase::Checking);
                let t = self.tracker.as_mut().expect("started above");
                (repair, t.step(&self.rftr, fault))
            }
        };
        self.steps.push(FaultStep {
            fault,
            repair,
            check,
        });
        self.steps.last().expect("just pushed")
    }

    /// Repairs one more fault without checking it, for a caller that must push the repair
    /// first and verify after (a live subnet manager, which times the repair): take a
    /// [`Snapshot`] before the first such fault, and check the state afterwards with
    /// [`check_state`]`(session.rftr(), Some(&snapshot))`. Not recorded in [`Session::steps`].
    pub fn apply_unchecked(&mut self, fault: Fault) -> FaultReport {
        // The incremental check knows nothing of this repair: it starts again if asked.
        self.tracker = None;
        self.rftr.apply(fault)
    }

    /// Does the bookkeeping the last repair left for the next fault ([`Rftr::settle`]): for
    /// a caller of [`Session::apply_unchecked`] once the repair is pushed (the next repair
    /// does it first otherwise, inside its own time).
    pub fn settle(&mut self) {
        self.rftr.settle();
    }

    /// Starts RFTR again from the base tables and applies `faults` in order, unchecked (as
    /// [`Session::apply_unchecked`]): the state the session would be in had only these
    /// faults happened. RFTR itself only takes elements away; this is how an element that
    /// comes back (a live subnet manager's cable put back) leaves the sequence: the caller
    /// passes the faults that remain. With no faults the state is the one
    /// [`Session::start`] gave, tables and delta included. The recorded steps and the
    /// incremental check start again. Returns each fault's report.
    pub fn restart_with(&mut self, faults: &[Fault]) -> Result<Vec<FaultReport>, SessionError> {
        let rule =
            self.engine
                .rftr_base(self.f, &self.opts)
                .map_err(|error| SessionError::Engine {
                    engine: self.engine.name(),
                    error,
                })?;
        self.rftr = Rftr::new(self.f, &self.base, rule, self.cfg)?;
        self.steps.clear();
        self.tracker = None;
        let reports = faults.iter().map(|&x| self.rftr.apply(x)).collect();
        self.rftr.settle();
        Ok(reports)
    }

    /// Runs the engine again on the fabric with every fault so far (`Err` when it cannot
    /// route it).
    pub fn full_reconfiguration(&self) -> Result<Full, EngineError> {
        let mask = &self.rftr.mask;
        let Reconfig { routing, report } =
            full_reconfiguration(self.f, self.engine, &self.opts, mask, &self.base)?;
        let deadlock_free = cdg::check(self.f, &routing, Some(mask)).deadlock_free;
        Ok(Full {
            routing,
            report,
            deadlock_free,
        })
    }

    /// Every fault so far repaired and verified.
    pub fn ok(&self) -> bool {
        self.steps.iter().all(FaultStep::ok)
    }

    /// Every fault so far repaired and verified for every pair that a live path still joins.
    pub fn ok_but_cut(&self) -> bool {
        self.steps.iter().all(FaultStep::ok_but_cut)
    }

    /// Every step's independent check passed ([`FaultStep::checked`]).
    pub fn checked(&self) -> bool {
        self.steps.iter().all(FaultStep::checked)
    }

    pub fn fabric(&self) -> &'f Fabric {
        self.f
    }
    pub fn engine(&self) -> &'f dyn Engine {
        self.engine
    }
    /// The options the base was routed with (the engine's choices pinned).
    pub fn options(&self) -> &RouteOptions {
        &self.opts
    }
    /// The fault-free tables.
    pub fn base(&self) -> &Routing {
        &self.base
    }
    /// RFTR's current state (tables, mask, delta).
    pub fn rftr(&self) -> &Rftr<'f> {
        &self.rftr
    }
    pub fn steps(&self) -> &[FaultStep] {
        &self.steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::by_name;

    /// A session equals doing its parts by hand, and refuses engines without a turn rule.
    #[test]
    fn session_matches_the_manual_sequence() {
        let f = super::super::test_fabric("torus 4x4 hcas=2 lmc=2");
        let engine = by_name("updn").unwrap();
        let links = super::super::sweep::switch_links(&f);
        let mut s = Session::start(
            &f,
            engine.as_ref(),
            &RouteOptions::default(),
            RftrConfig::default(),
        )
        .unwrap();
        let opts = engine.pin_choices(&f, &RouteOptions::default()).unwrap();
        let base = engine.route(&f, &FaultMask::none(&f), &opts).unwrap();
        let rule = engine.rftr_base(&f, &opts).unwrap();
        let mut r = Rftr::new(&f, &base, rule, RftrConfig::default()).unwrap();
        for &l in &links[..3] {
            let step = s.apply(Fault::Link(l)).clone();
            let before = Snapshot::of(&r);
            let rep = r.apply(Fault::Link(l));
            let chk = check_state(&r, Some(&before));
            assert_eq!(step.repair.affected_pairs, rep.affected_pairs);
            assert_eq!(step.repair.unsupported_pairs, rep.unsupported_pairs);
            assert_eq!(step.check, chk);
        }
        assert_eq!(s.rftr().routing.lft, r.routing.lft);
        assert!(s.ok(), "three link faults on a 4x4 torus are repaired");
        let full = s.full_reconfiguration().unwrap();
        assert_eq!(full.report.unrouted_pairs, 0);
        assert!(full.deadlock_free);
        assert!(full.report.delta.lft_entries > 0);

        let minhop = by_name("minhop").unwrap();
        let e = Session::start(
            &f,
            minhop.as_ref(),
            &RouteOptions::default(),
            RftrConfig::default(),
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                SessionError::Engine {
                    engine: "minhop",
                    ..
                }
            ),
            "{e}"
        );
    }

    /// Restarting with the faults that remain gives the state of a session that saw only
    /// those; with none, the state `start` gave.
    #[test]
    fn restart_with_the_remaining_faults() {
        let f = super::super::test_fabric("torus 4x4 hcas=2 lmc=2");
        let engine = by_name("updn").unwrap();
        let links = super::super::sweep::switch_links(&f);
        let start = || {
            Session::start(
                &f,
                engine.as_ref(),
                &RouteOptions::default(),
                RftrConfig::default(),
            )
            .unwrap()
        };
        let fresh = start();
        let mut s = start();
        s.apply_unchecked(Fault::Link(links[0]));
        s.apply_unchecked(Fault::Link(links[5]));
        let mut only = start();
        only.apply_unchecked(Fault::Link(links[5]));
        let reps = s.restart_with(&[Fault::Link(links[5])]).unwrap();
        assert_eq!(reps.len(), 1);
        assert_eq!(s.rftr().routing.lft, only.rftr().routing.lft);
        assert_eq!(s.rftr().selected_pairs(), only.rftr().selected_pairs());
        assert!(s.rftr().mask.link_dead(links[5]) && !s.rftr().mask.link_dead(links[0]));
        s.restart_with(&[]).unwrap();
        assert_eq!(s.rftr().routing.lft, fresh.rftr().routing.lft);
        assert_eq!(s.rftr().delta.lft_entries(), 0);
        assert!(s.rftr().mask.is_empty());
    }
}
