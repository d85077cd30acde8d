//! What a run reports: the summary figures, the time series, the deadlock cycle, and for a
//! fault run the dip, the recovery and the cost of the repair.

use crate::config::Config;
use crate::reconf::Scheme;
use crate::stats::{Bin, BinAcc, Histogram, Latency};
use serde::Serialize;
use std::collections::BTreeMap;

/// Why packets were dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// On the wire of a link when it failed.
    LinkDown = 0,
    /// Queued for, or routed to, a port whose link has failed.
    DeadPort,
    /// Inside (or on the way into) a switch that failed.
    SwitchDown,
    /// In the source queue of a host whose link or switch failed.
    SourceDown,
    /// The LFT entry has no route or points nowhere (black hole).
    Unroutable,
    /// Reached another host than its destination.
    Misdelivered,
    /// Crossed more switches than a loop-free route can.
    Loop,
    /// The SL2VL tables gave a VL the run does not simulate.
    VlOutOfRange,
}

impl DropReason {
    pub const COUNT: usize = 8;
    pub const ALL: [DropReason; Self::COUNT] = [
        DropReason::LinkDown,
        DropReason::DeadPort,
        DropReason::SwitchDown,
        DropReason::SourceDown,
        DropReason::Unroutable,
        DropReason::Misdelivered,
        DropReason::Loop,
        DropReason::VlOutOfRange,
    ];
    pub fn name(self) -> &'static str {
        match self {
            DropReason::LinkDown => "link_down",
            DropReason::DeadPort => "dead_port",
            DropReason::SwitchDown => "switch_down",
            DropReason::SourceDown => "source_down",
            DropReason::Unroutable => "unroutable",
            DropReason::Misdelivered => "misdelivered",
            DropReason::Loop => "loop",
            DropReason::VlOutOfRange => "vl_out_of_range",
        }
    }
}

/// One buffer of a deadlock cycle: the output buffer of `switch` on `port` for `vl`, i.e.
/// the (channel, VL) vertex of the channel dependency graph leaving there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BufferRef {
    pub switch: String,
    pub guid: String,
    pub port: u8,
    pub vl: u8,
    /// The fabric's channel id.
    pub channel: u32,
}

/// Accepted traffic before and after a failure, and what the repair cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FaultSummary {
    pub at_us: f64,
    /// `None`: no repair (the tables stay broken).
    pub scheme: Option<Scheme>,
    /// Mean accepted traffic over the bins from the warmup to the failure.
    pub pre_fault_accepted: f64,
    /// Mean accepted traffic over the last quarter of the bins after the failure.
    pub steady_accepted: f64,
    /// Lowest bin after the failure over the pre-fault mean.
    pub dip: f64,
    /// From the failure to the first bin at or after the lowest one whose 5-bin centred
    /// average is within 5 % of the new steady state (0 when accepted traffic never left it).
    pub recovery_us: f64,
    /// LFT blocks (64 LIDs each) the SM sent.
    pub lft_blocks_sent: usize,
    /// SL-to-VL rows the SM sent.
    pub sl2vl_blocks_sent: usize,
    /// Packets dropped from the failure on (every reason).
    pub packets_lost: u64,
    pub t_compute_us: f64,
    /// The first and last SMP applied, and when sources switched.
    pub reconf_start_us: Option<f64>,
    pub reconf_end_us: Option<f64>,
    pub sources_switched_us: Option<f64>,
    /// Static scheme: injection stopped, and the network drained (forced: nothing moved).
    pub injection_stopped_us: Option<f64>,
    pub drained_us: Option<f64>,
    pub drain_forced: bool,
    /// Latency of packets generated in the 200 µs after the failure.
    pub latency_after_fault_ns: Latency,
}

/// Link utilisation over switch-to-switch channels (busy time / run time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Utilisation {
    pub mean: f64,
    pub max: f64,
}

/// Everything a run reports. Traffic figures are per sending host, as a fraction of its link's
/// data rate, over the measurement window (warmup to end).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub offered: f64,
    pub injected: f64,
    pub accepted: f64,
    /// Half-width of the 95 % confidence interval of `accepted` by batch means (10 batches of
    /// bins), 0 when there are too few bins.
    pub accepted_ci95: f64,
    pub hosts: usize,
    pub senders: usize,
    pub vls: usize,
    pub packets_generated: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    pub packets_in_network: u64,
    pub packets_in_source_queues: u64,
    pub dropped_by_reason: BTreeMap<&'static str, u64>,
    /// Packets crossing a switch (a packet-hop = one packet through one switch).
    pub packet_hops: u64,
    pub events: u64,
    pub deadlock: bool,
    pub deadlock_at_us: Option<f64>,
    pub deadlock_cycle: Vec<BufferRef>,
    /// Generation to delivery, for packets generated after the warmup.
    pub latency_ns: Latency,
    /// Injection to delivery.
    pub network_latency_ns: Latency,
    pub link_utilisation: Utilisation,
    pub end_us: f64,
    pub fault: Option<FaultSummary>,
    /// The time series (written as CSV, not in the summary).
    #[serde(skip)]
    pub series: Vec<Bin>,
    /// Latency histogram (generation to delivery, packets generated after the warmup): 40 bin
    /// starts in ns and counts.
    #[serde(skip)]
    pub latency_histogram: (Vec<f64>, Vec<u64>),
    /// How often the invariants were checked (`Config::check_invariants`).
    #[serde(skip)]
    pub invariant_checks: u64,
}

/// What happened to the fault and repair, for the report.
#[derive(Clone, Debug, Default)]
pub(crate) struct FaultLog {
    pub at: u64,
    pub scheme: Option<Scheme>,
    pub t_compute: u64,
    pub lft_blocks: usize,
    pub sl2vl_rows: usize,
    pub first_smp: Option<u64>,
    pub last_smp: Option<u64>,
    pub sources_at: Option<u64>,
    pub stopped_at: Option<u64>,
    pub drained_at: Option<u64>,
    pub drain_forced: bool,
    pub dropped_after: u64,
    pub lat_after: Histogram,
}

pub(crate) struct RunFacts<'a> {
    pub cfg: &'a Config,
    pub end: u64,
    pub hosts: usize,
    pub senders: usize,
    pub vls: usize,
    /// Bytes per ps of every sender's link, summed.
    pub rate: f64,
    pub generated: u64,
    pub delivered: u64,
    pub dropped: [u64; DropReason::COUNT],
    pub dropped_total: u64,
    pub in_network: u64,
    pub in_sources: u64,
    pub hops: u64,
    pub events: u64,
    pub win_gen: u64,
    pub win_inj: u64,
    pub win_del: u64,
    pub bins: &'a [BinAcc],
    pub lat: &'a Histogram,
    pub net_lat: &'a Histogram,
    pub deadlock: Option<(u64, Vec<BufferRef>)>,
    pub fault: Option<&'a FaultLog>,
    pub sw_busy: &'a [u64],
    pub invariant_checks: u64,
}

const US: f64 = 1e6;

pub(crate) fn build(x: RunFacts<'_>) -> Report {
    let cfg = x.cfg;
    let window = x.end.saturating_sub(cfg.t_warmup) as f64;
    let frac = |bytes: u64, dt: f64| {
        if dt <= 0.0 || x.rate <= 0.0 {
            0.0
        } else {
            bytes as f64 / (dt * x.rate)
        }
    };
    // Series: cumulative counts give what is in the network at the end of each bin.
    let nb = (x.end.div_ceil(cfg.t_bin) as usize).max(x.bins.len().min(1));
    let mut series = Vec::with_capacity(nb);
    let (mut gen, mut inj, mut del, mut drop, mut drop_src) = (0u64, 0u64, 0u64, 0u64, 0u64);
    for b in 0..nb {
        let a = x.bins.get(b).copied().unwrap_or_default();
        let t0 = b as u64 * cfg.t_bin;
        let dt = (x.end.min(t0 + cfg.t_bin) - t0.min(x.end)) as f64;
        gen += a.gen_pkts;
        inj += a.inj_pkts;
        del += a.del_pkts;
        drop += a.drop_pkts;
        drop_src += a.drop_src_pkts;
        series.push(Bin {
            t_us: t0 as f64 / US,
            offered: frac(a.gen_bytes, dt),
            injected: frac(a.inj_bytes, dt),
            accepted: frac(a.del_bytes, dt),
            generated_packets: a.gen_pkts,
            delivered_packets: a.del_pkts,
            dropped_packets: a.drop_pkts,
            in_network: inj - del - (drop - drop_src),
            in_source_queues: gen - inj - drop_src,
            latency_mean_ns: if a.del_pkts > 0 {
                a.lat_sum as f64 / a.del_pkts as f64 / 1000.0
            } else {
                0.0
            },
        });
    }
    let first_bin = (cfg.t_warmup / cfg.t_bin) as usize;
    let accepted = frac(x.win_del, window);
    let ci = batch_ci(&series, first_bin);
    let mut dropped_by_reason = BTreeMap::new();
    for r in DropReason::ALL {
        if x.dropped[r as usize] > 0 {
            dropped_by_reason.insert(r.name(), x.dropped[r as usize]);
        }
    }
    let end = x.end.max(1) as f64;
    let util = if x.sw_busy.is_empty() {
        Utilisation::default()
    } else {
        let u: Vec<f64> = x.sw_busy.iter().map(|&b| b as f64 / end).collect();
        Utilisation {
            mean: u.iter().sum::<f64>() / u.len() as f64,
            max: u.iter().copied().fold(0.0, f64::max),
        }
    };
    let fault = x.fault.map(|log| fault_summary(cfg, log, &series, x.end));
    let (deadlock_at_us, deadlock_cycle) = match &x.deadlock {
        Some((t, c)) => (Some(*t as f64 / US), c.clone()),
        None => (None, Vec::new()),
    };
    Report {
        offered: frac(x.win_gen, window),
        injected: frac(x.win_inj, window),
        accepted,
        accepted_ci95: ci,
        hosts: x.hosts,
        senders: x.senders,
        vls: x.vls,
        packets_generated: x.generated,
        packets_delivered: x.delivered,
        packets_dropped: x.dropped_total,
        packets_in_network: x.in_network,
        packets_in_source_queues: x.in_sources,
        dropped_by_reason,
        packet_hops: x.hops,
        events: x.events,
        deadlock: x.deadlock.is_some(),
        deadlock_at_us,
        deadlock_cycle,
        latency_ns: x.lat.summary_ns(),
        network_latency_ns: x.net_lat.summary_ns(),
        link_utilisation: util,
        end_us: x.end as f64 / US,
        fault,
        series,
        latency_histogram: x.lat.bins_ns(40),
        invariant_checks: x.invariant_checks,
    }
}

/// Batch means over the full bins from `first`: 10 batches, t-quantile 2.262 (9 d.o.f.).
fn batch_ci(series: &[Bin], first: usize) -> f64 {
    let v: Vec<f64> = series
        .iter()
        .skip(first)
        .take(series.len().saturating_sub(first + 1))
        .map(|b| b.accepted)
        .collect();
    let k = 10;
    if v.len() < 2 * k {
        return 0.0;
    }
    let per = v.len() / k;
    let means: Vec<f64> = (0..k)
        .map(|i| v[i * per..(i + 1) * per].iter().sum::<f64>() / per as f64)
        .collect();
    let m = means.iter().sum::<f64>() / k as f64;
    let var = means.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (k - 1) as f64;
    2.262 * (var / k as f64).sqrt()
}

fn fault_summary(cfg: &Config, log: &FaultLog, series: &[Bin], end: u64) -> FaultSummary {
    let bin = cfg.t_bin;
    let fb = (log.at / bin) as usize;
    let wb = ((cfg.t_warmup / bin) as usize).min(fb);
    let full = |b: usize| ((b as u64 + 1) * bin) <= end;
    let pre: Vec<f64> = (wb..fb)
        .filter(|&b| full(b))
        .map(|b| series[b].accepted)
        .collect();
    let pre_mean = mean(&pre);
    let post: Vec<usize> = (fb..series.len()).filter(|&b| full(b)).collect();
    let tail = &post[post.len() - post.len() / 4..];
    let steady = mean(&tail.iter().map(|&b| series[b].accepted).collect::<Vec<_>>());
    let (mut dip_bin, mut low) = (fb, f64::INFINITY);
    for &b in &post {
        if series[b].accepted < low {
            low = series[b].accepted;
            dip_bin = b;
        }
    }
    // A centred 5-bin average: bins of a few hundred packets vary by several per cent.
    let smooth = |b: usize| {
        let lo = b.saturating_sub(2).max(fb);
        let hi = (b + 2).min(post.last().copied().unwrap_or(b));
        mean(&(lo..=hi).map(|i| series[i].accepted).collect::<Vec<_>>())
    };
    let mut recovery = None;
    for &b in post.iter().filter(|&&b| b >= dip_bin) {
        if smooth(b) >= 0.95 * steady {
            recovery = Some(b);
            break;
        }
    }
    let recovery_us = match recovery {
        Some(b) => ((b as u64 * bin).saturating_sub(log.at)) as f64 / US,
        None => end.saturating_sub(log.at) as f64 / US,
    };
    let us = |t: Option<u64>| t.map(|t| t as f64 / US);
    FaultSummary {
        at_us: log.at as f64 / US,
        scheme: log.scheme,
        pre_fault_accepted: pre_mean,
        steady_accepted: steady,
        dip: if pre_mean > 0.0 && low.is_finite() {
            low / pre_mean
        } else {
            0.0
        },
        recovery_us,
        lft_blocks_sent: if log.first_smp.is_some() {
            log.lft_blocks
        } else {
            0
        },
        sl2vl_blocks_sent: if log.first_smp.is_some() {
            log.sl2vl_rows
        } else {
            0
        },
        packets_lost: log.dropped_after,
        t_compute_us: log.t_compute as f64 / US,
        reconf_start_us: us(log.first_smp),
        reconf_end_us: us(log.last_smp),
        sources_switched_us: us(log.sources_at),
        injection_stopped_us: us(log.stopped_at),
        drained_us: us(log.drained_at),
        drain_forced: log.drain_forced,
        latency_after_fault_ns: log.lat_after.summary_ns(),
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The time series as CSV (one row per bin).
pub fn series_csv(r: &Report) -> String {
    let mut s = String::from(
        "t_us,offered,injected,accepted,generated_packets,delivered_packets,dropped_packets,in_network,in_source_queues,latency_mean_ns\n",
    );
    for b in &r.series {
        s.push_str(&format!(
            "{},{:.6},{:.6},{:.6},{},{},{},{},{},{:.3}\n",
            b.t_us,
            b.offered,
            b.injected,
            b.accepted,
            b.generated_packets,
            b.delivered_packets,
            b.dropped_packets,
            b.in_network,
            b.in_source_queues,
            b.latency_mean_ns
        ));
    }
    s
}
