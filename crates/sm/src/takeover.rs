//! Taking over from a master that went silent, without reprogramming a clean fabric: read
//! back the LFTs and SL2VL tables the switches hold, check them (the walker and the CDG
//! over (channel, VL)), adopt them when they are clean, and push only what differs from
//! them otherwise.

use crate::discover::Discovery;
use crate::live::{
    node_routes, port_route, Event, FullState, Live, RepairMode, RepairState, SmConfig,
};
use crate::pipe::{Pipe, Req};
use crate::program::Scope;
use crate::standby::{MasterLost, OtherSm};
use crate::{Session, SmError};
use fabric::{Fabric, FaultMask, NO_PORT};
use mad::attr;
use mad::{attr_id, Route, Transport};
use routing::cdg;
use routing::engines::Engine;
use routing::tables::update::{lft_block_count, lft_block_lids, Update};
use routing::tables::NUM_SLS;
use routing::Routing;

/// The tables the switches (and end ports) of `d` hold: every LFT block up to each
/// switch's LinearFDBTop (LIDs above it are not forwarded: no port), and the SL2VL row of
/// every pair of cabled ports. A row that maps SL 0-14 to VL 0-14 is the identity (what
/// the switches hold at power-on, and what an SM that writes only the rows it needs keeps).
/// Also returns the SMPs sent and those that got no good answer (their entries stay "no
/// port", so the check fails and they are pushed).
fn read_held<T: Transport>(
    pipe: &mut Pipe<T>,
    d: &Discovery,
) -> Result<(Routing, u64, u64), SmError> {
    let f = &d.fabric;
    let mask = FaultMask::none(f);
    let routes = node_routes(f, &mask, d.sm_port);
    let mut held = Routing::empty(f);
    let stride = held.stride();
    let mut reqs = Vec::new();
    let mut what = Vec::new();
    for (s, &n) in f.switches.iter().enumerate() {
        let Some(r) = &routes[n.idx()] else { continue };
        let top = (d.switch_info[n.idx()].linear_fdb_top() as usize).min(stride - 1);
        if top > 0 {
            for b in 0..lft_block_count(top + 1) {
                reqs.push(Req::get(Route::Direct(r.clone()), attr_id::LFT, b as u32));
                what.push(Update::Lft {
                    sw: s as u32,
                    block: b as u16,
                });
            }
        }
        let cabled = |p: u8| p == 0 || f.port(f.port_id(n, p)).link.is_some();
        let np = f.node(n).nports;
        for inp in (0..=np).filter(|&p| cabled(p)) {
            for out in (1..=np).filter(|&p| p != inp && cabled(p)) {
                reqs.push(Req::get(
                    Route::Direct(r.clone()),
                    attr_id::SL2VL,
                    attr::sl2vl_modifier(inp, out),
                ));
                what.push(Update::Sl2Vl { node: n, inp, out });
            }
        }
    }
    for &p in &f.end_ports {
        let port = f.port(p);
        if let Some(r) = port_route(f, &mask, &routes, d.sm_port, p) {
            reqs.push(Req::get(Route::Direct(r), attr_id::SL2VL, 0));
            what.push(Update::Sl2Vl {
                node: port.node,
                inp: 0,
                out: port.num,
            });
        }
    }
    let got = pipe.run(&reqs)?;
    let mut failed = 0;
    for (w, g) in what.into_iter().zip(got) {
        let Ok(smp) = g else {
            failed += 1;
            continue;
        };
        match w {
            Update::Lft { sw, block } => {
                let n = f.switches[sw as usize];
                let top = d.switch_info[n.idx()].linear_fdb_top() as usize;
                let lft = held.lft_of_mut(fabric::SwitchIdx(sw));
                for (lid, &port) in lft_block_lids(block as usize, stride).zip(&smp.data) {
                    lft[lid] = if lid <= top { port } else { NO_PORT };
                }
            }
            Update::Sl2Vl { node: n, inp, out } => {
                let row = attr::sl2vl_decode(&smp.data);
                let identity = (0..NUM_SLS - 1).all(|sl| row[sl] as usize == sl);
                if !identity {
                    for (sl, &vl) in row.iter().enumerate() {
                        held.sl2vl.set(n, inp, out, sl as u8, vl);
                    }
                }
            }
            // Not read here: `mcast::read_mfts` reads the groups' blocks.
            Update::Mft { .. } => {}
        }
    }
    Ok((held, reqs.len() as u64, failed))
}

/// The repair state over tables adopted as they are: an RFTR session with `held` as its
/// base (refused when `held` breaks the engine's turn rule), or `held` itself for full
/// reconfiguration, also when RFTR's tables would pass the memory limit (and why).
fn adopt<'f>(
    f: &'f Fabric,
    engine: &'f dyn Engine,
    cfg: &SmConfig,
    held: &Routing,
) -> Result<(RepairState<'f>, Option<String>), String> {
    let opts = engine
        .pin_choices(f, &cfg.opts)
        .map_err(|e| format!("{}: {e}", engine.name()))?;
    let full = |opts| {
        RepairState::Full(Box::new(FullState {
            engine,
            opts,
            routing: held.clone(),
        }))
    };
    Ok(match cfg.repair {
        RepairMode::Rftr => {
            let rftr = crate::live::rftr_config(cfg);
            match Session::from_base(f, engine, opts.clone(), held.clone(), rftr) {
                Ok(s) => (RepairState::Rftr(Box::new(s)), None),
                Err(e) => match crate::live::too_large(&e) {
                    Some(why) => (full(opts), Some(why)),
                    None => return Err(format!("RFTR cannot start from them: {}", e.reason())),
                },
            }
        }
        RepairMode::Full => (full(opts), None),
    })
}

impl<'f, T: Transport> Live<'f, T> {
    /// Takes over the subnet of `d` (discovered with the LIDs the ports hold,
    /// [`crate::Lids::Keep`]) from `master`, which was lost as `lost` says after it last
    /// answered `silent` ago ([`crate::Standby::silent_for`]): reads back the
    /// tables, checks them, adopts them when clean (nothing pushed but what differs from
    /// the engine's completion of them: nothing, for tables an SM of the same engine
    /// wrote), and otherwise routes afresh and pushes only the blocks and rows that differ
    /// from what the switches hold. Every port then names this SM as master (PortInfo
    /// MasterSMLID), so traps come here.
    pub fn take_over(
        d: &'f Discovery,
        mut pipe: Pipe<T>,
        engine: &'f dyn Engine,
        cfg: SmConfig,
        master: &OtherSm,
        lost: &MasterLost,
        silent: std::time::Duration,
    ) -> Result<(Self, Event), SmError> {
        let f = &d.fabric;
        let t0 = pipe.now();
        let sent0 = pipe.stats.sent;
        let (held, read_smps, read_failed) = read_held(&mut pipe, d)?;
        let t_read = pipe.now();
        let held_report = cdg::check(f, &held, Some(&FaultMask::none(f)));
        let clean = read_failed == 0
            && held_report.deadlock_free
            && held_report.unreachable_pairs.count == 0;
        let adopted = if clean {
            adopt(f, engine, &cfg, &held)
        } else if read_failed > 0 {
            Err(format!("{read_failed} reads got no good answer"))
        } else {
            Err(format!(
                "the tables held are not clean: {}, {} pairs undelivered",
                if held_report.deadlock_free {
                    "deadlock-free"
                } else {
                    "a credit loop"
                },
                held_report.unreachable_pairs.count
            ))
        };
        let (rep, refused, rftr_refused) = match adopted {
            Ok((rep, rftr_refused)) => (rep, None, rftr_refused),
            Err(why) => {
                let (rep, rftr_refused) = Self::fresh_rep(f, engine, &cfg)?;
                (rep, Some(why), rftr_refused)
            }
        };
        let mut cfg = cfg;
        if rftr_refused.is_some() {
            cfg.repair = RepairMode::Full;
        }
        let t_routed = pipe.now();
        let mut live = Self::assemble(d, pipe, cfg, rep, held);
        live.start_mcast(engine)?;
        let (mft_reads, mft_failed) = live.read_mfts()?;
        let (pushed, failed, t_up, report) = live.take_charge(Scope::All)?;
        let ev = Event::TakeOver {
            master_guid: format!("{:#018x}", master.info.guid),
            master_node: master.node.clone(),
            master_priority: master.info.priority,
            lost: match lost {
                MasterLost::Silent => "silent".to_string(),
                MasterLost::NotMaster(s) => format!("not master (state {s})"),
            },
            silent_seconds: silent.as_secs_f64(),
            engine: engine.name(),
            seconds: (t_up - t0 + d.time).as_secs_f64(),
            discovery_seconds: d.time.as_secs_f64(),
            readback_seconds: (t_read - t0).as_secs_f64(),
            readback_smps: read_smps + mft_reads,
            held_deadlock_free: held_report.deadlock_free,
            held_unreachable_pairs: held_report.unreachable_pairs.count,
            adopted: refused.is_none(),
            refused,
            compute_seconds: (t_routed - t_read).as_secs_f64(),
            smps: live.pipe.stats.sent - sent0 + d.smps,
            lft_blocks: pushed.lft_blocks,
            sl2vl_entries: pushed.sl2vl_entries,
            mft_blocks: pushed.mft_blocks,
            client_reregister: live.rereg_asked,
            failed_smps: failed + d.failed + read_failed + mft_failed,
            deadlock_free: report.deadlock_free,
            unreachable_pairs: report.unreachable_pairs.count,
            rftr_refused,
        };
        Ok((live, ev))
    }
}
