//! What a run is: the data-plane model, the traffic, the measurement and the reconfiguration
//! timing. Every time is in integer picoseconds. [`Config::default`] is the RFTR paper's
//! setting (Montañana et al., ICPADS 2006): 1X SDR links, 58-byte packets, 1 KiB buffers per
//! VL at inputs and outputs, 100 ns routing, virtual cut-through, uniform traffic.

use fabric::Fabric;
use serde::Serialize;

/// Picoseconds per nanosecond.
pub const NS: u64 = 1_000;
/// Picoseconds per microsecond.
pub const US: u64 = 1_000_000;
/// Picoseconds per millisecond.
pub const MS: u64 = 1_000_000_000;

/// Link rates: one rate for every link, or each link's own width × speed from the fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkRate {
    /// Every link at this many picoseconds per data byte.
    Uniform { ps_per_byte: u32 },
    /// Each link at its width × speed data rate (`fabric::Speed::gbps_per_lane`, which is
    /// after 8b/10b or 64b/66b encoding), rounded to whole picoseconds per byte.
    FromFabric,
}

impl LinkRate {
    /// 1X SDR: 2.5 Gbaud, 8b/10b, 2 Gb/s of data: 4 000 ps per byte (the paper's links).
    pub const SDR_1X: LinkRate = LinkRate::Uniform { ps_per_byte: 4000 };
    /// 1X SDR read as 2.5 Gb/s of data (no 8b/10b): 3 200 ps per byte.
    pub const SDR_1X_RAW: LinkRate = LinkRate::Uniform { ps_per_byte: 3200 };
    /// 4X SDR: 8 Gb/s of data.
    pub const SDR_4X: LinkRate = LinkRate::Uniform { ps_per_byte: 1000 };
    /// 4X QDR: 32 Gb/s of data.
    pub const QDR_4X: LinkRate = LinkRate::Uniform { ps_per_byte: 250 };
    /// 4X EDR: 100 Gb/s of data (25.78125 Gbaud per lane, 64b/66b).
    pub const EDR_4X: LinkRate = LinkRate::Uniform { ps_per_byte: 80 };
    /// 4X HDR: 200 Gb/s of data.
    pub const HDR_4X: LinkRate = LinkRate::Uniform { ps_per_byte: 40 };
    /// 4X NDR: 400 Gb/s of data.
    pub const NDR_4X: LinkRate = LinkRate::Uniform { ps_per_byte: 20 };
    /// 4X XDR: 800 Gb/s of data.
    pub const XDR_4X: LinkRate = LinkRate::Uniform { ps_per_byte: 10 };

    /// The presets by name (`1x-sdr`, `1x-sdr-raw`, `4x-sdr`, `4x-qdr`, `4x-edr`, `4x-hdr`,
    /// `4x-ndr`, `4x-xdr`, `fabric`).
    pub fn preset(name: &str) -> Option<LinkRate> {
        Some(match name.to_ascii_lowercase().as_str() {
            "1x-sdr" | "sdr" => Self::SDR_1X,
            "1x-sdr-raw" => Self::SDR_1X_RAW,
            "4x-sdr" => Self::SDR_4X,
            "4x-qdr" | "qdr" => Self::QDR_4X,
            "4x-edr" | "edr" => Self::EDR_4X,
            "4x-hdr" | "hdr" => Self::HDR_4X,
            "4x-ndr" | "ndr" => Self::NDR_4X,
            "4x-xdr" | "xdr" => Self::XDR_4X,
            "fabric" => LinkRate::FromFabric,
            _ => return None,
        })
    }

    pub const PRESETS: &'static [&'static str] = &[
        "1x-sdr",
        "1x-sdr-raw",
        "4x-sdr",
        "4x-qdr",
        "4x-edr",
        "4x-hdr",
        "4x-ndr",
        "4x-xdr",
        "fabric",
    ];
}

/// Packet sizes in bytes.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeDist {
    Fixed(u16),
    /// Uniform over `min..=max`.
    Uniform {
        min: u16,
        max: u16,
    },
    /// One of the sizes, with the given weights.
    Choice(Vec<(u16, f64)>),
}

impl SizeDist {
    /// Mean size in bytes.
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Fixed(b) => *b as f64,
            SizeDist::Uniform { min, max } => (*min as f64 + *max as f64) / 2.0,
            SizeDist::Choice(v) => {
                let w: f64 = v.iter().map(|x| x.1).sum();
                v.iter().map(|&(b, x)| b as f64 * x).sum::<f64>() / w
            }
        }
    }
    /// Largest size in bytes.
    pub fn max(&self) -> u16 {
        match self {
            SizeDist::Fixed(b) => *b,
            SizeDist::Uniform { max, .. } => *max,
            SizeDist::Choice(v) => v.iter().map(|x| x.0).max().unwrap_or(0),
        }
    }
    /// Smallest size in bytes.
    pub fn min(&self) -> u16 {
        match self {
            SizeDist::Fixed(b) => *b,
            SizeDist::Uniform { min, .. } => *min,
            SizeDist::Choice(v) => v.iter().map(|x| x.0).min().unwrap_or(0),
        }
    }
}

/// Where packets go.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Every packet to a host drawn uniformly among the other hosts.
    Uniform,
    /// A random permutation without fixed points, drawn once from the seed: host i always
    /// sends to π(i).
    Permutation,
    /// ORCS `bisect` (as GCC compiles it): a random perfect matching drawn once from the seed,
    /// one direction per pair (the second of each shuffled pair sends to the first); half
    /// the hosts send. `both_ways` gives ORCS `bisect_fb_sym` (every host sends).
    Bisect { both_ways: bool },
    /// A fraction of every host's packets to one host (`hot`, an index into the hosts, or
    /// `None` for the first host), the rest uniform.
    Hotspot { hot: Option<u32>, fraction: f64 },
    /// Fixed flows (source host → destination host), indices into `Fabric::end_ports`.
    Flows(Vec<(u32, u32)>),
}

/// How packets are generated at each host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// One packet per slot (the mean packet's serialization time) with probability = load.
    Bernoulli,
    /// Exponential gaps with mean = mean packet time / load (rounded to the time quantum).
    Poisson,
}

/// What happens to packets that cannot go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unroutable {
    /// Dropped when their LFT entry has no live port (counted by reason).
    Drop,
    /// Held at the head of their input buffer, routed again after every table update.
    Hold,
}

/// The switch and HCA model. Defaults as in the module documentation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Model {
    pub link_rate: LinkRate,
    /// Propagation delay per link.
    pub t_prop: u64,
    /// Routing (LFT lookup) time per packet at a switch input.
    pub t_route: u64,
    /// Header bytes (the LRH) that must arrive before routing may finish.
    pub hdr_bytes: u32,
    /// Input buffer per (port, VL), bytes (a multiple of 64: flow-control blocks).
    pub in_buf_bytes: u32,
    /// Output buffer per (port, VL), bytes.
    pub out_buf_bytes: u32,
    /// Crossbar speed-up (transfer time = serialization / speed-up).
    pub xbar_speedup: u32,
    /// Credit return delay beyond propagation.
    pub t_fc: u64,
    /// Packets routed to a port that has died are dropped (`true`, the default) or kept until
    /// the run ends. Drop stands for a switch's head-of-queue lifetime; keep blocks whatever
    /// waits behind them.
    pub drop_on_dead_port: bool,
    pub unroutable: Unroutable,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            link_rate: LinkRate::SDR_1X,
            t_prop: 0,
            t_route: 100 * NS,
            hdr_bytes: 8,
            in_buf_bytes: 1024,
            out_buf_bytes: 1024,
            xbar_speedup: 1,
            t_fc: 0,
            drop_on_dead_port: true,
            unroutable: Unroutable::Drop,
        }
    }
}

/// Offered traffic.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Traffic {
    pub pattern: Pattern,
    /// Offered load per sending host, as a fraction of its link's data rate (0..=1).
    pub load: f64,
    pub size: SizeDist,
    pub arrival: Arrival,
    /// Generation stops at this time (`None`: at the end of the run).
    pub stop_at: Option<u64>,
    /// Packets injected on top of the generated ones: (time, source end port, destination
    /// end port, bytes), end ports as indices into `Fabric::end_ports` (a trace; with load 0
    /// the only traffic).
    pub trace: Vec<(u64, u32, u32, u16)>,
}

impl Default for Traffic {
    fn default() -> Self {
        Traffic {
            pattern: Pattern::Uniform,
            load: 0.5,
            size: SizeDist::Fixed(58),
            arrival: Arrival::Bernoulli,
            stop_at: None,
            trace: Vec::new(),
        }
    }
}

/// The SM's timing when it repairs a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReconfTiming {
    /// From the failure to the SM knowing (trap).
    pub t_detect: u64,
    /// Round trip of one SMP (one 64-LID LFT block or one SL2VL (in, out) table).
    pub t_smp: u64,
    /// SMPs outstanding at once (OpenSM's `max_wire_smps`).
    pub smp_parallel: u32,
}

impl Default for ReconfTiming {
    fn default() -> Self {
        ReconfTiming {
            t_detect: 10 * US,
            t_smp: 2 * US,
            smp_parallel: 4,
        }
    }
}

/// A complete run configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Config {
    pub model: Model,
    pub traffic: Traffic,
    /// Simulated time.
    pub t_end: u64,
    /// Statistics ignore what happens before this time (the series still shows it).
    pub t_warmup: u64,
    /// Width of the time-series bins.
    pub t_bin: u64,
    /// Period of the deadlock check (the exact wait-for check runs every period while packets
    /// are in the network; a run without progress for a period is checked too).
    pub t_watchdog: u64,
    pub seed: u64,
    pub reconf: ReconfTiming,
    /// Check the credit and packet-conservation invariants at every watchdog tick and at the
    /// end (slow: a scan of every buffer; tests turn it on). A violation panics.
    pub check_invariants: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            model: Model::default(),
            traffic: Traffic::default(),
            t_end: 2 * MS,
            t_warmup: 0,
            t_bin: 10 * US,
            t_watchdog: 50 * US,
            seed: 1,
            reconf: ReconfTiming::default(),
            check_invariants: false,
        }
    }
}

impl Traffic {
    /// The smallest packet of the run (the size distribution's and the trace's; a trace
    /// packet of 0 bytes counts as 1).
    pub fn min_bytes(&self) -> u16 {
        self.trace
            .iter()
            .map(|x| x.3.max(1))
            .chain([self.size.min()])
            .min()
            .unwrap_or(1)
    }

    /// The largest packet of the run.
    pub fn max_bytes(&self) -> u16 {
        self.trace
            .iter()
            .map(|x| x.3)
            .chain([self.size.max()])
            .max()
            .unwrap_or(1)
    }
}

impl Config {
    /// Whether a run of this configuration on `f` can start, as a reason when not. The
    /// simulator checks it first; a caller can check it before routing.
    pub fn check(&self, f: &Fabric) -> Result<(), String> {
        let (m, tr) = (&self.model, &self.traffic);
        if !(0.0..=1.0).contains(&tr.load) {
            return Err(format!("offered load {} is outside 0..=1", tr.load));
        }
        if let Pattern::Hotspot { hot, fraction } = tr.pattern {
            if !(0.0..=1.0).contains(&fraction) {
                return Err(format!("hotspot fraction {fraction} is outside 0..=1"));
            }
            let hosts = f
                .end_ports
                .iter()
                .filter(|&&p| f.attached_switch(p).is_some())
                .count();
            if let Some(h) = hot.filter(|&h| h as usize >= hosts) {
                return Err(format!(
                    "hot host {h}: the fabric has {hosts} hosts (0..={})",
                    hosts.saturating_sub(1)
                ));
            }
        }
        if tr.min_bytes() == 0 {
            return Err("packets must have at least 1 byte".into());
        }
        let max_bytes = tr.max_bytes();
        let cr_max = (max_bytes as u32).div_ceil(64);
        if m.in_buf_bytes / 64 < cr_max || m.out_buf_bytes / 64 < cr_max {
            return Err(format!(
                "buffers of {} / {} bytes cannot hold a {}-byte packet ({} credits of 64 bytes)",
                m.in_buf_bytes, m.out_buf_bytes, max_bytes, cr_max
            ));
        }
        for &(_, a, b, _) in &tr.trace {
            if a as usize >= f.end_ports.len() || b as usize >= f.end_ports.len() {
                return Err(format!(
                    "trace packet {a} -> {b}: the fabric has {} end ports",
                    f.end_ports.len()
                ));
            }
        }
        if cr_max > 255 {
            return Err("packets above 16 KiB are not modelled".into());
        }
        if m.xbar_speedup == 0 || self.t_bin == 0 || self.t_watchdog == 0 {
            return Err("speed-up, bin width and watchdog period must be positive".into());
        }
        Ok(())
    }
}
