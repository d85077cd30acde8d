//! `fabroute convert IN -o OUT --to ibsim|ibnetdiscover|json`.

use crate::render::{render_lossy, To};
use crate::util::{load_fabric, write_atomic};
use anyhow::Result;
use fabric::BuildOptions;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input fabric (format detected from the content).
    pub input: PathBuf,
    /// Output file, or `-` for standard output (not with --json, whose document goes there).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Output format.
    #[arg(long)]
    pub to: To,
    /// With --to ibsim: write what an ibsim net file can express even when it cannot carry
    /// everything (port GUIDs ibsim derives differently, FDR10/NDR speeds, LIDs of uncabled
    /// ports, long descriptions), and list what was lost (also in --json).
    #[arg(long)]
    pub lossy: bool,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let to_stdout = crate::util::is_stdin(&a.output);
    if to_stdout && crate::out::json() {
        crate::usage_bail!("-o - and --json would both write to standard output: give -o FILE");
    }
    let loaded = load_fabric(&a.input, BuildOptions::default())?;
    let (text, lost) = render_lossy(&loaded.fabric, a.to, a.lossy)?;
    if to_stdout {
        crate::out::stdout_raw(&text);
    } else {
        write_atomic(&a.output, text.as_bytes())?;
    }
    crate::out::stderr_line(&format!(
        "wrote {} ({} switches, {} end ports)",
        if to_stdout {
            "standard output".to_string()
        } else {
            a.output.display().to_string()
        },
        loaded.fabric.num_switches(),
        loaded.fabric.end_ports.len()
    ));
    if !lost.is_empty() {
        crate::out::stderr_line(&format!(
            "fabroute: --lossy: the file does not carry {} item(s):",
            lost.len()
        ));
        for l in lost.iter().take(50) {
            crate::out::stderr_line(&format!("  {l}"));
        }
        if lost.len() > 50 {
            crate::out::stderr_line(&format!("  … and {} more (all in --json)", lost.len() - 50));
        }
    }
    if crate::out::json() {
        crate::out::document(&serde_json::json!({
            "input": a.input.display().to_string(),
            "output": a.output.display().to_string(),
            "format": format!("{:?}", a.to).to_lowercase(),
            "switches": loaded.fabric.num_switches(),
            "end_ports": loaded.fabric.end_ports.len(),
            "lost": lost,
        }))?;
    }
    Ok(crate::out::Status::Clean.into())
}
