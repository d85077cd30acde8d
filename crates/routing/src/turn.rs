//! Turn rules: a routing's deadlock-avoidance rule, asked one turn at a time. An engine that
//! routes by such a rule says so ([`crate::engines::Engine::rftr_base`]), and RFTR builds on it:
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
    /// The rule as up*/down* directions, when it is one (multicast trees follow it).
    fn as_up_down(&self) -> Option<&UpDownRule> {
        None
    }
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
    fn as_up_down(&self) -> Option<&UpDownRule> {
        Some(self)
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
        Some(Self::from_node_coords(f, |n| coords[n.idx()].as_slice()))
    }

    /// Builds the rule from coordinates per switch index (e.g. inferred from the graph).
    pub fn from_switch_coords(f: &Fabric, coords: &[Vec<u32>]) -> Self {
        Self::from_node_coords(f, |n| {
            f.switch_of(n)
                .and_then(|s| coords.get(s.idx()))
                .map_or(&[][..], |c| c.as_slice())
        })
    }

    fn from_node_coords<'c>(f: &Fabric, coords: impl Fn(fabric::NodeId) -> &'c [u32]) -> Self {
        let mut dim = vec![(u8::MAX, true); f.links.len() * 2];
        for (c, d) in dim.iter_mut().enumerate() {
            let ch = ChannelId(c as u32);
            let a = f.port(f.channel_src(ch)).node;
            let b = f.port(f.channel_dst(ch)).node;
            let (ca, cb) = (coords(a), coords(b));
            if ca.is_empty() || cb.is_empty() || ca.len() != cb.len() {
                continue;
            }
            let diff: Vec<usize> = (0..ca.len()).filter(|&i| ca[i] != cb[i]).collect();
            if diff.len() == 1 {
                let i = diff[0];
                *d = (i as u8, cb[i] > ca[i]);
            }
        }
        DorRule { dim }
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

/// Every turn is legal, one class. Not a deadlock rule by itself: RFTR uses it over a base
/// whose VLs it leaves alone ([`Base::FreshVls`]), where the acyclicity of each new VL is
/// checked path by path.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllTurns;

impl TurnRule for AllTurns {
    #[inline]
    fn legal(&self, _f: &Fabric, _inc: ChannelId, _out: ChannelId) -> bool {
        true
    }
    #[inline]
    fn class(&self, _c: ChannelId) -> u8 {
        0
    }
    fn name(&self) -> &'static str {
        "fresh VLs"
    }
}

/// How RFTR may repair a base routing.
#[derive(Clone)]
pub enum Base<'f> {
    /// Every base path obeys this turn rule within one VL: a repaired path changes VL (up)
    /// exactly where it takes a turn the rule forbids, so it can share the base's VLs.
    Turns(std::sync::Arc<dyn TurnRule + 'f>),
    /// The base keeps its own VLs and SLs, whatever scheme made them deadlock-free (layers,
    /// hop-incremented VLs): repaired paths go, whole, on VLs above the highest the base
    /// uses, each such VL kept acyclic by an incremental check, with SLs of their own.
    FreshVls,
}

impl std::fmt::Debug for Base<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Base::Turns(r) => write!(f, "Turns({})", r.name()),
            Base::FreshVls => f.write_str("FreshVls"),
        }
    }
}

impl<'f> From<std::sync::Arc<dyn TurnRule + 'f>> for Base<'f> {
    fn from(r: std::sync::Arc<dyn TurnRule + 'f>) -> Self {
        Base::Turns(r)
    }
}

impl<'f, R: TurnRule + 'f> From<std::sync::Arc<R>> for Base<'f> {
    fn from(r: std::sync::Arc<R>) -> Self {
        Base::Turns(r)
    }
}
