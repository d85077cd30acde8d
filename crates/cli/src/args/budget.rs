//! The VL/SL budget of the commands that route with an engine, and the torus-2QoS config
//! they read.

use crate::util::read_input;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// The torus-2QoS config for a run whose engines are `engines` (a comma list): FILE when
/// given, else `FABRIC.t2q.conf` beside the fabric (what `fabroute gen` writes) when it
/// exists and torus-2QoS is among the engines; errors name the file and line.
pub fn torus_config(
    fabric: &Path,
    explicit: Option<&Path>,
    engines: &str,
) -> Result<Option<routing::engines::torus2qos::TorusConfig>> {
    let wants = engines.split([',', ' ']).any(|e| {
        routing::engines::lookup(e).is_some_and(|i| i.name == routing::engines::TORUS2QOS.name)
    });
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => {
            let mut c = fabric.as_os_str().to_owned();
            c.push(".t2q.conf");
            let c = std::path::PathBuf::from(c);
            if !wants || !c.is_file() {
                return Ok(None);
            }
            eprintln!(
                "fabroute: torus-2QoS reads {} (beside the fabric)",
                c.display()
            );
            c
        }
    };
    let bytes = read_input(&path)?;
    let text = String::from_utf8_lossy(&bytes);
    routing::engines::torus2qos::parse_config(&text)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("{}:{}: {}", path.display(), e.line, e.msg))
}

/// The VL/SL budget and the LASH option of the commands that route with an engine (`route`,
/// `sim`).
#[derive(clap::Args, Clone, Debug)]
pub struct BudgetArgs {
    /// Data VLs the engines may use (the VLs the switches offer; OpenSM's nue_max_num_vls for
    /// nue). 1..=15.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..=15))]
    pub max_vls: u8,
    /// Service levels the engines may use. 1..=16.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u8).range(1..=16))]
    pub sls: u8,
    /// The lowest VL the VL engines use (OpenSM's lash_start_vl; dfsssp, lash, hopvl, nue,
    /// torus-2QoS).
    #[arg(long, alias = "start-vl", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=14))]
    pub lash_start_vl: u8,
    /// do_mesh_analysis (lash): dimension-ordered shortest paths on meshes and tori with
    /// coordinates.
    #[arg(long)]
    pub do_mesh_analysis: bool,
    /// torus-2QoS.conf (OpenSM's syntax: radices, seed links, datelines). Default: FABRIC.t2q.conf
    /// when it exists; without either, torus-2QoS uses the generator's coordinates or finds
    /// the torus itself.
    #[arg(long)]
    pub torus_config: Option<PathBuf>,
    /// nue: how much searching to do, as a multiple of the default (1..=64). Larger fabrics
    /// then also try random orders of destinations and escape-tree roots, and the rip-up
    /// pass gets more tries: the best of more attempts, in about that many times the time.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub nue_effort: u32,
}

impl BudgetArgs {
    /// Route options with this budget (checked against InfiniBand's limits) and the LASH
    /// option; everything else at its default.
    pub fn route_options(&self) -> Result<routing::engines::RouteOptions> {
        let mut opts = routing::engines::RouteOptions {
            budget: routing::engines::Budget {
                vls: self.max_vls,
                sls: self.sls,
                start_vl: self.lash_start_vl,
            },
            ..Default::default()
        };
        opts.engine.lash.do_mesh_analysis = self.do_mesh_analysis;
        opts.engine.nue.effort = self.nue_effort;
        // options that contradict each other (start VL + VLs beyond the 15 data VLs)
        opts.budget
            .validate()
            .map_err(|e| crate::out::UsageError(e.to_string()))?;
        Ok(opts)
    }
}
