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

/// Renders a fabric in the requested format.
pub fn render(f: &Fabric, to: To) -> Result<String> {
    Ok(match to {
        To::Ibsim => fabric::io::writers::to_ibsim(f)
            .map_err(|e| anyhow::anyhow!("cannot write an ibsim net file: {e}"))?,
        To::Ibnetdiscover => fabric::io::writers::to_ibnetdiscover(f),
        To::Json => fabric::io::writers::to_json(f),
    })
}
