//! `cargo xtask demo`: its arguments and what it runs.
use anyhow::Result;

/// Regenerate the `modelrt demo` bundles embedded in the binary (or check they are current).
#[derive(clap::Args)]
pub struct Args {
    /// Only check that the committed bundles are byte-identical to a fresh compile.
    #[arg(long)]
    pub check: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self { check } = self;
        crate::ci::demo(check)
    }
}
