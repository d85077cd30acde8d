//! Fabric file formats the CLI writes (`gen --to`, `convert --to`).

use anyhow::Result;
use fabric::Fabric;

/// An output format for fabrics.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum To {
    Ibsim,
    Ibnetdiscover,
    Json,
}

/// Renders a fabric in the requested format (for `gen`, which has no `--lossy`: a fabric an
/// ibsim net file cannot carry is an error that points at the formats that can).
pub fn render(f: &Fabric, to: To) -> Result<String> {
    match to {
        To::Ibsim => ibsim(
            f,
            "write it with --to json or --to ibnetdiscover, which carry it (`fabroute convert \
             --lossy` then writes an ibsim net file without it)",
        ),
        _ => Ok(render_lossy(f, to, false)?.0),
    }
}

/// An ibsim net file of `f`; when it cannot carry everything, an error that ends with
/// `advice` (what the command offers instead).
fn ibsim(f: &Fabric, advice: &str) -> Result<String> {
    match fabric::io::writers::to_ibsim(f) {
        Ok(t) => Ok(t),
        Err(fabric::io::writers::WriteError::Lossy { count, first }) => anyhow::bail!(
            "an ibsim net file cannot carry everything in this fabric ({count} item(s), first: {first}); {advice}"
        ),
        Err(e) => anyhow::bail!("cannot write an ibsim net file: {e}"),
    }
}

/// Renders a fabric; with `lossy`, an ibsim net file is written even when it cannot carry
/// everything, and what it lost is returned (one line per item). Without it such a fabric is
/// an error that points at `--lossy`.
pub fn render_lossy(f: &Fabric, to: To, lossy: bool) -> Result<(String, Vec<String>)> {
    Ok(match to {
        To::Ibsim if lossy => fabric::io::writers::to_ibsim_lossy(f)
            .map_err(|e| anyhow::anyhow!("cannot write an ibsim net file: {e}"))?,
        To::Ibsim => (
            ibsim(
                f,
                "give --lossy to write it anyway and list what is lost, or convert --to json or \
                 --to ibnetdiscover, which carry it",
            )?,
            Vec::new(),
        ),
        To::Ibnetdiscover => (fabric::io::writers::to_ibnetdiscover(f), Vec::new()),
        To::Json => (fabric::io::writers::to_json(f), Vec::new()),
    })
}
