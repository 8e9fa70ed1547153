//! `cargo xtask ci`: its arguments and what it runs.
use anyhow::Result;

/// Run the whole test suite the way CI does (does its own set-up first).
#[derive(clap::Args)]
pub struct Args {
    /// Skip fmt/clippy (for quick local iterations).
    #[arg(long)]
    pub no_lint: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self { no_lint } = self;
        crate::ci::run(no_lint)
    }
}
