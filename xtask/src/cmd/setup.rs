//! `cargo xtask setup`: its arguments and what it runs.
use anyhow::Result;

/// Install what the build needs (apt packages, rustup targets, the Python venv).
#[derive(clap::Args)]
pub struct Args {}

impl Args {
    pub fn run(self) -> Result<()> {
        let py = xtask::setup::ensure_all()?;
        println!("set-up complete; exporter python: {}", py.display());
        Ok(())
    }
}
