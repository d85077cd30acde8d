//! Routing engines: one file per engine behind one [`Engine`] interface, plus explicit chaining.
//!
//! Every engine here is destination based: for each destination LID (every LID of every end
//! port's LMC range, and every switch's LID) it computes the output port at every switch, and
//! fills a [`Routing`] (LFTs, path SL `Uniform(0)`, identity SL2VL: these engines use one VL).
//!
//! | name | file | what it does |
//! |---|---|---|
//! | `minhop` | [`minhop`] | min-hop ports, least-loaded by per-port path counts (OpenSM's default) |
//! | `updn` | [`updn`] | Up*/Down* (ranks from roots; always picks working roots) |
//! | `dnup` | [`updn`] | Down*/Up* (rank 0 = switches with end ports) |
//! | `dor` | [`dor`] | dimension-order routing on meshes/tori/hypercubes |
//! | `ftree` | [`ftree`] | fat-tree routing with created-route-only counters, degraded trees routed |
//! | `sssp` | [`sssp`] | globally balanced shortest paths (one Dijkstra per destination LID) |
//! | `dfsssp`, `lash`, `hopvl`, `nue` | one file each | the VL engines: deadlock-free with VLs |
//! | `torus-2QoS` | [`torus2qos`] | DOR on tori and meshes with a loop VL per ring, fault tolerant |
//!
//! Invariants shared by all engines:
//! - a fault mask makes dead links, switches and end nodes absent; LIDs of dead or unreachable
//!   end ports stay "no route" (`NO_PORT`), dead switches keep empty LFTs;
//! - results are identical whatever the rayon thread count (parallel parts are per switch or
//!   per destination with no shared mutable state; balancing passes run in a fixed order);
//! - no panics on any fabric: an engine that cannot route returns an [`EngineError`].
//!
//! Chaining ([`route_chain`]) tries engines in order and reports which one routed and why each
//! earlier one failed; unlike OpenSM there is no implicit minhop fallback (list `minhop`
//! explicitly if wanted) and unknown names are reported as failed attempts.

pub mod common;
pub mod dfsssp;
pub mod dor;
pub mod ftree;
pub mod hopvl;
pub mod lash;
pub mod minhop;
pub mod nue;
pub mod ranking;
pub mod rebalance;
pub mod roots;
pub mod sssp;
pub mod torus2qos;
pub(crate) mod transition;
pub(crate) mod tree;
pub mod updn;

use crate::tables::{Routing, NUM_DATA_VLS, NUM_SLS};
use crate::turn::Base;
use common::Topo;
use fabric::{Fabric, FaultMask};
use std::fmt;

pub use ranking::{Dir, UpDownRanking};

/// Options with OpenSM's names and meaning. All GUID lists are empty by default.
///
/// There is no LMC option: the fabric's LIDs carry it, and every engine routes every LID of
/// each end port's LMC range (OpenSM's `lmc`). There is no thread option either: engines use
/// the ambient rayon pool and give the same tables for any thread count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteOptions {
    /// `root_guid_file`: switch node GUIDs of the roots (updn, ftree). GUIDs that are not
    /// switch node GUIDs are ignored (reported in the notes).
    pub root_guids: Vec<u64>,
    /// `cn_guid_file`: port GUIDs of compute nodes (ftree, sssp ordering).
    pub cn_guids: Vec<u64>,
    /// `io_guid_file`: port GUIDs of I/O nodes (ftree, sssp ordering).
    pub io_guids: Vec<u64>,
    /// `guid_routing_order_file`: port GUIDs routed first, in this order (minhop, updn, dnup,
    /// dor).
    pub guid_routing_order: Vec<u64>,
    /// `port_shifting`: rotate the tie-breaking start among min-hop candidates with load.
    pub port_shifting: bool,
    /// `scatter_ports <seed>`: among equally least-loaded candidates pick one at random
    /// (base LIDs only). 0 = off. Reproducible: the generator is seeded per switch from the
    /// seed and the switch GUID, so results do not depend on thread count.
    pub scatter_ports: u64,
    /// The virtual lanes and service levels an engine may use.
    pub budget: Budget,
    /// Settings only some engines read, each in its engine's own type.
    pub engine: EngineSettings,
}

/// Engine-specific settings: one field per engine that has any, of a type its file defines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineSettings {
    pub lash: lash::LashSettings,
    pub nue: nue::NueSettings,
    pub torus: torus2qos::TorusSettings,
}

/// The virtual lanes and service levels an engine may use: data VLs `start_vl..start_vl +
/// vls` and SLs `0..sls`. Engines that need more fail and say so; engines that need one VL
/// use `start_vl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Data VLs available (1..=15).
    pub vls: u8,
    /// Service levels available (1..=16).
    pub sls: u8,
    /// The lowest VL an engine may use (OpenSM's `lash_start_vl`): `start_vl + vls <= 15`.
    pub start_vl: u8,
}

impl Default for Budget {
    /// What most InfiniBand switches offer: 8 data VLs, 16 SLs, from VL 0.
    fn default() -> Self {
        Budget {
            vls: 8,
            sls: NUM_SLS as u8,
            start_vl: 0,
        }
    }
}

impl Budget {
    /// Layers an engine with SL = VL can use (VLs from `start_vl`, one SL each), and the
    /// words for a shortage when the SLs, not the VLs, are what runs out ("" otherwise).
    pub fn sl_vl_layers(&self) -> (usize, String) {
        let sl_room = (self.sls as usize).saturating_sub(self.start_vl as usize);
        let by_sls = if sl_room < self.vls as usize {
            format!(
                " of the {} VLs, as SL = VL and {sl_room} SLs are left",
                self.vls
            )
        } else {
            String::new()
        };
        ((self.vls as usize).min(sl_room), by_sls)
    }

    /// The budget for `f`: what its ports report when the fabric says (no reader sees VL
    /// capabilities today: ibnetdiscover and ibsim files do not carry them), else the
    /// default.
    pub fn for_fabric(_f: &Fabric) -> Self {
        Budget::default()
    }

    /// Checks InfiniBand's limits: 15 data VLs, 16 SLs.
    pub fn validate(&self) -> Result<(), EngineError> {
        if self.vls == 0 || self.start_vl as u32 + self.vls as u32 > NUM_DATA_VLS as u32 {
            return Err(EngineError::BadOptions(format!(
                "VLs {}..{} are outside the {NUM_DATA_VLS} data VLs (need 1 <= VLs and start VL + VLs <= {NUM_DATA_VLS})",
                self.start_vl,
                self.start_vl as u32 + self.vls as u32
            )));
        }
        if self.sls == 0 || self.sls as usize > NUM_SLS {
            return Err(EngineError::BadOptions(format!(
                "{} SLs: InfiniBand has 1..={NUM_SLS}",
                self.sls
            )));
        }
        Ok(())
    }
}

/// Why an engine declined or failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The fabric has nothing to route (no live switch).
    #[error("no live switch in the fabric")]
    NoSwitches,
    /// The engine does not apply to this fabric (e.g. an option it cannot honour).
    #[error("not applicable: {0}")]
    NotApplicable(String),
    /// Bad options (e.g. a root GUID list that names no switch).
    #[error("bad options: {0}")]
    BadOptions(String),
    /// Unknown engine name (chaining only).
    #[error("unknown routing engine {0:?}")]
    Unknown(String),
}

/// An engine's result with its remarks (what it chose and why, degradations).
#[derive(Clone, Debug)]
pub struct Routed {
    pub routing: Routing,
    /// Human-readable notes: roots used, fallbacks taken, entries that could not follow the
    /// engine's rule, unreachable LIDs.
    pub notes: Vec<String>,
}

/// What the CLI, the chain and RFTR need to know about an engine. Every engine file defines
/// its own `INFO` constant; [`ENGINES`] lists them all, and nothing else in the code base
/// names an engine.
#[derive(Debug)]
pub struct EngineInfo {
    /// OpenSM's name, used by `-R`.
    pub name: &'static str,
    /// Other names accepted by `-R` (exact match).
    pub aliases: &'static [&'static str],
    /// One line for `--help` and error messages.
    pub summary: &'static str,
    /// Tables free of credit loops by construction on every fabric the engine accepts.
    pub deadlock_free: bool,
    /// RFTR can repair the engine's tables ([`Engine::rftr_base`]).
    pub rftr_base: bool,
    /// Builds the engine.
    pub new: fn() -> Box<dyn Engine>,
}

/// Declares the registry: one constant per engine and [`ENGINES`], which lists them in
/// order. Each line: constant, name, aliases, the engine value, its deadlock promise, whether
/// it is an RFTR base, its summary.
macro_rules! registry {
    ($($id:ident $name:literal [$($alias:literal),*] $new:expr,
       deadlock_free: $df:expr, rftr_base: $rb:expr, $summary:literal;)*) => {
        $(
            #[doc = concat!("The `", $name, "` engine's registry entry.")]
            pub const $id: EngineInfo = EngineInfo {
                name: $name,
                aliases: &[$($alias),*],
                summary: $summary,
                deadlock_free: $df,
                rftr_base: $rb,
                new: || Box::new($new),
            };
        )*
        /// Every engine, in the order `--help` lists them.
        pub static ENGINES: &[&EngineInfo] = &[$(&$id),*];
    };
}

#[rustfmt::skip]
registry! {
    MINHOP "minhop" [] minhop::MinHop,
        deadlock_free: false, rftr_base: false,
        "min-hop ports, least loaded by per-port path counts (OpenSM default)";
    UPDN "updn" [] updn::UpDn,
        deadlock_free: true, rftr_base: true,
        "Up*/Down*: ranks from roots, always picks working roots";
    DNUP "dnup" [] updn::DnUp,
        deadlock_free: true, rftr_base: true,
        "Down*/Up*: rank 0 = switches with end ports";
    DOR "dor" [] dor::Dor,
        deadlock_free: false, rftr_base: true,
        "dimension-order routing on meshes, tori and hypercubes";
    FTREE "ftree" [] ftree::FatTree,
        deadlock_free: true, rftr_base: true,
        "fat-tree routing, balanced by routes created, degraded trees routed";
    SSSP "sssp" [] sssp::Sssp,
        deadlock_free: false, rftr_base: false,
        "globally balanced shortest paths (one Dijkstra per destination LID)";
    DFSSSP "dfsssp" [] dfsssp::Dfsssp,
        deadlock_free: true, rftr_base: true,
        "SSSP paths in VL layers with acyclic channel dependencies";
    LASH "lash" [] lash::Lash,
        deadlock_free: true, rftr_base: true,
        "layered shortest paths: one VL layer per switch pair";
    HOPVL "hopvl" [] hopvl::HopVl,
        deadlock_free: true, rftr_base: true,
        "SSSP paths, VL = hop index (low-diameter networks; HOTI'16)";
    NUE "nue" [] nue::Nue,
        deadlock_free: true, rftr_base: true,
        "routing in the complete CDG: deadlock-free on any fabric with any VL count";
    TORUS2QOS "torus-2QoS" ["torus2qos", "torus-2qos"] torus2qos::Torus2Qos,
        deadlock_free: true, rftr_base: true,
        "DOR on 2D/3D tori and meshes, dateline VLs, around one failed switch, SLs fixed";
}

/// The engine called `name` (its name or an alias; exact match).
pub fn lookup(name: &str) -> Option<&'static EngineInfo> {
    ENGINES
        .iter()
        .copied()
        .find(|e| e.name == name || e.aliases.contains(&name))
}

/// The names of every engine, for messages.
pub fn engine_names() -> Vec<&'static str> {
    ENGINES.iter().map(|e| e.name).collect()
}

/// One line per engine (`name  summary`), for `--help`.
pub fn engine_list() -> String {
    ENGINES
        .iter()
        .map(|e| {
            let mut l = format!("  {:<8} {}", e.name, e.summary);
            if !e.aliases.is_empty() {
                l.push_str(&format!(" (also: {})", e.aliases.join(", ")));
            }
            l
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One routing engine.
pub trait Engine: Send + Sync {
    /// The engine's entry in [`ENGINES`].
    fn info(&self) -> &'static EngineInfo;
    /// OpenSM's name (`minhop`, `updn`, ...).
    fn name(&self) -> &'static str {
        self.info().name
    }
    /// Routes the live part of a fabric (its [`Topo`]: the switches and end ports the fault
    /// mask leaves), with notes.
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError>;
    /// Routes the fabric under the fault mask, with notes.
    fn route_detailed(
        &self,
        f: &Fabric,
        mask: &FaultMask,
        opts: &RouteOptions,
    ) -> Result<Routed, EngineError> {
        self.route_topo(&Topo::live(f, mask)?, opts)
    }
    /// Routes the fabric under the fault mask.
    fn route(
        &self,
        f: &Fabric,
        mask: &FaultMask,
        opts: &RouteOptions,
    ) -> Result<Routing, EngineError> {
        self.route_detailed(f, mask, opts).map(|r| r.routing)
    }
    /// How RFTR may repair this engine's fault-free tables on `f` with `opts`: the turn rule
    /// every path obeys (inferred exactly as the engine infers it when it routes), or fresh
    /// VLs above the ones the engine uses. Engines without either (`rftr_base: false`) say why
    /// not.
    fn rftr_base<'f>(&self, f: &'f Fabric, opts: &RouteOptions) -> Result<Base<'f>, EngineError> {
        let _ = (f, opts);
        Err(EngineError::NotApplicable(format!(
            "{} makes no deadlock-free tables RFTR can build on (bases: {})",
            self.name(),
            rftr_bases().join(", ")
        )))
    }
    /// `opts` with the choices this engine makes on the fault-free fabric written in (updn:
    /// its evaluated root set; torus-2QoS: its coordinates), so that routing again under
    /// faults keeps them, as a subnet manager keeps its roots. Routing the fault-free fabric
    /// with the pinned options must give the same tables as with `opts` (tested on every
    /// vendored and many generated fabrics); a choice that a pin cannot say exactly (a fat
    /// tree's levels) is left to be derived again. Most engines make no such choice.
    fn pin_choices(&self, f: &Fabric, opts: &RouteOptions) -> Result<RouteOptions, EngineError> {
        let _ = f;
        Ok(opts.clone())
    }
}

/// Engines RFTR can repair (`rftr_base`).
pub fn rftr_bases() -> Vec<&'static str> {
    ENGINES
        .iter()
        .filter(|e| e.rftr_base)
        .map(|e| e.name)
        .collect()
}

/// The engine called `name` (see [`lookup`]).
pub fn by_name(name: &str) -> Option<Box<dyn Engine>> {
    lookup(name).map(|e| (e.new)())
}

/// The up/down ranking the engine called `name` routes the fault-free fabric `f` with under
/// `opts`: `updn`, `dnup` and `ftree` (whose ranks, and so whose legal up*/down* paths and
/// down->up turns, it chooses itself); `None` for the other engines.
pub fn updown_ranking(
    name: &str,
    f: &Fabric,
    opts: &RouteOptions,
) -> Result<Option<ranking::UpDownRanking>, EngineError> {
    let t = Topo::live(f, &FaultMask::none(f))?;
    Ok(match lookup(name).map(|e| e.name) {
        Some("updn") => Some(roots::updn_ranking(&t, &t.mask, opts)?.rk),
        Some("dnup") => Some(roots::dnup_ranking(&t, &t.mask, opts)?.rk),
        Some("ftree") => Some(ftree::fault_free_ranking(f, opts)?.0),
        _ => None,
    })
}

/// Result of [`route_chain`]: never silent about what happened.
#[derive(Clone, Debug)]
pub struct ChainResult {
    pub routing: Routing,
    /// The engine whose tables these are.
    pub engine_used: &'static str,
    /// Earlier engines that failed, with why, in order.
    pub attempts: Vec<(String, EngineError)>,
    /// The notes of the engine that routed.
    pub notes: Vec<String>,
}

/// Every engine in the chain failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainError {
    pub attempts: Vec<(String, EngineError)>,
}

impl fmt::Display for ChainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.attempts.is_empty() {
            return f.write_str("no routing engine given");
        }
        f.write_str("every routing engine failed:")?;
        for (n, e) in &self.attempts {
            write!(f, " {n}: {e};")?;
        }
        Ok(())
    }
}
impl std::error::Error for ChainError {}

/// Tries `names` in order; the first engine that succeeds routes. Unknown names count as failed
/// attempts (reported, not dropped). No implicit fallback engine.
pub fn route_chain(
    names: &[&str],
    f: &Fabric,
    mask: &FaultMask,
    opts: &RouteOptions,
) -> Result<ChainResult, ChainError> {
    let mut attempts = Vec::new();
    for &n in names {
        let Some(e) = by_name(n) else {
            attempts.push((n.to_string(), EngineError::Unknown(n.to_string())));
            continue;
        };
        match e.route_detailed(f, mask, opts) {
            Ok(r) => {
                return Ok(ChainResult {
                    routing: r.routing,
                    engine_used: e.name(),
                    attempts,
                    notes: r.notes,
                })
            }
            Err(err) => attempts.push((n.to_string(), err)),
        }
    }
    Err(ChainError { attempts })
}
