//! `cargo xtask wheel`: its arguments and what it runs.
use anyhow::Result;

/// Build the Python wheel (PyO3, abi3, CPython >= 3.10): target/wheels/modelrt-*.whl
/// (`pip install target/wheels/modelrt-*.whl`).
#[derive(clap::Args)]
pub struct Args {
    /// Build the extension with the dev profile (faster to build, slower to run).
    #[arg(long)]
    pub debug: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self { debug } = self;
        let w = xtask::wheel::build(!debug, None)?;
        println!("wrote {}", w.display());
        Ok(())
    }
}
