//! Layers of paths whose channel dependency graphs stay acyclic.
//!
//! A layer is one VL: a path placed in it adds an edge `c1 → c2` for every two consecutive
//! channels it takes. [`Layers::try_add`] places a path in a layer only if the layer's graph
//! stays acyclic, and otherwise leaves the layer exactly as it was. The check is incremental:
//! each layer keeps a topological order of its vertices (Pearce and Kelly's dynamic
//! topological sort), so an edge that agrees with the order costs O(1) and one that does not
//! searches only the vertices between its ends in the order. Edges are reference-counted per
//! path, so [`Layers::remove`] takes a path out again (the order stays valid).
//!
//! Vertices are dense indices (the caller's channel numbering); a layer allocates its arrays
//! on first use.

/// One layer: a DAG with multiplicities and a topological order. Adjacency is per vertex
/// (a channel's successors are the channels out of one switch: a few dozen at most), so
/// finding an edge is a short scan, not a hash lookup.
#[derive(Clone, Debug, Default)]
struct Layer {
    /// Per vertex: successors, each with how many paths induce the edge.
    succ: Vec<Vec<(u32, u32)>>,
    pred: Vec<Vec<u32>>,
    /// Per vertex u: the v such that u → v is known to close a cycle with the layer's edges
    /// (found when it was the first new edge of a path, i.e. against the layer alone).
    /// Adding edges keeps them closing; taking a path out may not, so [`Layers::remove`]
    /// forgets them.
    closes: Vec<Vec<u32>>,
    /// Vertices with a non-empty `closes` list (to forget them quickly).
    closing: Vec<u32>,
    /// Topological position of each vertex: distinct, not necessarily `0..n`. Positions
    /// below `lo` and from `hi` up are free, so a vertex without predecessors can move to the
    /// front (and one without successors to the back) in O(1).
    ord: Vec<u32>,
    lo: u32,
    hi: u32,
    edges: usize,
    paths: u64,
}

/// Search buffers shared by the layers of one [`Layers`]: the two Pearce–Kelly sets, a stack,
/// the positions being handed out, and visit stamps (`seen[x] == epoch`: visited now).
#[derive(Clone, Debug, Default)]
struct Scratch {
    fwd: Vec<u32>,
    back: Vec<u32>,
    stack: Vec<u32>,
    bstack: Vec<u32>,
    slots: Vec<u32>,
    /// Visit stamps of the forward and the backward search.
    seen: Vec<u32>,
    seen_back: Vec<u32>,
    epoch: u32,
}

impl Scratch {
    /// A fresh stamp; every vertex unvisited.
    fn next_epoch(&mut self, n: usize) -> u32 {
        if self.seen.len() < n {
            self.seen.resize(n, 0);
            self.seen_back.resize(n, 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.seen.iter_mut().for_each(|s| *s = 0);
            self.seen_back.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
        self.epoch
    }
}

/// Where positions start: room below for every vertex that moves to the front.
const ORD_BASE: u32 = 1 << 31;

impl Layer {
    fn ensure(&mut self, n: usize) {
        if self.ord.is_empty() && n > 0 {
            self.succ = vec![Vec::new(); n];
            self.pred = vec![Vec::new(); n];
            self.closes = vec![Vec::new(); n];
            self.ord = (0..n as u32).map(|i| ORD_BASE + i).collect();
            self.lo = ORD_BASE - 1;
            self.hi = ORD_BASE + n as u32;
        }
    }

    /// Adds one reference to edge u → v. False (and nothing changed) when it would close a
    /// cycle; `first_new` says no edge was added before it for the same path, so a refusal
    /// is the layer's alone and is remembered. Returns (fits, new edge).
    fn add_edge(&mut self, u: u32, v: u32, first_new: bool, s: &mut Scratch) -> (bool, bool) {
        if u == v {
            return (false, false);
        }
        let (ui, vi) = (u as usize, v as usize);
        if let Some(e) = self.succ[ui].iter_mut().find(|e| e.0 == v) {
            e.1 += 1;
            return (true, false);
        }
        if self.closes[ui].contains(&v) {
            return (false, false);
        }
        let (ou, ov) = (self.ord[ui], self.ord[vi]);
        if ou > ov {
            // Nothing leads into u: u may go first. Nothing leaves v: v may go last. Either
            // keeps every edge in order (u's all point forward, v's all point into it).
            if self.pred[ui].is_empty() && self.lo > 0 {
                self.ord[ui] = self.lo;
                self.lo -= 1;
            } else if self.succ[vi].is_empty() && self.hi < u32::MAX {
                self.ord[vi] = self.hi;
                self.hi += 1;
            } else if !self.reorder(u, v, ou, ov, s) {
                if first_new {
                    if self.closes[ui].is_empty() {
                        self.closing.push(u);
                    }
                    self.closes[ui].push(v);
                }
                return (false, false);
            }
        }
        self.succ[ui].push((v, 1));
        self.pred[vi].push(u);
        self.edges += 1;
        (true, true)
    }

    /// Pearce–Kelly: vertices reachable from v with order < ord(u) (forward set), and those
    /// reaching u with order > ord(v) (backward set); a path v → u (a cycle) runs through
    /// both. The two searches take turns, one vertex each, so a cycle is found when they meet,
    /// often long before either set is complete. When one search ends without meeting the
    /// other there is no cycle, and the other is completed. Then the two sets are given the
    /// positions they held, backward set first (the sets do not depend on the visiting
    /// order, so neither does the result).
    fn reorder(&mut self, u: u32, v: u32, ou: u32, ov: u32, s: &mut Scratch) -> bool {
        let e = s.next_epoch(self.ord.len());
        let Scratch {
            fwd,
            back,
            stack,
            bstack,
            slots,
            seen,
            seen_back,
            ..
        } = s;
        fwd.clear();
        back.clear();
        stack.clear();
        bstack.clear();
        stack.push(v);
        seen[v as usize] = e;
        bstack.push(u);
        seen_back[u as usize] = e;
        let ord = &self.ord;
        loop {
            let (f_done, b_done) = (stack.is_empty(), bstack.is_empty());
            if f_done && b_done {
                break;
            }
            // forward from v: every vertex on a path to u lies below ord(u)
            if let Some(x) = stack.pop() {
                fwd.push(x);
                for &(y, _) in &self.succ[x as usize] {
                    // met the backward search (u included): a path v → y → u
                    if seen_back[y as usize] == e {
                        return false;
                    }
                    if seen[y as usize] != e && ord[y as usize] < ou {
                        seen[y as usize] = e;
                        stack.push(y);
                    }
                }
            }
            // backward from u, bounded by ord(v)
            if let Some(x) = bstack.pop() {
                back.push(x);
                for &y in &self.pred[x as usize] {
                    // met the forward search (v included): a path v → y → u
                    if seen[y as usize] == e {
                        return false;
                    }
                    if seen_back[y as usize] != e && ord[y as usize] > ov {
                        seen_back[y as usize] = e;
                        bstack.push(y);
                    }
                }
            }
        }
        // The positions both sets hold, in order (a merge of the two sorted sets); backward
        // set (by order) then forward set.
        let ord = &mut self.ord;
        fwd.sort_unstable_by_key(|x| ord[*x as usize]);
        back.sort_unstable_by_key(|x| ord[*x as usize]);
        slots.clear();
        let (mut i, mut j) = (0, 0);
        while i < fwd.len() || j < back.len() {
            let a = fwd.get(i).map_or(u32::MAX, |&x| ord[x as usize]);
            let b = back.get(j).map_or(u32::MAX, |&x| ord[x as usize]);
            if a < b {
                slots.push(a);
                i += 1;
            } else {
                slots.push(b);
                j += 1;
            }
        }
        for (&x, &p) in back.iter().chain(fwd.iter()).zip(slots.iter()) {
            ord[x as usize] = p;
        }
        true
    }

    /// Drops one reference to edge u → v (which must exist); true when the edge is gone.
    fn remove_edge(&mut self, u: u32, v: u32) -> bool {
        let (ui, vi) = (u as usize, v as usize);
        let Some(i) = self.succ[ui].iter().position(|e| e.0 == v) else {
            return false;
        };
        self.succ[ui][i].1 -= 1;
        if self.succ[ui][i].1 > 0 {
            return false;
        }
        self.succ[ui].swap_remove(i);
        let p = &mut self.pred[vi];
        if let Some(j) = p.iter().position(|&x| x == u) {
            p.swap_remove(j);
        }
        self.edges -= 1;
        true
    }

    /// Forgets every known closing edge.
    fn forget_closing(&mut self) {
        for &u in &self.closing {
            self.closes[u as usize].clear();
        }
        self.closing.clear();
    }
}

/// Layers over `n` vertices. See the module documentation.
#[derive(Clone, Debug)]
pub struct Layers {
    n: usize,
    layers: Vec<Layer>,
    scratch: Scratch,
}

impl Layers {
    /// `count` empty layers over vertices `0..n`.
    pub fn new(n: usize, count: usize) -> Self {
        Layers {
            n,
            layers: vec![Layer::default(); count],
            scratch: Scratch::default(),
        }
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// True when there are no layers.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Paths currently in layer `l`.
    pub fn paths(&self, l: usize) -> u64 {
        self.layers[l].paths
    }

    /// Distinct dependency edges in layer `l`.
    pub fn edges(&self, l: usize) -> usize {
        self.layers[l].edges
    }

    /// Places the path through vertices `chans` (in order) in layer `l` if the layer stays
    /// acyclic; otherwise changes nothing and returns false. A path revisiting a vertex right
    /// away (`c → c`) never fits.
    pub fn try_add(&mut self, l: usize, chans: &[u32]) -> bool {
        let n = self.n;
        let layer = &mut self.layers[l];
        layer.ensure(n);
        let mut fresh = true;
        for (i, w) in chans.windows(2).enumerate() {
            let (fits, new) = layer.add_edge(w[0], w[1], fresh, &mut self.scratch);
            if !fits {
                for w in chans[..i + 1].windows(2) {
                    layer.remove_edge(w[0], w[1]);
                }
                return false;
            }
            fresh &= !new;
        }
        layer.paths += 1;
        true
    }

    /// Adds one reference to the single dependency `u → v` in layer `l` if the layer stays
    /// acyclic; otherwise changes nothing and returns false. A refusal is remembered until
    /// an edge leaves the layer (while edges are only added, it stays a refusal). Unlike
    /// [`Layers::try_add`] it counts no path.
    pub fn try_add_edge(&mut self, l: usize, u: u32, v: u32) -> bool {
        let n = self.n;
        let layer = &mut self.layers[l];
        layer.ensure(n);
        layer.add_edge(u, v, true, &mut self.scratch).0
    }

    /// True when `u → v` is remembered as closing a cycle in layer `l` (a refusal of
    /// [`Layers::try_add_edge`] not forgotten since); false says nothing.
    pub fn refused(&self, l: usize, u: u32, v: u32) -> bool {
        self.layers[l]
            .closes
            .get(u as usize)
            .is_some_and(|c| c.contains(&v))
    }

    /// Drops one reference to `u → v`, added by [`Layers::try_add_edge`]. Remembered
    /// refusals stay: a refused edge may fit now, so later refusals may be too cautious, never
    /// wrong.
    pub fn remove_edge(&mut self, l: usize, u: u32, v: u32) {
        self.layers[l].remove_edge(u, v);
    }

    /// Forgets the refusals remembered in layer `l`: after [`Layers::remove_edge`] took
    /// edges out, a refused edge may fit again.
    pub fn forget_refusals(&mut self, l: usize) {
        self.layers[l].forget_closing();
    }

    /// Takes a path placed with [`Layers::try_add`] out of layer `l`.
    pub fn remove(&mut self, l: usize, chans: &[u32]) {
        let layer = &mut self.layers[l];
        let mut gone = false;
        for w in chans.windows(2) {
            gone |= layer.remove_edge(w[0], w[1]);
        }
        if gone {
            // An edge that closed a cycle may not any more.
            layer.forget_closing();
        }
        layer.paths = layer.paths.saturating_sub(1);
    }

    /// The first layer from `from` on where the path fits, placing it there.
    pub fn first_fit(&mut self, from: usize, chans: &[u32]) -> Option<usize> {
        (from..self.layers.len()).find(|&l| self.try_add(l, chans))
    }

    /// Adds one more empty layer.
    pub fn push_layer(&mut self) {
        self.layers.push(Layer::default());
    }

    /// Every distinct edge of layer `l` as (tail, head), tails ascending.
    pub fn edge_list(&self, l: usize) -> Vec<(u32, u32)> {
        let layer = &self.layers[l];
        let mut out = Vec::with_capacity(layer.edges);
        for (u, s) in layer.succ.iter().enumerate() {
            out.extend(s.iter().map(|&(v, _)| (u as u32, v)));
        }
        out
    }

    /// True when layer `l`'s graph is acyclic (an independent check by Kahn's algorithm, for
    /// tests and assertions).
    pub fn is_acyclic(&self, l: usize) -> bool {
        let layer = &self.layers[l];
        if layer.ord.is_empty() {
            return true;
        }
        let n = layer.succ.len();
        let mut indeg = vec![0u32; n];
        for s in &layer.succ {
            for &(v, _) in s {
                indeg[v as usize] += 1;
            }
        }
        let mut q: Vec<u32> = (0..n as u32).filter(|&v| indeg[v as usize] == 0).collect();
        let mut seen = 0;
        while let Some(x) = q.pop() {
            seen += 1;
            for &(y, _) in &layer.succ[x as usize] {
                indeg[y as usize] -= 1;
                if indeg[y as usize] == 0 {
                    q.push(y);
                }
            }
        }
        seen == n
    }
}

/// Where [`place`] put each group of paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Per group: its layer.
    pub layer: Vec<u8>,
    /// Layers used (one past the highest layer of any group).
    pub used: usize,
    /// Paths per layer.
    pub paths: Vec<u64>,
}

/// First fit: every group of paths (each path a list of vertices, e.g. channels) goes, whole,
/// into the lowest layer that stays acyclic with it; a new layer is opened when none does, up
/// to `limit` layers. Groups are placed in the order given; `path(g)` lists the paths of group
/// `g`. Returns the placement and the layers (for further moves), or the group that fit in no
/// layer below the limit (a group that fits no empty layer either, because a path revisits a
/// vertex right away, also ends the placement there).
pub fn place<'p>(
    n: usize,
    groups: usize,
    limit: usize,
    path: impl Fn(usize, &mut Vec<&'p [u32]>),
) -> Result<(Placement, Layers), usize> {
    let mut layers = Layers::new(n, 1);
    let mut layer = vec![0u8; groups];
    let mut buf: Vec<&[u32]> = Vec::new();
    let limit = limit.min(u8::MAX as usize);
    for (g, slot) in layer.iter_mut().enumerate() {
        buf.clear();
        path(g, &mut buf);
        let mut l = 0;
        loop {
            if l == limit {
                return Err(g);
            }
            if l == layers.len() {
                layers.push_layer();
            }
            if layers.try_add_all(l, &buf) {
                break;
            }
            if layers.paths(l) == 0 {
                // Not even an empty layer takes it.
                return Err(g);
            }
            l += 1;
        }
        *slot = l as u8;
    }
    let used = layer.iter().map(|&l| l as usize + 1).max().unwrap_or(0);
    let paths = (0..used).map(|l| layers.paths(l)).collect();
    Ok((Placement { layer, used, paths }, layers))
}

impl Layers {
    /// Places every path of a group in layer `l`, or none of them (the layer unchanged).
    pub fn try_add_all(&mut self, l: usize, group: &[&[u32]]) -> bool {
        for (i, p) in group.iter().enumerate() {
            if !self.try_add(l, p) {
                for q in &group[..i] {
                    self.remove(l, q);
                }
                return false;
            }
        }
        true
    }
}

/// Splits `used` layers over `budget` VLs the way OpenSM's DFSSSP does: each spare VL goes to
/// the layer with the most paths per VL it has so far (ties: the lower layer). Returns per
/// layer (first VL, VL count); the VLs of a layer are consecutive, layer 0 first.
pub fn split_layers(paths: &[u64], budget: usize) -> Vec<(u8, u8)> {
    let used = paths.len();
    let mut split = vec![1u64; used];
    for _ in used..budget.max(used) {
        let best = (0..used)
            .max_by(|&a, &b| {
                // paths[a]/split[a] vs paths[b]/split[b]; the lower index wins ties.
                (paths[a] * split[b])
                    .cmp(&(paths[b] * split[a]))
                    .then(b.cmp(&a))
            })
            .unwrap_or(0);
        if let Some(s) = split.get_mut(best) {
            *s += 1;
        }
    }
    let mut first = 0u8;
    split
        .iter()
        .map(|&s| {
            let v = (first, s as u8);
            first += s as u8;
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::rng::Rng;

    #[test]
    fn first_fit_groups_and_splits() {
        // The ring of four: three groups fit layer 0, the fourth closes the cycle.
        let paths: Vec<Vec<u32>> = (0..4).map(|i| vec![i, (i + 1) % 4]).collect();
        let (p, layers) = place(4, 4, 8, |g, out| out.push(&paths[g])).unwrap();
        assert_eq!(p.layer, vec![0, 0, 0, 1]);
        assert_eq!((p.used, p.paths.clone()), (2, vec![3, 1]));
        assert!(layers.is_acyclic(0) && layers.is_acyclic(1));
        // A group of two that closes the ring with what layer 0 holds goes up whole.
        let (p, _) = place(4, 2, 8, |g, out| {
            let (a, b) = if g == 0 { (0, 1) } else { (2, 3) };
            out.push(&paths[a]);
            out.push(&paths[b]);
        })
        .unwrap();
        assert_eq!(p.layer, vec![0, 1]);
        // With one layer allowed, the fourth path of the ring is where it stops.
        assert_eq!(place(4, 4, 1, |g, out| out.push(&paths[g])).err(), Some(3));
        // 3 + 1 paths over 8 VLs: the spare VLs go to the busier layer first.
        assert_eq!(split_layers(&[3, 1], 8), vec![(0, 6), (6, 2)]);
        assert_eq!(split_layers(&[3, 1], 2), vec![(0, 1), (1, 1)]);
        assert_eq!(split_layers(&[5], 3), vec![(0, 3)]);
    }

    #[test]
    fn a_ring_needs_two_layers_and_removal_frees_the_first() {
        // Four channels around a ring; paths of two hops each close the ring together.
        let paths: Vec<Vec<u32>> = (0..4).map(|i| vec![i, (i + 1) % 4]).collect();
        let mut l = Layers::new(4, 2);
        let placed: Vec<usize> = paths.iter().map(|p| l.first_fit(0, p).unwrap()).collect();
        assert_eq!(
            placed,
            vec![0, 0, 0, 1],
            "the fourth dependency closes the cycle"
        );
        assert!(l.is_acyclic(0) && l.is_acyclic(1));
        assert_eq!((l.paths(0), l.paths(1)), (3, 1));
        l.remove(0, &paths[0]);
        assert!(l.try_add(0, &paths[3]), "without 0 -> 1 the ring is open");
        assert!(!l.try_add(0, &paths[0]));
        assert_eq!(l.edges(0), 3);
    }

    #[test]
    fn failed_adds_leave_the_layer_unchanged() {
        let mut l = Layers::new(5, 1);
        assert!(l.try_add(0, &[0, 1, 2]));
        assert!(l.try_add(0, &[2, 3]));
        // 3 -> 4 fits, 4 -> 0 closes 0 -> 1 -> 2 -> 3 -> 4 -> 0: the whole path is refused
        // and 3 -> 4 rolled back.
        assert!(!l.try_add(0, &[3, 4, 0]));
        assert_eq!(l.edges(0), 3);
        assert!(l.try_add(0, &[4, 0]), "4 -> 0 alone is fine");
        assert!(!l.try_add(0, &[3, 4]));
        assert!(!l.try_add(0, &[1, 1]), "a self-loop never fits");
    }

    /// Against a brute-force check: a random sequence of path insertions and removals, each
    /// insert accepted exactly when the layer's graph with the path stays acyclic.
    #[test]
    fn agrees_with_recomputing_acyclicity() {
        for seed in 0..200u64 {
            let mut rng = Rng::new(seed);
            let n = 3 + rng.below(12) as usize;
            let mut l = Layers::new(n, 1);
            let mut inside: Vec<Vec<u32>> = Vec::new();
            for _ in 0..60 {
                if !inside.is_empty() && rng.below(4) == 0 {
                    let i = rng.below(inside.len() as u64) as usize;
                    let p = inside.swap_remove(i);
                    l.remove(0, &p);
                    continue;
                }
                let len = 2 + rng.below(3) as usize;
                let p: Vec<u32> = (0..len).map(|_| rng.below(n as u64) as u32).collect();
                let mut edges: Vec<(u32, u32)> = inside
                    .iter()
                    .chain(std::iter::once(&p))
                    .flat_map(|q| q.windows(2).map(|w| (w[0], w[1])))
                    .collect();
                edges.sort_unstable();
                edges.dedup();
                let acyclic = {
                    let mut b = Layers::new(n, 1);
                    let mut ok = edges.iter().all(|&(a, c)| a != c);
                    if ok {
                        let lay = &mut b.layers[0];
                        lay.ensure(n);
                        for &(a, c) in &edges {
                            lay.succ[a as usize].push((c, 1));
                        }
                        ok = b.is_acyclic(0);
                    }
                    ok
                };
                let got = l.try_add(0, &p);
                assert_eq!(got, acyclic, "seed {seed}: path {p:?}");
                if got {
                    inside.push(p);
                }
                assert!(l.is_acyclic(0), "seed {seed}");
                // the kept order is topological, with distinct positions
                let lay = &l.layers[0];
                let mut pos = lay.ord.clone();
                pos.sort_unstable();
                pos.dedup();
                assert_eq!(pos.len(), lay.ord.len(), "seed {seed}: positions repeat");
                for (a, out) in lay.succ.iter().enumerate() {
                    for &(c, _) in out {
                        assert!(lay.ord[a] < lay.ord[c as usize], "seed {seed}: {a} -> {c}");
                    }
                }
            }
        }
    }
}
