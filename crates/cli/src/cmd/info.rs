//! `fabroute info FILE [--json]`.

use crate::util::load_fabric;
use anyhow::Result;
use fabric::summary::{Spread, Summary};
use fabric::BuildOptions;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Fabric file (ibnetdiscover, ibsim net, opensm-subnet.lst or fabroute JSON).
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn spread(s: &Spread) -> String {
    format!("min {} / max {} / mean {:.2}", s.min, s.max, s.mean)
}

pub fn run(a: Args) -> Result<ExitCode> {
    let loaded = load_fabric(&a.file, BuildOptions::default())?;
    let s = Summary::of(&loaded.fabric);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("fabric            {}", a.file.display());
    if !s.kind.is_empty() {
        println!("kind              {}", s.kind);
    }
    println!("switches          {}", s.switches);
    println!("channel adapters  {}", s.cas);
    println!("routers           {}", s.routers);
    println!("end ports         {}", s.end_ports);
    println!(
        "links             {} ({} switch-switch, {} loopback)",
        s.links, s.switch_links, s.loopback_links
    );
    println!(
        "parallel groups   {} ({} links)",
        s.parallel_groups, s.parallel_links
    );
    println!("switch ports      {}", spread(&s.switch_ports));
    println!("ports cabled      {}", spread(&s.switch_ports_used));
    println!("switch degree     {}", spread(&s.switch_degree));
    println!("end ports/switch  {}", spread(&s.end_ports_per_switch));
    match s.diameter {
        Some(d) => println!("diameter          {d} switch hops"),
        None => println!(
            "diameter          none: the switch graph has {} components",
            s.components
        ),
    }
    println!("max LID           {:#06x} (LMC {})", s.max_lid, s.lmc);
    Ok(ExitCode::SUCCESS)
}
