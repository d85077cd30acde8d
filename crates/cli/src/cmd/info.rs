//! `fabroute info FILE [--json]`.

use crate::util::{load_fabric_bytes, read_input};
use anyhow::Result;
use fabric::summary::{Spread, Summary};
use fabric::BuildOptions;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Fabric file (ibnetdiscover or its ports report, iblinkinfo, ibsim net, opensm-subnet.lst
    /// or fabroute JSON).
    pub file: PathBuf,
}

fn spread(s: &Spread) -> String {
    format!("min {} / max {} / mean {:.2}", s.min, s.max, s.mean)
}

pub fn run(a: Args) -> Result<ExitCode> {
    let bytes = read_input(&a.file)?;
    let format = fabric::io::detect(&bytes).map_or("?", |f| f.name());
    let loaded = load_fabric_bytes(&a.file, &bytes, BuildOptions::default())?;
    let s = Summary::of(&loaded.fabric);
    if crate::out::json() {
        let mut v = serde_json::to_value(&s)?;
        if let Some(m) = v.as_object_mut() {
            m.insert("format".into(), format.into());
        }
        crate::out::document(&v)?;
        return Ok(crate::out::Status::Clean.into());
    }
    crate::say!("fabric            {}", crate::util::input_name(&a.file));
    crate::say!("format            {format}");
    if !s.kind.is_empty() {
        crate::say!("kind              {}", s.kind);
    }
    crate::say!("switches          {}", s.switches);
    crate::say!("channel adapters  {}", s.cas);
    crate::say!("routers           {}", s.routers);
    crate::say!("end ports         {}", s.end_ports);
    crate::say!(
        "links             {} ({} switch-switch, {} loopback)",
        s.links,
        s.switch_links,
        s.loopback_links
    );
    crate::say!(
        "parallel groups   {} ({} links)",
        s.parallel_groups,
        s.parallel_links
    );
    crate::say!("switch ports      {}", spread(&s.switch_ports));
    crate::say!("ports cabled      {}", spread(&s.switch_ports_used));
    crate::say!("switch degree     {}", spread(&s.switch_degree));
    crate::say!("end ports/switch  {}", spread(&s.end_ports_per_switch));
    match s.diameter {
        Some(d) => crate::say!("diameter          {d} switch hops"),
        None => crate::say!(
            "diameter          none: the switch graph has {} components",
            s.components
        ),
    }
    crate::say!("max LID           {:#06x} (LMC {})", s.max_lid, s.lmc);
    Ok(crate::out::Status::Clean.into())
}
