//! What `fabroute sim` simulates: the fabric and its tables (from files or an engine, with
//! `--dateline` or `--hop-vls`), the fault's repairs by scheme, and the jobs, one per load and
//! scheme.

use super::args::Args;
use crate::args::Tables;
use crate::cmd::check::load_tables;
use crate::cmd::fault::session_error;
use crate::out;
use crate::util::{load_fabric_for_lmc, read_guid_file, GuidList};
use anyhow::Result;
use fabric::Fabric;
use routing::cdg::CheckReport;
use routing::engines::{engine_names, route_chain, RouteOptions};
use routing::fault::{Fault, Session};
use routing::Routing;
use sim::{FaultEvent, RepairTables, Scheme};
use std::time::Instant;

/// The fabric and the tables to simulate, with the static check of those tables.
/// The fabric as read, and the tables when they come from files.
pub(super) struct Read {
    pub f: Fabric,
    pub tables: Option<(Routing, String)>,
}

pub(super) struct Scenario {
    pub f: Fabric,
    pub tables: Routing,
    /// Where the tables come from: the LFT file, or `-R` and the engine used.
    pub source: String,
    pub static_check: CheckReport,
    /// Pairs the tables do not deliver.
    pub undelivered: u64,
}

impl Scenario {
    /// Reads the fabric (with its LIDs at the LMC the run needs), and the tables with it when
    /// they come from files: everything `sim` reads before it validates and routes.
    pub fn read(a: &Args, want: &[Option<Scheme>], repairing: bool) -> Result<Read> {
        if let Some(lfts) = &a.lfts {
            if repairing {
                crate::usage_bail!(
                    "--repair needs an engine (-R): tables from files cannot be recomputed"
                );
            }
            let (f, r) = load_tables(&Tables {
                fabric: a.fabric.clone(),
                lfts: Some(lfts.clone()),
                sl2vl: a.sl2vl.clone(),
                psl: a.psl.clone(),
                lmc: a.lmc,
                strict: false,
            })?;
            return Ok(Read {
                f,
                tables: Some((r, lfts.display().to_string())),
            });
        }
        let lmc = a.lmc.or(want.contains(&Some(Scheme::Rftr)).then_some(2));
        let mut f = load_fabric_for_lmc(&a.fabric, lmc)?.fabric;
        if let Some(l) = lmc {
            f = f
                .with_lmc(l)
                .map_err(|e| anyhow::anyhow!("cannot assign LIDs with LMC {l}: {e}"))?;
        }
        Ok(Read { f, tables: None })
    }

    /// Routes the tables (unless read), applies `--dateline` or `--hop-vls`, checks them and
    /// warns of undelivered pairs and credit loops.
    pub fn build(a: &Args, read: Read) -> Result<Scenario> {
        let Read { f, tables } = read;
        let (tables, source) = if let Some(t) = tables {
            t
        } else {
            let engine = a.engine.clone().expect("clap requires -R or --lfts");
            let opts = route_opts(a, &f)?;
            let names: Vec<&str> = engine.split([',', ' ']).filter(|s| !s.is_empty()).collect();
            crate::names::check_chain(&names)?;
            let chain = route_chain(&names, &f, &fabric::FaultMask::none(&f), &opts)
                .map_err(|e| anyhow::anyhow!("{e} (engines: {})", engine_names().join(", ")))?;
            for (n, e) in &chain.attempts {
                crate::warn!("{n} failed: {e}; trying the next engine");
            }
            (chain.routing, format!("-R {}", chain.engine_used))
        };
        let tables = if a.dateline {
            let d = sim::dateline::dateline(&f, &tables).map_err(anyhow::Error::msg)?;
            let rep = routing::cdg::check(&f, &d, None);
            out::stderr_line(&format!(
                "fabroute: dateline on 2 VLs: {}",
                if rep.deadlock_free {
                    "no credit loops".to_string()
                } else {
                    format!(
                        "{} credit loop(s) remain (paths not dimension ordered)",
                        rep.cycles.len()
                    )
                }
            ));
            d
        } else if a.hop_vls {
            let mut h = tables;
            let paths = routing::vl::paths::Paths::of(&f, &h, None);
            let budget = a.budget.route_options()?.budget;
            let notes = routing::engines::hopvl::hop_vls(&f, &mut h, &paths, budget)
                .map_err(|e| anyhow::anyhow!("--hop-vls: {e}"))?;
            for n in notes {
                out::stderr_line(&format!("fabroute: {n}"));
            }
            h
        } else {
            tables
        };
        let static_check = routing::cdg::check(&f, &tables, None);
        let undelivered = static_check.pairs.checked - static_check.pairs.ok;
        if undelivered > 0 {
            crate::warn!(
                "the tables do not deliver {undelivered} of {} pairs: their packets are dropped where the tables lose them (see `fabroute check`)",
                static_check.pairs.checked
            );
        }
        if !static_check.deadlock_free {
            crate::warn!(
                "the tables have {} credit loop(s): the simulation may deadlock (see `fabroute check`)",
                static_check.cycles.len()
            );
        }
        Ok(Scenario {
            f,
            tables,
            source,
            static_check,
            undelivered,
        })
    }
}

/// One simulation to run.
pub(super) struct Job {
    pub label: String,
    pub load: f64,
    pub scheme: Option<Scheme>,
    pub tables: Routing,
    pub fault: Option<FaultEvent>,
}

/// What the fault runs need: the schemes' base tables and repairs.
pub(super) struct Repairs {
    /// The engine's fault-free tables (full reconfiguration and `none` start from them).
    pub base: Routing,
    /// RFTR's fault-free tables (the engine's with RFTR's virtual LIDs cleared).
    pub base_rftr: Option<Routing>,
    pub rftr: Option<RepairTables>,
    pub full: Option<(Routing, u64)>,
    pub notes: Vec<String>,
}

pub(super) fn route_opts(a: &Args, f: &fabric::Fabric) -> Result<RouteOptions> {
    let mut opts = a.budget.route_options()?;
    if let Some(p) = &a.roots {
        opts.root_guids = read_guid_file(p, f, GuidList::Roots)?;
    }
    opts.engine.torus.config = crate::args::torus_config(
        &a.fabric,
        a.budget.torus_config.as_deref(),
        a.engine.as_deref().unwrap_or(""),
    )?;
    Ok(opts)
}

/// Runs the engine's fault session: RFTR's repair and full reconfiguration, timed.
pub(super) fn session_repairs(
    a: &Args,
    f: &Fabric,
    engine: &str,
    opts: &RouteOptions,
    fault: Fault,
    want: &[Option<Scheme>],
    t_compute: Option<u64>,
) -> Result<Repairs> {
    let e = crate::names::engine(engine, "engines", &engine_names())?;
    let (vls, opts) = a.rftr.plan(f, e.as_ref(), opts, a.budget.sls)?;
    let (opts, base) = Session::route_base(f, e.as_ref(), &opts).map_err(session_error)?;
    let want_rftr = want.contains(&Some(Scheme::Rftr));
    let want_full = want
        .iter()
        .any(|s| matches!(s, Some(Scheme::FullStatic | Scheme::FullDynamic)));
    let mut notes = Vec::new();
    let (mut base_rftr, mut rftr, mut full) = (None, None, None);
    if want_rftr || want_full {
        let cfg = a.rftr.config(vls, a.budget.sls);
        let mut s =
            Session::from_base(f, e.as_ref(), opts, base.clone(), cfg).map_err(session_error)?;
        if want_rftr {
            base_rftr = Some(s.rftr().routing.clone());
            // The SM's compute time is RFTR's repair alone (the session also verifies it).
            let mut timed = s.rftr().clone();
            let t = Instant::now();
            timed.apply(fault);
            let took = t.elapsed();
            let step = s.apply(fault).clone();
            if !step.ok() {
                notes.push(format!(
                    "RFTR: {} of {} affected pairs unsupported, union CDG {}",
                    step.repair.unsupported_pairs,
                    step.repair.affected_pairs,
                    if step.check.deadlock_free {
                        "acyclic"
                    } else {
                        "CYCLIC"
                    }
                ));
            }
            rftr = Some(RepairTables {
                scheme: Scheme::Rftr,
                tables: s.rftr().routing.clone(),
                sources: s.rftr().delta.sources.clone(),
                t_compute: t_compute.unwrap_or(took.as_nanos() as u64 * 1000),
            });
        }
        if want_full {
            let mask = fabric::FaultMask::of(f, &[fault]);
            // Timed: the engine routing the damaged fabric (what the SM computes). Routed
            // under this fault's mask, not the session's: without RFTR the session has not
            // seen the fault, and its full reconfiguration would be the base again.
            let t = Instant::now();
            let routing = e
                .route(f, &mask, s.options())
                .map_err(|e| anyhow::anyhow!("full reconfiguration: {e}"))?;
            let took = t.elapsed();
            if !routing::cdg::check(f, &routing, Some(&mask)).deadlock_free {
                notes.push("full reconfiguration: the new tables have credit loops".into());
            }
            full = Some((routing, t_compute.unwrap_or(took.as_nanos() as u64 * 1000)));
        }
    }
    Ok(Repairs {
        base,
        base_rftr,
        rftr,
        full,
        notes,
    })
}

/// The jobs: every load × every scheme (one run per load without a fault).
pub(super) fn jobs(
    loads: &[f64],
    want: &[Option<Scheme>],
    fault: Option<Fault>,
    fail_at: u64,
    repairs: &Option<Repairs>,
    tables: &Routing,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    for &load in loads {
        for &scheme in if fault.is_some() { want } else { &[None][..] } {
            let (tables, repair) = match (repairs, scheme) {
                (Some(r), Some(Scheme::Rftr)) => {
                    (r.base_rftr.clone().expect("routed"), r.rftr.clone())
                }
                (Some(r), Some(s)) => {
                    let (t, tc) = r.full.clone().expect("routed");
                    (
                        r.base.clone(),
                        Some(RepairTables {
                            scheme: s,
                            tables: t,
                            sources: Default::default(),
                            t_compute: tc,
                        }),
                    )
                }
                (Some(r), None) => (r.base.clone(), None),
                (None, _) => (tables.clone(), None),
            };
            let label = match (scheme, fault) {
                (Some(s), _) => s.name().to_string(),
                (None, Some(_)) => "no repair".to_string(),
                (None, None) => "run".to_string(),
            };
            jobs.push(Job {
                label,
                load,
                scheme,
                tables,
                fault: fault.map(|fl| FaultEvent {
                    at: fail_at,
                    fault: fl,
                    repair,
                }),
            });
        }
    }
    jobs
}
