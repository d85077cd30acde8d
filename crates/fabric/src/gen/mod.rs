//! Synthetic topology generators.
//!
//! Every generator is deterministic (randomised ones take a seed and use [`crate::rng::Rng`]) and
//! returns `Result<Fabric, GenError>`: bad parameters never panic, they give a [`GenError`] whose
//! message names the parameter.
//!
//! # GUIDs, names and ports (ibsim compatibility)
//! A generated fabric, written as an ibsim net file and loaded by ibsim/OpenSM, has the same
//! GUIDs as the generated [`Fabric`], because nodes are created in ibsim's order and numbered by
//! ibsim's rules (the same rules as `tools/gen_topo.py`):
//! - all switches first: switch `i` gets node GUID `0x200000 + i` (port 0 GUID = node GUID);
//! - then the HCAs, each with one port: HCA `j` gets node GUID `0x100000 + 2j` and port GUID
//!   `0x100000 + 2j + 1`. System image GUID = node GUID.
//!
//! Node names (= node descriptions) tell where a node sits and follow gen_topo.py where it has the
//! topology; port layouts too (see each generator). The one exception: SHARP aggregation nodes
//! ([`superpod`]) are described as `Mellanox Technologies Aggregation Node`, as on real switches,
//! and named after their switch (names must be unique). A switch declares as many ports as the
//! highest port number it uses (at least 1), unless [`GenOptions::radix`] says more. Links are 4x SDR
//! unless [`GenOptions::width`]/[`GenOptions::speed`] say otherwise (ibsim's default).
//! LIDs are assigned by the builder (switches first, in node order, then HCAs) with
//! [`GenOptions::lmc`] for the HCA ports.
//!
//! # Hints
//! Generators fill [`crate::TopoHints`]: `kind` (e.g. `torus 4x4`), per-node `coords`
//! (tori/meshes/HyperX: the switch coordinates; dragonfly: `[group, router]`; Dragonfly+:
//! `[group, 0 = leaf / 1 = spine, index]`; Slim Fly: `[subgraph, a, b]`; empty for HCAs and for
//! other kinds), `dims`/`wrap` (tori, meshes, HyperX — HyperX has `wrap` all false), per-node
//! `level` (fat trees: 0 = roots, leaves highest; dragonfly and Dragonfly+: the group index;
//! Slim Fly: the subgraph 0/1; `u32::MAX` for HCAs), per-link `link_class` into
//! `link_class_names` (always class 0 = `host` for HCA links; tori/meshes/HyperX `dim0`, `dim1`, …;
//! fat trees `L1-L2`, … named after the switch-name levels; SuperPOD `leaf-spine`, `spine-core`,
//! `mgmt`; dragonfly and Dragonfly+ `local`/`global`;
//! Slim Fly `intra`/`inter` subgraph; random `net`) and `roots` (fat trees: the top level).
//!
//! # Kinds and the spec language
//! [`TopoSpec::parse`] (or `str::parse::<TopoSpec>()` on a whitespace separated string) reads a kind
//! and its arguments. Positional arguments come first; options are `key=value`, `--key=value` or
//! `--key value` (`-` and `_` are interchangeable in keys). Options valid for every kind:
//! `lmc=N`, `radix=N` (declared switch port count), `width=4x`, `speed=SDR`, and the degradation
//! options `fail-links=N`, `fail-switches=N`, `fail-seed=S`, `keep-first=true|false`,
//! `keep-hca-switches=true|false` (see [`degrade_with`]).
//!
//! | kind | positional | options | generator |
//! |------|------------|---------|-----------|
//! | `torus`, `mesh` | `DIMS` e.g. `4x4x4` (1..=6 dims; a `m` suffix on a torus dim makes it a mesh dim) | `hcas=2`, `k2=double\|single` | [`torus`] |
//! | `ktree` | `K N` | non-uniform leaves: `leaf-hosts=LIST` or `leaf-hosts-random=MIN..MAX` with `leaf-seed=S` | [`xgft`] via [`XgftSpec::ktree`] |
//! | `xgft` | — | `m=M1,..,Mh`, `w=W1,..,Wh` (W1 = 1), `links=1`, leaf hosts as ktree | [`xgft`] |
//! | `leafspine` | — | `leaves=L`, `spines=S`, `hosts=H`, `links=P`, leaf hosts as ktree | [`xgft`] via [`XgftSpec::leaf_spine`] |
//! | `fourlevel` | — | `sets`, `l0`, `l1`, `hcas`, `l3` | [`four_level`] |
//! | `superpod` | `SU` (or `su=N`) | `nodes=20`, `rails=8`, `spines=10`, `uplinks=20`, `cores=C` (default `spines*ceil(su/2)`), `core-links=1`, `sharp=true`, `mgmt=4`, `mgmt-hcas=3`, `mgmt-cores=2`, `missing=0`, `missing-seed=1` | [`superpod`] |
//! | `dragonfly` | `A P H` | `g=G` (default `A*H+1`), `arrangement=relative\|absolute` | [`dragonfly`] |
//! | `dragonflyplus`, `dfplus` | — | `leaves=L`, `spines=S`, `hosts=P`, `global=H`, `groups=G` (default `S*H+1`), `links=1` | [`dragonfly_plus`] |
//! | `slimfly` | `Q` | `hosts=P` (default ceil(degree/2)) | [`slimfly`] |
//! | `hyperx` | `DIMS` e.g. `4x4x4` | `links=K` (trunking), `hcas=H` | [`hyperx`] |
//! | `randreg` | `N D` | `hcas=2`, `seed=1` | [`random_regular`] |
//!
//! Examples: `"torus 8x8 hcas=2 lmc=1"`, `"ktree 28 3"`, `"leafspine leaves=18 spines=9
//! hosts=18"`, `"dragonfly 4 2 2 arrangement=absolute"`, `"dragonflyplus groups=4 leaves=4
//! spines=4 hosts=4 global=3"`, `"slimfly 7"`, `"hyperx 4x4 links=2 hcas=3"`, `"randreg 32 6
//! seed=7"`, `"ktree 4 3 fail-links=4 fail-seed=1"`, `"superpod su=4 missing=5"`.
//!
//! Companion files: [`roots_file`] (fat-tree roots for OpenSM's `-a`) and [`torus2qos_conf`]
//! (torus-2QoS configuration for 2D/3D tori and meshes).

use crate::builder::{BuildOptions, FabricBuilder};
use crate::model::*;
use std::fmt;

mod degrade;
mod dragonfly;
mod dragonflyplus;
mod fattree;
mod hyperx;
mod random;
mod slimfly;
mod spec;
mod superpod;
mod torus;

pub use degrade::{degrade, degrade_with, DegradeSpec};
pub use dragonfly::{dragonfly, Arrangement, DragonflySpec};
pub use dragonflyplus::{dragonfly_plus, DragonflyPlusSpec};
pub use fattree::{four_level, xgft, FourLevelSpec, LeafHosts, XgftSpec};
pub use hyperx::{hyperx, HyperXSpec};
pub use random::{random_regular, RandRegSpec};
pub use slimfly::{slimfly, SlimFlySpec};
pub use spec::{generate, TopoSpec, Topology};
pub use superpod::{superpod, SuperPodSpec, AGGREGATION_NODE_DESC};
pub use torus::{torus, TorusSpec};

/// First node GUID of switches (ibsim numbers switches from here, in file order).
pub const SW_GUID_BASE: u64 = 0x200000;
/// First node GUID of HCAs (ibsim steps by `nports + 1`; our HCAs have one port).
pub const CA_GUID_BASE: u64 = 0x100000;
/// Highest port count a generated switch may declare (NodeInfo.NumPorts is 8 bits; ibsim and the
/// builder stop at 254).
pub const MAX_PORTS: u32 = 254;

/// A generator parameter that cannot produce a fabric, with a message naming it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenError(pub String);

impl fmt::Display for GenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for GenError {}

impl From<crate::BuildError> for GenError {
    fn from(e: crate::BuildError) -> Self {
        GenError(format!("building the fabric failed: {e}"))
    }
}

pub(crate) fn gerr<T>(msg: impl Into<String>) -> Result<T, GenError> {
    Err(GenError(msg.into()))
}

/// Options shared by every generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenOptions {
    /// LMC of the HCA ports (0..=7).
    pub lmc: u8,
    /// Declared port count of every switch (default: the highest port number it uses).
    pub radix: Option<u8>,
    /// Width and speed of every link.
    pub width: Width,
    pub speed: Speed,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            lmc: 0,
            radix: None,
            width: Width::X4,
            speed: Speed::Sdr,
        }
    }
}

/// `a * b` for sizes, with a message on overflow.
pub(crate) fn mul(a: u64, b: u64, what: &str) -> Result<u64, GenError> {
    a.checked_mul(b)
        .ok_or_else(|| GenError(format!("{what}: the fabric is far too large")))
}

/// Rejects fabrics whose switches and HCAs cannot all get unicast LIDs, before anything is
/// allocated. Every switch needs one LID, every HCA port `2^lmc` (aligned).
pub(crate) fn check_size(
    what: &str,
    switches: u64,
    hcas: u64,
    opts: &GenOptions,
) -> Result<(), GenError> {
    if opts.lmc > MAX_LMC {
        return gerr(format!(
            "{what}: LMC {} is above the maximum {MAX_LMC}",
            opts.lmc
        ));
    }
    let per = 1u64 << opts.lmc;
    let need = hcas
        .checked_mul(per)
        .and_then(|h| h.checked_add(switches))
        .and_then(|n| n.checked_add(if hcas > 0 { per - 1 } else { 0 }));
    match need {
        Some(n) if n <= MAX_UNICAST_LID as u64 => Ok(()),
        _ => gerr(format!(
            "{what}: {switches} switches and {hcas} HCAs with LMC {} need more than the {} unicast LIDs InfiniBand has",
            opts.lmc, MAX_UNICAST_LID
        )),
    }
}

/// Parses `AxBxC` dimension lists.
pub(crate) fn parse_dims(s: &str) -> Result<Vec<u32>, GenError> {
    let mut v = Vec::new();
    for part in s.split(['x', 'X']) {
        v.push(
            part.trim()
                .parse::<u32>()
                .map_err(|_| GenError(format!("bad dimension {part:?} in {s:?}")))?,
        );
    }
    Ok(v)
}

pub(crate) fn join<T: fmt::Display>(v: &[T], sep: &str) -> String {
    let mut s = String::new();
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push_str(sep);
        }
        s.push_str(&x.to_string());
    }
    s
}

/// A generator's plan: switches, HCAs and links with explicit port numbers, turned into a
/// [`Fabric`] by [`Plan::finish`]. Port numbers are `u32` here and checked against
/// [`MAX_PORTS`] at the end.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub kind: String,
    pub sw_names: Vec<String>,
    /// Per switch (or empty).
    pub sw_coords: Vec<Vec<u32>>,
    /// Per switch (or empty).
    pub sw_level: Vec<u32>,
    /// (name, switch, switch port)
    pub hcas: Vec<(String, u32, u32)>,
    /// Per HCA: a node description other than the name (e.g. aggregation nodes, whose
    /// description is the same on every switch while names must be unique).
    pub hca_desc: Vec<Option<String>>,
    /// (switch a, port a, switch b, port b, class)
    pub links: Vec<(u32, u32, u32, u32, u16)>,
    /// Class 0 is always `host`.
    pub class_names: Vec<String>,
    pub roots: Vec<u32>,
    pub dims: Vec<u32>,
    pub wrap: Vec<bool>,
    /// Next free port per switch (for generators that number ports in order of use).
    pub next_port: Vec<u32>,
}

impl Plan {
    pub fn new(kind: String, class_names: &[&str]) -> Plan {
        let mut names = vec!["host".to_string()];
        names.extend(class_names.iter().map(|s| s.to_string()));
        Plan {
            kind,
            class_names: names,
            ..Plan::default()
        }
    }

    pub fn add_switch(&mut self, name: String) -> u32 {
        self.sw_names.push(name);
        self.next_port.push(1);
        (self.sw_names.len() - 1) as u32
    }

    /// The next port of `s` in order of use.
    pub fn take_port(&mut self, s: u32) -> u32 {
        let p = self.next_port[s as usize];
        self.next_port[s as usize] += 1;
        p
    }

    pub fn link(&mut self, a: u32, pa: u32, b: u32, pb: u32, class: u16) {
        self.links.push((a, pa, b, pb, class));
    }

    /// Links `a` and `b` on their next free ports.
    pub fn link_auto(&mut self, a: u32, b: u32, class: u16) {
        let pa = self.take_port(a);
        let pb = self.take_port(b);
        self.link(a, pa, b, pb, class);
    }

    pub fn add_hca(&mut self, name: String, sw: u32, port: u32) {
        self.hcas.push((name, sw, port));
        self.hca_desc.push(None);
    }

    /// An HCA on the next free port of `sw` whose node description is `desc`, not its name.
    pub fn add_hca_desc_auto(&mut self, name: String, desc: &str, sw: u32) {
        let p = self.take_port(sw);
        self.hcas.push((name, sw, p));
        self.hca_desc.push(Some(desc.to_string()));
    }

    pub fn add_hca_auto(&mut self, name: String, sw: u32) {
        let p = self.take_port(sw);
        self.add_hca(name, sw, p);
    }

    /// Builds the fabric: switches (GUID `0x200000 + i`), then HCAs (GUID `0x100000 + 2j`),
    /// switch-switch links, then HCA links.
    pub fn finish(self, opts: &GenOptions) -> Result<Fabric, GenError> {
        let ns = self.sw_names.len();
        check_size(&self.kind, ns as u64, self.hcas.len() as u64, opts)?;
        // Declared port counts.
        let mut used = vec![1u32; ns];
        for &(a, pa, b, pb, _) in &self.links {
            used[a as usize] = used[a as usize].max(pa);
            used[b as usize] = used[b as usize].max(pb);
        }
        for &(_, s, p) in &self.hcas {
            used[s as usize] = used[s as usize].max(p);
        }
        for (i, &u) in used.iter().enumerate() {
            if u > MAX_PORTS {
                return gerr(format!(
                    "{}: switch {} needs {u} ports, more than the {MAX_PORTS} a switch can have",
                    self.kind, self.sw_names[i]
                ));
            }
            if let Some(r) = opts.radix {
                if r as u32 > MAX_PORTS {
                    return gerr(format!(
                        "{}: radix {r} is above the {MAX_PORTS} ports a switch can have",
                        self.kind
                    ));
                }
                if (r as u32) < u {
                    return gerr(format!(
                        "{}: radix {r} is too small: switch {} uses port {u}",
                        self.kind, self.sw_names[i]
                    ));
                }
            }
        }
        let mut b = FabricBuilder::new();
        let nn = ns + self.hcas.len();
        for (i, name) in self.sw_names.iter().enumerate() {
            let guid = SW_GUID_BASE + i as u64;
            let nports = opts.radix.map_or(used[i], |r| r as u32) as u8;
            let id = b.add_node(NodeKind::Switch, nports, guid, name.clone(), name.clone())?;
            b.node_mut(id).sys_guid = guid;
        }
        for (j, (name, _, _)) in self.hcas.iter().enumerate() {
            let guid = CA_GUID_BASE + 2 * j as u64;
            let desc = self.hca_desc.get(j).cloned().flatten();
            let desc = desc.unwrap_or_else(|| name.clone());
            let id = b.add_node(NodeKind::Ca, 1, guid, name.clone(), desc)?;
            b.node_mut(id).sys_guid = guid;
        }
        let mut class = Vec::with_capacity(self.links.len() + self.hcas.len());
        for &(a, pa, s, pb, c) in &self.links {
            b.connect(
                NodeId(a),
                pa as u8,
                NodeId(s),
                pb as u8,
                opts.width,
                opts.speed,
            )?;
            class.push(c);
        }
        for (j, &(_, s, p)) in self.hcas.iter().enumerate() {
            let h = NodeId((ns + j) as u32);
            b.connect(NodeId(s), p as u8, h, 1, opts.width, opts.speed)?;
            class.push(0);
        }
        if b.num_links() != class.len() {
            return gerr(format!(
                "{}: internal error: a link was planned twice",
                self.kind
            ));
        }
        let mut coords = Vec::new();
        if !self.sw_coords.is_empty() {
            coords = self.sw_coords;
            coords.resize(nn, Vec::new());
        }
        let mut level = Vec::new();
        if !self.sw_level.is_empty() {
            level = self.sw_level;
            level.resize(nn, u32::MAX);
        }
        b.hints = TopoHints {
            kind: self.kind,
            coords,
            dims: self.dims,
            wrap: self.wrap,
            level,
            link_class: class,
            link_class_names: self.class_names,
            roots: self.roots.into_iter().map(NodeId).collect(),
        };
        Ok(b.build_with(BuildOptions {
            lmc: opts.lmc,
            reassign_lids: false,
        })?)
    }
}

/// The root switches' node GUIDs, `0x%016x` one per line (OpenSM's `-a` root file, like
/// gen_topo's `.roots`); `None` when the fabric has no known roots.
pub fn roots_file(f: &Fabric) -> Option<String> {
    if f.hints.roots.is_empty() {
        return None;
    }
    let mut s = String::new();
    for r in &f.hints.roots {
        let n = f.nodes.get(r.idx())?;
        s.push_str(&format!("{:#018x}\n", n.guid));
    }
    Some(s)
}

/// A torus-2QoS configuration (`torus_config`) for a 2D or 3D torus or mesh generated by
/// [`torus`] (possibly degraded): the radix line (`torus 4 4 1`, `mesh 4M 4M 1`, or a mix such as
/// `torus 4 4M 1`) and the seed links from the origin switch (`xp_link`, plus `xm_link` for
/// wrapped dimensions). `None` for other fabrics, or when the origin or a seed link is missing.
pub fn torus2qos_conf(f: &Fabric) -> Option<String> {
    let h = &f.hints;
    let word = h.kind.split_whitespace().next()?;
    if word != "torus" && word != "mesh" {
        return None;
    }
    let nd = h.dims.len();
    if !(2..=3).contains(&nd) || h.wrap.len() != nd || h.coords.len() != f.nodes.len() {
        return None;
    }
    let find = |c: &[u32]| -> Option<usize> {
        (0..f.nodes.len()).find(|&i| f.nodes[i].kind == NodeKind::Switch && h.coords[i] == c)
    };
    // Is there a link between the two switches?
    let linked = |a: usize, b: usize| -> bool {
        f.node_ports(NodeId(a as u32)).any(|p| {
            f.remote(p)
                .is_some_and(|r| f.ports[r.idx()].node == NodeId(b as u32))
        })
    };
    let all_wrap = h.wrap.iter().all(|&w| w);
    let no_wrap = h.wrap.iter().all(|&w| !w);
    let mut radix = Vec::new();
    for d in 0..3 {
        let k = h.dims.get(d).copied().unwrap_or(1);
        let m = d < nd && !h.wrap[d] && k > 1;
        radix.push(format!("{k}{}", if m { "M" } else { "" }));
    }
    let mut s = format!(
        "# generated by fabroute for {}\n{} {}\n",
        h.kind,
        if no_wrap && !all_wrap {
            "mesh"
        } else {
            "torus"
        },
        radix.join(" ")
    );
    let origin = vec![0u32; nd];
    let o = find(&origin)?;
    for (d, axis) in ["x", "y", "z"].iter().enumerate().take(nd) {
        let k = h.dims[d];
        if k == 1 {
            continue;
        }
        let mut p = origin.clone();
        p[d] = 1;
        let pn = find(&p)?;
        if !linked(o, pn) {
            return None;
        }
        s.push_str(&format!(
            "{axis}p_link {:#x} {:#x}\n",
            f.nodes[o].guid, f.nodes[pn].guid
        ));
        if h.wrap[d] {
            let mut m = origin.clone();
            m[d] = k - 1;
            let mn = find(&m)?;
            if !linked(o, mn) {
                return None;
            }
            s.push_str(&format!(
                "{axis}m_link {:#x} {:#x}\n",
                f.nodes[o].guid, f.nodes[mn].guid
            ));
        }
    }
    // a single switch (1x1, 1x1x1) has no seed link: no configuration to write (torus-2QoS
    // then says itself why it does not apply)
    if !s.contains("_link ") {
        return None;
    }
    Some(s)
}
