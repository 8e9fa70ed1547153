//! `cargo xtask footprint`: its arguments and what it runs.
use anyhow::Result;

/// Size of the no_std core+hal (tests/footprint probe, aarch64-unknown-none release) vs its budget.
#[derive(clap::Args)]
pub struct Args {}

impl Args {
    pub fn run(self) -> Result<()> {
        xtask::footprint::run().map(|_| ())
    }
}
