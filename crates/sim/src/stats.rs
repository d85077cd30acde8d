//! Measurement: a log-linear latency histogram and the time-series bins.

use serde::Serialize;

/// Sub-buckets per power of two (relative resolution 1/64).
const SUB: u32 = 64;
const SUB_BITS: u32 = 6;

/// A histogram of non-negative integers (picoseconds) with buckets of relative width 1/64:
/// values below 64 are exact, larger ones fall in one of 64 buckets per octave. The mean is
/// exact (from the sum).
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    counts: Vec<u64>,
    n: u64,
    sum: u128,
    min: u64,
    max: u64,
}

fn bucket_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros(); // >= SUB_BITS
    let shift = msb - SUB_BITS;
    let sub = (v >> shift) as u32 - SUB; // 0..SUB
    ((shift + 1) * SUB + sub) as usize
}

/// Smallest value in bucket `b` and the bucket's width.
fn bucket_range(b: usize) -> (u64, u64) {
    let b = b as u32;
    if b < SUB {
        return (b as u64, 1);
    }
    let shift = b / SUB - 1;
    let sub = b % SUB;
    (((SUB + sub) as u64) << shift, 1u64 << shift)
}

impl Histogram {
    pub fn add(&mut self, v: u64) {
        let b = bucket_of(v);
        if b >= self.counts.len() {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.n += 1;
        self.sum += v as u128;
    }
    pub fn count(&self) -> u64 {
        self.n
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    /// The `q`-quantile (0..=1): the middle of the bucket holding it, clamped to the observed
    /// range (exact below 64 and at the extremes).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, w) = bucket_range(b);
                return (lo + w / 2).clamp(self.min, self.max);
            }
        }
        self.max
    }
    /// `n` equal bins from the minimum to the 99.9th percentile (the last bin takes the rest):
    /// bin starts in ns and counts (counts at bucket resolution).
    pub fn bins_ns(&self, n: usize) -> (Vec<f64>, Vec<u64>) {
        if self.n == 0 || n == 0 {
            return (Vec::new(), Vec::new());
        }
        let lo = self.min;
        let hi = self.quantile(0.999).max(lo + 1);
        let w = (hi - lo).div_ceil(n as u64).max(1);
        let mut counts = vec![0u64; n];
        for (b, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let (start, width) = bucket_range(b);
            let mid = (start + width / 2).clamp(self.min, self.max);
            let i = (((mid - lo) / w) as usize).min(n - 1);
            counts[i] += c;
        }
        let edges = (0..n)
            .map(|i| (lo + i as u64 * w) as f64 / 1000.0)
            .collect();
        (edges, counts)
    }

    /// Mean, p50, p99 and max in nanoseconds.
    pub fn summary_ns(&self) -> Latency {
        let ns = |v: f64| v / 1000.0;
        Latency {
            packets: self.n,
            mean: ns(self.mean()),
            p50: ns(self.quantile(0.5) as f64),
            p99: ns(self.quantile(0.99) as f64),
            max: ns(self.max as f64),
        }
    }
}

/// Latency figures in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    pub packets: u64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// Raw counters of one time bin.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct BinAcc {
    pub gen_bytes: u64,
    pub inj_bytes: u64,
    pub del_bytes: u64,
    pub gen_pkts: u64,
    pub inj_pkts: u64,
    pub del_pkts: u64,
    pub drop_pkts: u64,
    /// Drops of packets still in a source queue.
    pub drop_src_pkts: u64,
    pub lat_sum: u128,
}

/// One row of the time series: traffic per sending host as a fraction of its link rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bin {
    /// Start of the bin, µs.
    pub t_us: f64,
    /// Generated.
    pub offered: f64,
    /// Put on the wire by the hosts.
    pub injected: f64,
    /// Delivered.
    pub accepted: f64,
    pub generated_packets: u64,
    pub delivered_packets: u64,
    pub dropped_packets: u64,
    /// Packets in the fabric (buffers and wires) at the end of the bin.
    pub in_network: u64,
    /// Packets waiting in the hosts' source queues at the end of the bin.
    pub in_source_queues: u64,
    /// Mean latency (generation to delivery) of the packets delivered in the bin, ns.
    pub latency_mean_ns: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_and_quantiles_are_close() {
        for v in [0u64, 1, 63, 64, 65, 127, 128, 1000, 232_000, 1 << 40] {
            let (lo, w) = bucket_range(bucket_of(v));
            assert!(lo <= v && v < lo + w, "{v} in [{lo}, {})", lo + w);
        }
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.add(v * 1000);
        }
        assert_eq!(h.count(), 10_000);
        assert!((h.mean() - 5_000_500.0).abs() < 1e-6);
        let p50 = h.quantile(0.5) as f64;
        assert!((p50 / 5_000_000.0 - 1.0).abs() < 0.02, "{p50}");
        let p99 = h.quantile(0.99) as f64;
        assert!((p99 / 9_900_000.0 - 1.0).abs() < 0.02, "{p99}");
        assert_eq!(h.quantile(1.0), 10_000_000);
        let mut one = Histogram::default();
        one.add(364_000);
        assert_eq!(one.quantile(0.5), 364_000, "a single value is exact");
    }
}
