//! Topology specs parsed from CLI-like strings (see the module documentation of `gen`).

use super::*;
use std::str::FromStr;

/// One of the generated topology kinds with its parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topology {
    /// Torus, mesh or a mix ([`torus`]).
    Torus(TorusSpec),
    /// XGFT, k-ary n-tree, leaf-spine ([`xgft`]).
    Xgft(XgftSpec),
    /// The 4-level tree of ftree-balance.md ([`four_level`]).
    FourLevel(FourLevelSpec),
    /// A DGX SuperPOD-style 3-level fat tree ([`superpod`]).
    SuperPod(SuperPodSpec),
    Dragonfly(DragonflySpec),
    /// Dragonfly+: leaf/spine groups joined spine to spine ([`dragonfly_plus`]).
    DragonflyPlus(DragonflyPlusSpec),
    SlimFly(SlimFlySpec),
    HyperX(HyperXSpec),
    RandomRegular(RandRegSpec),
}

/// A complete generator request: topology, common options, optional degradation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopoSpec {
    pub topology: Topology,
    pub options: GenOptions,
    /// Applied after generation with [`degrade_with`].
    pub degrade: Option<DegradeSpec>,
}

impl TopoSpec {
    /// A spec with default options and no degradation.
    pub fn new(topology: Topology) -> TopoSpec {
        TopoSpec {
            topology,
            options: GenOptions::default(),
            degrade: None,
        }
    }

    /// Parses a kind (`torus`, `mesh`, `ktree`, `xgft`, `leafspine`, `fourlevel`, `superpod`,
    /// `dragonfly`, `dragonflyplus` (alias `dfplus`), `slimfly`, `hyperx`, `randreg`) and its
    /// arguments; see the table in the `gen` module documentation.
    pub fn parse(kind: &str, args: &[&str]) -> Result<TopoSpec, GenError> {
        let mut a = Args::split(kind, args)?;
        let kind_l = kind.to_ascii_lowercase();
        let topology = match kind_l.as_str() {
            "torus" | "mesh" => {
                let mut dims = Vec::new();
                let mut wrap = Vec::new();
                if a.pos.is_empty() {
                    return gerr(format!("{kind}: dimensions missing (e.g. 4x4)"));
                }
                for p in std::mem::take(&mut a.pos) {
                    for part in p.split(['x', 'X']) {
                        let (num, mesh_dim) = match part.strip_suffix(['m', 'M']) {
                            Some(n) => (n, true),
                            None => (part, false),
                        };
                        dims.push(num.parse::<u32>().map_err(|_| {
                            GenError(format!("{kind}: bad dimension {part:?} in {p:?}"))
                        })?);
                        wrap.push(kind_l == "torus" && !mesh_dim);
                    }
                }
                let k2 = a.take("k2")?;
                let k2_single_link = match k2.as_deref() {
                    None | Some("double") => false,
                    Some("single") => true,
                    Some(o) => {
                        return gerr(format!("{kind}: k2={o}: expected double or single"))
                    }
                };
                Topology::Torus(TorusSpec {
                    dims,
                    wrap,
                    hcas: a.num("hcas", 2)?,
                    k2_single_link,
                })
            }
            "ktree" => {
                let k = a.num_pos("k")?;
                let n = a.num_pos("n")?;
                let mut x = XgftSpec::ktree(k, n);
                x.leaf_hosts = a.leaf_hosts()?;
                Topology::Xgft(x)
            }
            "xgft" => {
                let m = a
                    .list("m")?
                    .ok_or_else(|| GenError(format!("{kind}: m=M1,..,Mh missing")))?;
                let w = a
                    .list("w")?
                    .ok_or_else(|| GenError(format!("{kind}: w=W1,..,Wh missing")))?;
                let mut x = XgftSpec::new(&m, &w);
                x.links = a.num("links", 1)?;
                x.leaf_hosts = a.leaf_hosts()?;
                Topology::Xgft(x)
            }
            "leafspine" | "leaf-spine" => {
                let leaves = a.req("leaves")?;
                let spines = a.req("spines")?;
                let hosts = a.req("hosts")?;
                let links = a.num("links", 1)?;
                let mut x = XgftSpec::leaf_spine(leaves, spines, hosts, links);
                x.leaf_hosts = a.leaf_hosts()?;
                Topology::Xgft(x)
            }
            "fourlevel" | "4level" | "ftree4" => Topology::FourLevel(FourLevelSpec {
                sets: a.req("sets")?,
                l0: a.req("l0")?,
                l1: a.req("l1")?,
                hcas: a.req("hcas")?,
                l3: a.req("l3")?,
            }),
            "superpod" => {
                let d = SuperPodSpec::new(0);
                Topology::SuperPod(SuperPodSpec {
                    su: a.num_pos("su")?,
                    nodes: a.num("nodes", d.nodes)?,
                    rails: a.num("rails", d.rails)?,
                    spines: a.num("spines", d.spines)?,
                    uplinks: a.num("uplinks", d.uplinks)?,
                    cores: a.opt_num("cores")?,
                    core_links: a.num("core-links", d.core_links)?,
                    sharp: a.flag("sharp", d.sharp)?,
                    mgmt: a.num("mgmt", d.mgmt)?,
                    mgmt_hcas: a.num("mgmt-hcas", d.mgmt_hcas)?,
                    mgmt_cores: a.num("mgmt-cores", d.mgmt_cores)?,
                    missing: a.num("missing", d.missing)?,
                    missing_seed: a.num64("missing-seed", d.missing_seed)?,
                })
            }
            "dragonfly" => {
                let av = a.num_pos("a")?;
                let p = a.num_pos("p")?;
                let h = a.num_pos("h")?;
                let g = a.opt_num("g")?;
                let arrangement = match a.take("arrangement")? {
                    None => Arrangement::Relative,
                    Some(s) => Arrangement::parse(&s).ok_or_else(|| {
                        GenError(format!(
                            "{kind}: arrangement {s:?}: expected relative (palmtree) or absolute (consecutive)"
                        ))
                    })?,
                };
                Topology::Dragonfly(DragonflySpec {
                    a: av,
                    p,
                    h,
                    g,
                    arrangement,
                })
            }
            "dragonflyplus" | "dfplus" => {
                Topology::DragonflyPlus(DragonflyPlusSpec {
                    groups: a.opt_num("groups")?,
                    leaves: a.req("leaves")?,
                    spines: a.req("spines")?,
                    hosts: a.req("hosts")?,
                    global: a.req("global")?,
                    links: a.num("links", 1)?,
                })
            }
            "slimfly" => {
                let q = a.num_pos("q")?;
                let p = match a.opt_num("hosts")? {
                    Some(v) => Some(v),
                    None => a.opt_num("p")?,
                };
                Topology::SlimFly(SlimFlySpec { q, p })
            }
            "hyperx" => {
                if a.pos.is_empty() {
                    return gerr(format!("{kind}: dimensions missing (e.g. 4x4)"));
                }
                let mut dims = Vec::new();
                for p in std::mem::take(&mut a.pos) {
                    dims.extend(parse_dims(&p).map_err(|e| GenError(format!("{kind}: {e}")))?);
                }
                let links = match a.opt_num("links")? {
                    Some(v) => v,
                    None => a.num("k", 1)?,
                };
                Topology::HyperX(HyperXSpec {
                    dims,
                    links,
                    hcas: a.num("hcas", 2)?,
                })
            }
            "randreg" | "random" => Topology::RandomRegular(RandRegSpec {
                n: a.num_pos("n")?,
                d: a.num_pos("d")?,
                hcas: a.num("hcas", 2)?,
                seed: a.num64("seed", 1)?,
            }),
            _ => {
                return gerr(format!(
                    "unknown topology kind {kind:?} (expected torus, mesh, ktree, xgft, leafspine, fourlevel, superpod, dragonfly, dragonflyplus, slimfly, hyperx or randreg)"
                ))
            }
        };
        let mut options = GenOptions {
            lmc: a.num("lmc", 0)?,
            ..GenOptions::default()
        };
        if let Some(r) = a.opt_num::<u8>("radix")? {
            options.radix = Some(r);
        }
        if let Some(w) = a.take("width")? {
            options.width = Width::parse(&w)
                .ok_or_else(|| GenError(format!("{kind}: bad width {w:?} (e.g. 4x)")))?;
        }
        if let Some(s) = a.take("speed")? {
            options.speed = Speed::parse(&s.to_ascii_uppercase())
                .ok_or_else(|| GenError(format!("{kind}: bad speed {s:?} (e.g. SDR, EDR)")))?;
        }
        let fl: usize = a.num("fail-links", 0)?;
        let fs: usize = a.num("fail-switches", 0)?;
        let seed = a.num64("fail-seed", 1)?;
        let keep_first = a.flag("keep-first", true)?;
        let keep_hca = a.flag("keep-hca-switches", false)?;
        let degrade = (fl > 0 || fs > 0).then_some(DegradeSpec {
            links: fl,
            switches: fs,
            seed,
            keep_first,
            keep_hca_switches: keep_hca,
        });
        a.finish()?;
        Ok(TopoSpec {
            topology,
            options,
            degrade,
        })
    }

    /// Generates the fabric (and degrades it when asked).
    pub fn generate(&self) -> Result<Fabric, GenError> {
        generate(self)
    }
}

/// Whitespace separated: the kind, then its arguments (`"torus 4x4 hcas=2"`).
impl FromStr for TopoSpec {
    type Err = GenError;
    fn from_str(s: &str) -> Result<TopoSpec, GenError> {
        let mut it = s.split_whitespace();
        let kind = it
            .next()
            .ok_or_else(|| GenError("empty topology spec".to_string()))?;
        let args: Vec<&str> = it.collect();
        TopoSpec::parse(kind, &args)
    }
}

/// Generates the fabric a spec describes, then applies its degradation if any.
pub fn generate(spec: &TopoSpec) -> Result<Fabric, GenError> {
    let o = &spec.options;
    let f = match &spec.topology {
        Topology::Torus(s) => torus(s, o)?,
        Topology::Xgft(s) => xgft(s, o)?,
        Topology::FourLevel(s) => four_level(s, o)?,
        Topology::SuperPod(s) => superpod(s, o)?,
        Topology::Dragonfly(s) => dragonfly(s, o)?,
        Topology::DragonflyPlus(s) => dragonfly_plus(s, o)?,
        Topology::SlimFly(s) => slimfly(s, o)?,
        Topology::HyperX(s) => hyperx(s, o)?,
        Topology::RandomRegular(s) => random_regular(s, o)?,
    };
    match &spec.degrade {
        Some(d) => degrade_with(&f, d),
        None => Ok(f),
    }
}

/// Positional arguments and `key=value` options, consumed by the kind's parser.
struct Args {
    kind: String,
    pos: Vec<String>,
    opts: Vec<(String, String)>,
}

fn norm(k: &str) -> String {
    k.trim_start_matches('-')
        .replace('_', "-")
        .to_ascii_lowercase()
}

impl Args {
    fn split(kind: &str, args: &[&str]) -> Result<Args, GenError> {
        let mut a = Args {
            kind: kind.to_string(),
            pos: Vec::new(),
            opts: Vec::new(),
        };
        let mut i = 0;
        while i < args.len() {
            let t = args[i];
            let (k, v) = if let Some((k, v)) = t.split_once('=') {
                (norm(k), v.to_string())
            } else if t.starts_with("--") {
                i += 1;
                let v = args
                    .get(i)
                    .ok_or_else(|| GenError(format!("{kind}: option {t} needs a value")))?;
                (norm(t), v.to_string())
            } else {
                a.pos.push(t.to_string());
                i += 1;
                continue;
            };
            if k.is_empty() {
                return gerr(format!("{kind}: bad option {t:?}"));
            }
            if a.opts.iter().any(|(x, _)| *x == k) {
                return gerr(format!("{kind}: option {k} given twice"));
            }
            a.opts.push((k, v));
            i += 1;
        }
        Ok(a)
    }

    fn take(&mut self, key: &str) -> Result<Option<String>, GenError> {
        Ok(self
            .opts
            .iter()
            .position(|(k, _)| k == key)
            .map(|i| self.opts.remove(i).1))
    }

    fn parse_num<T: FromStr>(&self, key: &str, v: &str) -> Result<T, GenError> {
        v.trim().parse::<T>().map_err(|_| {
            GenError(format!(
                "{}: {key}={v:?} is not a valid number (or is out of range)",
                self.kind
            ))
        })
    }

    fn opt_num<T: FromStr>(&mut self, key: &str) -> Result<Option<T>, GenError> {
        match self.take(key)? {
            Some(v) => Ok(Some(self.parse_num(key, &v)?)),
            None => Ok(None),
        }
    }

    fn num<T: FromStr>(&mut self, key: &str, default: T) -> Result<T, GenError> {
        Ok(self.opt_num(key)?.unwrap_or(default))
    }

    fn num64(&mut self, key: &str, default: u64) -> Result<u64, GenError> {
        self.num(key, default)
    }

    fn req(&mut self, key: &str) -> Result<u32, GenError> {
        self.opt_num(key)?
            .ok_or_else(|| GenError(format!("{}: option {key}=N missing", self.kind)))
    }

    /// The next positional argument, or the option `key=`.
    fn num_pos(&mut self, key: &str) -> Result<u32, GenError> {
        if let Some(v) = self.opt_num(key)? {
            return Ok(v);
        }
        if self.pos.is_empty() {
            return gerr(format!(
                "{}: parameter {} missing",
                self.kind,
                key.to_ascii_uppercase()
            ));
        }
        let v = self.pos.remove(0);
        self.parse_num(key, &v)
    }

    fn list(&mut self, key: &str) -> Result<Option<Vec<u32>>, GenError> {
        match self.take(key)? {
            None => Ok(None),
            Some(v) => {
                let mut out = Vec::new();
                for part in v.split(',') {
                    out.push(self.parse_num(key, part)?);
                }
                Ok(Some(out))
            }
        }
    }

    fn flag(&mut self, key: &str, default: bool) -> Result<bool, GenError> {
        match self.take(key)?.as_deref() {
            None => Ok(default),
            Some("true" | "1" | "yes") => Ok(true),
            Some("false" | "0" | "no") => Ok(false),
            Some(o) => gerr(format!(
                "{}: {key}={o:?}: expected true or false",
                self.kind
            )),
        }
    }

    /// `leaf-hosts=LIST` or `leaf-hosts-random=MIN..MAX` (with `leaf-seed=S`).
    fn leaf_hosts(&mut self) -> Result<LeafHosts, GenError> {
        let list = self.list("leaf-hosts")?;
        let random = self.take("leaf-hosts-random")?;
        let seed = self.num64("leaf-seed", 1)?;
        match (list, random) {
            (Some(_), Some(_)) => gerr(format!(
                "{}: give either leaf-hosts or leaf-hosts-random, not both",
                self.kind
            )),
            (Some(v), None) => Ok(LeafHosts::List(v)),
            (None, Some(r)) => {
                let (lo, hi) = r.split_once("..").ok_or_else(|| {
                    GenError(format!(
                        "{}: leaf-hosts-random={r:?}: expected MIN..MAX",
                        self.kind
                    ))
                })?;
                Ok(LeafHosts::Random {
                    min: self.parse_num("leaf-hosts-random", lo)?,
                    max: self.parse_num("leaf-hosts-random", hi)?,
                    seed,
                })
            }
            (None, None) => Ok(LeafHosts::Uniform),
        }
    }

    fn finish(self) -> Result<(), GenError> {
        if let Some(p) = self.pos.first() {
            return gerr(format!("{}: unexpected argument {p:?}", self.kind));
        }
        if let Some((k, _)) = self.opts.first() {
            return gerr(format!("{}: unknown option {k:?}", self.kind));
        }
        Ok(())
    }
}
