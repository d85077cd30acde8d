//! `fabroute gen <kind> ... -o FILE`.

use anyhow::{bail, Result};
use fabric::Fabric;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output file.
    #[arg(short, long)]
    pub output: PathBuf,
}

/// Renders a fabric in the requested format.
pub fn render(_f: &Fabric, _to: crate::cmd::convert::To) -> Result<String> {
    bail!("writers are not wired in yet")
}

pub fn run(_a: Args) -> Result<ExitCode> {
    bail!("generators are not wired in yet")
}
