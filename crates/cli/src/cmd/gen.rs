//! `fabroute gen <kind> [ARGS...] -o FILE [--to ibsim|ibnetdiscover|json]`.

use crate::render::{render, To};
use crate::util::write_atomic;
use anyhow::Result;
use fabric::gen::{self, TopoSpec};
use fabric::summary::Summary;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(after_help = "KINDS (positional arguments, then key=value options):
  torus DIMS [hcas=2] [k2=double|single]     e.g. torus 8x8 hcas=2
  mesh DIMS [hcas=2]                          e.g. mesh 4x4x4
  ktree K N [leaf-hosts=LIST]                 k-ary n-tree, e.g. ktree 28 3
  xgft m=M1,..,Mh w=1,W2,..,Wh [links=1]      extended generalized fat tree
  leafspine leaves=L spines=S hosts=H [links=P]
  fourlevel sets=S l0=A l1=B hcas=H l3=T      the 4-level tree of ftree-balance.md
  superpod su=N [nodes=20] [rails=8] [spines=10] [uplinks=20] [cores=C] [core-links=1]
           [sharp=true] [mgmt=4] [mgmt-hcas=3] [mgmt-cores=2] [missing=K] [missing-seed=1]
                                              DGX SuperPOD-style 3-level tree: rail-optimised
                                              leaves, spine and core groups, a SHARP aggregation
                                              node per switch, management leaves, missing cables
  dragonfly A P H [g=G] [arrangement=relative|absolute]
  dragonflyplus leaves=L spines=S hosts=P global=H [groups=G] [links=1]
                                              Dragonfly+ (alias dfplus): G leaf/spine groups
                                              (default S*H+1), H global ports per spine, the
                                              global cables spread evenly over group pairs
  slimfly Q [hosts=P]                         MMS graph, Q a prime power
  hyperx DIMS [links=K] [hcas=H]
  randreg N D [hcas=2] [seed=1]
Options for every kind: lmc=N radix=N width=4x speed=SDR
  fail-links=N fail-switches=N fail-seed=S    degrade the result, keeping it connected

Writes FILE, and next to it FILE.roots (fat trees: root GUIDs for -a) and FILE.t2q.conf
(2D/3D tori and meshes: torus-2QoS configuration) where the generator knows them.")]
pub struct Args {
    /// Topology kind (torus, mesh, ktree, xgft, leafspine, fourlevel, superpod, dragonfly,
    /// dragonflyplus, slimfly, hyperx, randreg).
    pub kind: String,
    /// Positional parameters and key=value options of the kind.
    pub params: Vec<String>,
    /// Output file.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "ibsim")]
    pub to: To,
    /// Do not write the .roots / .t2q.conf companion files.
    #[arg(long)]
    pub no_companions: bool,
}

fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

pub fn run(a: Args) -> Result<ExitCode> {
    let params: Vec<&str> = a.params.iter().map(String::as_str).collect();
    // the topology and its parameters are command-line arguments: a bad one is a usage error
    let spec = TopoSpec::parse(&a.kind, &params)
        .map_err(|e| crate::out::UsageError(format!("bad topology {:?}: {e:#}", a.kind)))?;
    let f = gen::generate(&spec)
        .map_err(|e| crate::out::UsageError(format!("cannot generate the fabric: {e:#}")))?;
    // a format that cannot carry what the options asked for (speed=XDR in an ibsim file)
    let text = render(&f, a.to).map_err(|e| crate::out::UsageError(format!("{e:#}")))?;
    write_atomic(&a.output, text.as_bytes())?;
    let mut extra = Vec::new();
    if !a.no_companions {
        if let Some(r) = gen::roots_file(&f) {
            let p = companion(&a.output, ".roots");
            write_atomic(&p, r.as_bytes())?;
            extra.push(p);
        }
        if let Some(c) = gen::torus2qos_conf(&f) {
            let p = companion(&a.output, ".t2q.conf");
            write_atomic(&p, c.as_bytes())?;
            extra.push(p);
        }
    }
    let s = Summary::of(&f);
    eprintln!(
        "wrote {}: {} ({} switches, {} CAs, {} links, diameter {})",
        a.output.display(),
        s.kind,
        s.switches,
        s.cas,
        s.links,
        s.diameter.map_or("-".to_string(), |d| d.to_string())
    );
    for p in &extra {
        eprintln!("wrote {}", p.display());
    }
    if crate::out::json() {
        crate::out::document(&serde_json::json!({
            "output": a.output.display().to_string(),
            "companions": extra.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "summary": s,
        }))?;
    }
    Ok(crate::out::Status::Clean.into())
}
