//! `fabroute sim`'s arguments, their parsers (times, loads, sizes, repair schemes) and the
//! simulator configuration they give.

use crate::args::BudgetArgs;
use crate::args::RepairArgs;
use anyhow::{Context, Result};
use fabric::Fabric;
use sim::{Arrival, Config, LinkRate, Pattern, Scheme, SizeDist, Unroutable};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  fabroute sim ring.net -R minhop --load 0.8 --time 2ms -o d1a
  fabroute sim t.net -R updn --lmc 2 --load 0.05 --time 3ms --warmup 0.5ms \\
      --fail link:S_3_3/3 --fail-at 1ms --repair rftr,full-static,full-dynamic -o e1
  fabroute sim subnet.lst --lfts opensm-lfts.dump --load 0.1:1.0:0.1 -o sweep

Times take a unit: ps, ns, us, ms, s. Exit status 1 when a run deadlocked.")]
pub struct Args {
    /// Fabric file (OpenSM's opensm-subnet.lst with --lfts from OpenSM: it carries the LIDs).
    pub fabric: PathBuf,
    /// Route with this engine (or a comma-separated chain; a single engine with --repair).
    #[arg(short = 'R', long, conflicts_with = "lfts")]
    pub engine: Option<String>,
    /// LFTs from a file instead: opensm-lfts.dump / -U file / ibroute output, or opensm.fdbs.
    #[arg(long, required_unless_present = "engine")]
    pub lfts: Option<PathBuf>,
    /// SL2VL tables (opensm-sl2vl.dump), with --lfts.
    #[arg(long, requires = "lfts")]
    pub sl2vl: Option<PathBuf>,
    /// Path SLs (ibdmchk's PSL format), with --lfts.
    #[arg(long, requires = "lfts")]
    pub psl: Option<PathBuf>,
    /// LMC: 2^LMC LIDs per end port (reassigns LIDs; RFTR needs LMC >= 1 for virtual LIDs;
    /// default 2 with --repair rftr, else the fabric's; with --lfts, as `check --lmc`).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub lmc: Option<u8>,
    /// Root switch GUID file (updn, ftree).
    #[arg(short = 'a', long)]
    pub roots: Option<PathBuf>,
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Replace the path SLs and SL2VL tables by a dateline on 2 VLs (tori with generator
    /// coordinates, dimension-ordered shortest paths: minhop on a ring, dor on a torus).
    #[arg(long)]
    pub dateline: bool,
    /// Replace the path SLs and SL2VL tables by hop-incremented VLs over the same LFTs (the
    /// k-th switch-to-switch hop on VL k, as `-R hopvl` does over SSSP's paths): needs the
    /// longest path's hop count in VLs (`--max-vls`). Deadlock-free whatever the paths.
    #[arg(long, conflicts_with = "dateline")]
    pub hop_vls: bool,

    /// Offered load per sending host (fraction of link rate): X, a list X,Y,.., or a sweep
    /// FROM:TO:STEP (points run in parallel).
    #[arg(long, default_value = "0.5")]
    pub load: String,
    /// Traffic pattern.
    #[arg(long, value_enum, default_value_t = PatternArg::Uniform)]
    pub pattern: PatternArg,
    /// Hotspot: the hot host (end-port name or index among the hosts; default the first).
    #[arg(long)]
    pub hot: Option<String>,
    /// Hotspot: fraction of every host's packets sent to the hot host.
    #[arg(long, default_value_t = 0.1)]
    pub hot_fraction: f64,
    /// Packet size in bytes: N, MIN:MAX (uniform), or B@W,B@W (weights).
    #[arg(long, default_value = "58")]
    pub size: String,
    /// Packet generation.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Bernoulli)]
    pub arrival: ArrivalArg,
    /// Simulated time.
    #[arg(long, default_value = "2ms")]
    pub time: String,
    /// Statistics start here (the series shows the warmup too).
    #[arg(long, default_value = "0")]
    pub warmup: String,
    /// Width of the time-series bins.
    #[arg(long, default_value = "10us")]
    pub bin: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Link rates: 1x-sdr (4 ns/byte, the RFTR paper's), 1x-sdr-raw, 4x-sdr, 4x-qdr, 4x-edr,
    /// 4x-hdr, 4x-ndr, 4x-xdr, or fabric (each link's width x speed).
    #[arg(long, default_value = "1x-sdr")]
    pub rate: String,
    /// Routing time per packet at a switch.
    #[arg(long, default_value = "100ns")]
    pub t_route: String,
    /// Propagation delay per link.
    #[arg(long, default_value = "0")]
    pub t_prop: String,
    /// Input and output buffer per (port, VL), bytes (multiples of 64).
    #[arg(long, default_value_t = 1024)]
    pub buffer: u32,
    /// Output buffer per (port, VL) when it differs from --buffer.
    #[arg(long)]
    pub out_buffer: Option<u32>,
    /// Crossbar speed-up.
    #[arg(long, default_value_t = 1)]
    pub speedup: u32,
    /// Packets whose LFT entry leads nowhere: dropped, or held until a table update.
    #[arg(long, value_enum, default_value_t = UnroutableArg::Drop)]
    pub unroutable: UnroutableArg,
    /// Deadlock check period.
    #[arg(long, default_value = "50us")]
    pub watchdog: String,

    /// A failure: link:SWITCH/PORT or switch:SWITCH (name, 0x GUID, or a node description
    /// one switch has).
    #[arg(long)]
    pub fail: Option<String>,
    /// When it fails.
    #[arg(long, default_value = "1ms", requires = "fail")]
    pub fail_at: String,
    /// Repair schemes, comma-separated, each run on the same traffic and overlaid: none,
    /// rftr, full-static, full-dynamic.
    #[arg(long, default_value = "none", requires = "fail")]
    pub repair: String,
    /// From the failure to the SM knowing.
    #[arg(long, default_value = "10us")]
    pub t_detect: String,
    /// Round trip of one SMP (an LFT block or an SL2VL row).
    #[arg(long, default_value = "2us")]
    pub t_smp: String,
    /// SMPs outstanding at once.
    #[arg(long, default_value_t = 4)]
    pub smp_parallel: u32,
    /// The SM's routing time: `measured` (this run's RFTR repair or engine time) or a time.
    #[arg(long, default_value = "measured")]
    pub t_compute: String,
    #[command(flatten)]
    pub rftr: RepairArgs,

    /// Output directory.
    #[arg(short, long)]
    pub output: PathBuf,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternArg {
    Uniform,
    Permutation,
    /// ORCS bisect: a random perfect matching, one direction per pair.
    Bisect,
    /// ORCS bisect_fb_sym: both directions.
    BisectFb,
    Hotspot,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrivalArg {
    Bernoulli,
    Poisson,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnroutableArg {
    Drop,
    Hold,
}

/// A time with a unit (`ps`, `ns`, `us`/`µs`, `ms`, `s`; `0` alone is allowed), in ps.
pub fn parse_time(s: &str) -> Result<u64> {
    let t = s.trim();
    if t == "0" {
        return Ok(0);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .with_context(|| format!("{s:?}: a time needs a unit (ps, ns, us, ms, s)"))?;
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .with_context(|| format!("{s:?}: {num:?} is not a number"))?;
    let mul = match unit.trim() {
        "ps" => 1.0,
        "ns" => 1e3,
        "us" | "µs" => 1e6,
        "ms" => 1e9,
        "s" => 1e12,
        u => crate::usage_bail!("{s:?}: unknown time unit {u:?} (ps, ns, us, ms, s)"),
    };
    Ok((v * mul).round() as u64)
}

/// `X`, `X,Y,...` or `FROM:TO:STEP`.
pub fn parse_loads(s: &str) -> Result<Vec<f64>> {
    let num = |x: &str| -> Result<f64> {
        x.trim()
            .parse::<f64>()
            .with_context(|| format!("--load {s:?}: {x:?} is not a number"))
    };
    let v = if let Some((a, rest)) = s.split_once(':') {
        let (b, step) = rest
            .split_once(':')
            .with_context(|| format!("--load {s:?}: expected FROM:TO:STEP"))?;
        let (a, b, step) = (num(a)?, num(b)?, num(step)?);
        if step <= 0.0 || b < a {
            crate::usage_bail!("--load {s:?}: need FROM <= TO and STEP > 0");
        }
        let n = ((b - a) / step + 1e-9).floor() as usize;
        (0..=n)
            .map(|i| ((a + i as f64 * step) * 1e9).round() / 1e9)
            .collect()
    } else {
        s.split(',').map(num).collect::<Result<Vec<_>>>()?
    };
    if let Some(x) = v.iter().find(|x| !(0.0..=1.0).contains(*x)) {
        crate::usage_bail!("--load {x} is outside 0..=1 (a fraction of the link rate)");
    }
    Ok(v)
}

/// `N`, `MIN:MAX` or `B@W,B@W,...`.
pub fn parse_size(s: &str) -> Result<SizeDist> {
    let b = |x: &str| -> Result<u16> {
        x.trim()
            .parse::<u16>()
            .with_context(|| format!("--size {s:?}: {x:?} is not a byte count"))
    };
    Ok(if let Some((lo, hi)) = s.split_once(':') {
        let (min, max) = (b(lo)?, b(hi)?);
        if min == 0 || max < min {
            crate::usage_bail!("--size {s:?}: need 1 <= MIN <= MAX");
        }
        SizeDist::Uniform { min, max }
    } else if s.contains('@') {
        let mut v = Vec::new();
        for part in s.split(',') {
            let (x, w) = part
                .split_once('@')
                .with_context(|| format!("--size {s:?}: expected B@W,B@W"))?;
            let w: f64 = w
                .trim()
                .parse()
                .with_context(|| format!("--size {s:?}: weight {w:?}"))?;
            v.push((b(x)?, w));
        }
        SizeDist::Choice(v)
    } else {
        SizeDist::Fixed(b(s)?)
    })
}

pub(super) fn schemes(s: &str) -> Result<Vec<Option<Scheme>>> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| {
            Ok(match x.trim() {
                "none" => None,
                "rftr" => Some(Scheme::Rftr),
                "full-static" => Some(Scheme::FullStatic),
                "full-dynamic" => Some(Scheme::FullDynamic),
                o => crate::usage_bail!(
                    "--repair {o:?}: expected none, rftr, full-static or full-dynamic"
                ),
            })
        })
        .collect()
}

/// The simulator configuration the arguments give, but for the load (each run's own); `fault`
/// when a failure is asked for at `fail_at`.
pub(super) fn config(a: &Args, f: &Fabric, fault: bool, fail_at: u64) -> Result<Config> {
    let rate = LinkRate::preset(&a.rate).with_context(|| {
        format!(
            "--rate {:?}: one of {}",
            a.rate,
            LinkRate::PRESETS.join(", ")
        )
    })?;
    let hosts: Vec<u32> = (0..f.end_ports.len() as u32)
        .filter(|&e| f.attached_switch(f.end_ports[e as usize]).is_some())
        .collect();
    let hot = match &a.hot {
        None => None,
        Some(h) => Some(match h.parse::<u32>() {
            Ok(i) => i,
            Err(_) => hosts
                .iter()
                .position(|&e| f.node(f.port(f.end_ports[e as usize]).node).name == *h)
                .with_context(|| format!("--hot {h:?}: no host of that name"))?
                as u32,
        }),
    };
    let pattern = match a.pattern {
        PatternArg::Uniform => Pattern::Uniform,
        PatternArg::Permutation => Pattern::Permutation,
        PatternArg::Bisect => Pattern::Bisect { both_ways: false },
        PatternArg::BisectFb => Pattern::Bisect { both_ways: true },
        PatternArg::Hotspot => Pattern::Hotspot {
            hot,
            fraction: a.hot_fraction,
        },
    };
    let mut base_cfg = Config {
        t_end: parse_time(&a.time)?,
        t_warmup: parse_time(&a.warmup)?,
        t_bin: parse_time(&a.bin)?,
        t_watchdog: parse_time(&a.watchdog)?,
        seed: a.seed,
        ..Config::default()
    };
    base_cfg.traffic.pattern = pattern;
    base_cfg.traffic.size = parse_size(&a.size)?;
    base_cfg.traffic.arrival = match a.arrival {
        ArrivalArg::Bernoulli => Arrival::Bernoulli,
        ArrivalArg::Poisson => Arrival::Poisson,
    };
    let m = &mut base_cfg.model;
    m.link_rate = rate;
    m.t_route = parse_time(&a.t_route)?;
    m.t_prop = parse_time(&a.t_prop)?;
    m.in_buf_bytes = a.buffer;
    m.out_buf_bytes = a.out_buffer.unwrap_or(a.buffer);
    m.xbar_speedup = a.speedup;
    m.unroutable = match a.unroutable {
        UnroutableArg::Drop => Unroutable::Drop,
        UnroutableArg::Hold => Unroutable::Hold,
    };
    base_cfg.reconf.t_detect = parse_time(&a.t_detect)?;
    base_cfg.reconf.t_smp = parse_time(&a.t_smp)?;
    base_cfg.reconf.smp_parallel = a.smp_parallel;
    if base_cfg.t_warmup >= base_cfg.t_end {
        crate::usage_bail!("--warmup must end before --time");
    }
    if fault && fail_at >= base_cfg.t_end {
        crate::usage_bail!("--fail-at must be before --time");
    }
    Ok(base_cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_loads_and_sizes_parse() {
        assert_eq!(parse_time("2ms").unwrap(), 2_000_000_000);
        assert_eq!(parse_time("0.5ms").unwrap(), 500_000_000);
        assert_eq!(parse_time("10us").unwrap(), 10_000_000);
        assert_eq!(parse_time("100ns").unwrap(), 100_000);
        assert_eq!(parse_time("0").unwrap(), 0);
        assert!(parse_time("10").is_err());
        assert!(parse_time("3 parsecs").is_err());
        assert_eq!(parse_loads("0.1:1.0:0.1").unwrap().len(), 10);
        assert_eq!(parse_loads("0.1:1.0:0.1").unwrap()[9], 1.0);
        assert_eq!(parse_loads("0.2,0.4").unwrap(), vec![0.2, 0.4]);
        assert!(parse_loads("1.5").is_err());
        assert_eq!(parse_size("58").unwrap(), SizeDist::Fixed(58));
        assert_eq!(
            parse_size("20:300").unwrap(),
            SizeDist::Uniform { min: 20, max: 300 }
        );
        assert_eq!(
            parse_size("58@0.9,2048@0.1").unwrap(),
            SizeDist::Choice(vec![(58, 0.9), (2048, 0.1)])
        );
        assert!(parse_size("0:4").is_err());
        assert_eq!(
            schemes("rftr,none").unwrap(),
            vec![Some(Scheme::Rftr), None]
        );
        assert!(schemes("reboot").is_err());
    }
}
