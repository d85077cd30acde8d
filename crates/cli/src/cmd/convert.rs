//! `fabroute convert IN -o OUT --to ibsim|ibnetdiscover|json`.

use crate::render::{render, To};
use crate::util::{load_fabric, write_atomic};
use anyhow::Result;
use fabric::BuildOptions;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input fabric (format detected from the content).
    pub input: PathBuf,
    /// Output file.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Output format.
    #[arg(long)]
    pub to: To,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let loaded = load_fabric(&a.input, BuildOptions::default())?;
    let text = render(&loaded.fabric, a.to)?;
    write_atomic(&a.output, text.as_bytes())?;
    eprintln!(
        "wrote {} ({} switches, {} end ports)",
        a.output.display(),
        loaded.fabric.num_switches(),
        loaded.fabric.end_ports.len()
    );
    if crate::out::json() {
        crate::out::document(&serde_json::json!({
            "input": a.input.display().to_string(),
            "output": a.output.display().to_string(),
            "format": format!("{:?}", a.to).to_lowercase(),
            "switches": loaded.fabric.num_switches(),
            "end_ports": loaded.fabric.end_ports.len(),
        }))?;
    }
    Ok(ExitCode::SUCCESS)
}
