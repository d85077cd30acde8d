//! Turn rules: a routing's deadlock-avoidance rule, asked one turn at a time. An engine that
//! routes by such a rule says so ([`crate::engines::Engine::turn_rule`]), and RFTR builds on it:
//! RFTR joins a prefix and a suffix of existing paths at a switch C; if the turn at C
//! (the prefix's channel into C followed by the suffix's channel out of C) breaks the base
//! routing's rule, the packet moves to the next virtual lane there.

use fabric::{ChannelId, Fabric};

/// Most channel classes a rule may use.
pub const MAX_CLASSES: usize = 64;

/// Whether a turn (arriving on `inc`, leaving on `out`, at the switch between them) is legal
/// in the base routing. Implementations must make every path of the base routing legal, and
/// every set of legal paths deadlock-free within one VL.
///
/// Invariant: legality depends only on the *classes* of the two channels (`class`), so RFTR
/// can keep one best prefix per (join switch, class) instead of one per input channel.
pub trait TurnRule: Send + Sync {
    fn legal(&self, f: &Fabric, inc: ChannelId, out: ChannelId) -> bool;
    /// The channel's class, below [`MAX_CLASSES`]: `legal(a, b)` is a function of
    /// `(class(a), class(b))`.
    fn class(&self, c: ChannelId) -> u8;
    /// A short name for reports.
    fn name(&self) -> &'static str;
}

/// Up*/Down*: a channel is "up" or "down"; a down channel followed by an up channel is the
/// one forbidden turn.
#[derive(Clone, Debug)]
pub struct UpDownRule {
    /// Per channel: true when it goes up.
    up: Vec<bool>,
}

impl UpDownRule {
    /// From a per-channel direction predicate (true = up).
    pub fn from_fn(f: &Fabric, mut is_up: impl FnMut(ChannelId) -> bool) -> Self {
        UpDownRule {
            up: (0..f.links.len() as u32 * 2)
                .map(|c| is_up(ChannelId(c)))
                .collect(),
        }
    }
    /// Whether `c` goes up.
    pub fn is_up(&self, c: ChannelId) -> bool {
        self.up[c.idx()]
    }
}

impl TurnRule for UpDownRule {
    #[inline]
    fn legal(&self, _f: &Fabric, inc: ChannelId, out: ChannelId) -> bool {
        self.up[inc.idx()] || !self.up[out.idx()]
    }
    #[inline]
    fn class(&self, c: ChannelId) -> u8 {
        u8::from(self.up[c.idx()])
    }
    fn name(&self) -> &'static str {
        "updn"
    }
}

/// Dimension-order routing on a mesh: dimensions are taken in increasing order and a
/// dimension, once left or reversed, is never entered again.
#[derive(Clone, Debug)]
pub struct DorRule {
    /// Per channel: (dimension, positive direction); dimension `u8::MAX` for non-mesh links.
    dim: Vec<(u8, bool)>,
}

impl DorRule {
    /// Builds the rule from the generator's coordinates; `None` without coordinates.
    pub fn from_hints(f: &Fabric) -> Option<Self> {
        let coords = &f.hints.coords;
        if coords.len() != f.nodes.len() {
            return None;
        }
        let mut dim = vec![(u8::MAX, true); f.links.len() * 2];
        for (c, d) in dim.iter_mut().enumerate() {
            let ch = ChannelId(c as u32);
            let a = f.port(f.channel_src(ch)).node;
            let b = f.port(f.channel_dst(ch)).node;
            let (ca, cb) = (&coords[a.idx()], &coords[b.idx()]);
            if ca.is_empty() || cb.is_empty() || ca.len() != cb.len() {
                continue;
            }
            let diff: Vec<usize> = (0..ca.len()).filter(|&i| ca[i] != cb[i]).collect();
            if diff.len() == 1 {
                let i = diff[0];
                *d = (i as u8, cb[i] > ca[i]);
            }
        }
        Some(DorRule { dim })
    }
}

impl TurnRule for DorRule {
    #[inline]
    fn legal(&self, _f: &Fabric, inc: ChannelId, out: ChannelId) -> bool {
        let (di, pi) = self.dim[inc.idx()];
        let (d_o, po) = self.dim[out.idx()];
        d_o > di || (d_o == di && po == pi)
    }
    #[inline]
    fn class(&self, c: ChannelId) -> u8 {
        // Non-mesh links (dimension u8::MAX) get the last pair of classes; meshes have at
        // most 6 dimensions here, far below 31, so the map keeps the dimension order.
        let (d, p) = self.dim[c.idx()];
        let d = if d == u8::MAX { 31 } else { d.min(30) };
        d * 2 + u8::from(p)
    }
    fn name(&self) -> &'static str {
        "dor"
    }
}
