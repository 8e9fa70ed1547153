//! `cargo xtask ci`: its arguments and what it runs.
use anyhow::Result;

/// Run the test suite the way CI does (does its own set-up first); `--full` adds the heavy tests CI leaves out.
#[derive(clap::Args)]
pub struct Args {
    /// Skip fmt/clippy (for quick local iterations).
    #[arg(long)]
    pub no_lint: bool,
    /// Also run the heavy tests CI leaves out (`#[ignore = "heavy: ..."]`, listed in docs/testing.md): the whole set.
    #[arg(long, conflicts_with = "heavy_only")]
    pub full: bool,
    /// Run only the heavy tests (after the set-up), to record their result without a whole CI run.
    #[arg(long)]
    pub heavy_only: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self {
            no_lint,
            full,
            heavy_only,
        } = self;
        let tests = if heavy_only {
            crate::ci::Tests::HeavyOnly
        } else if full {
            crate::ci::Tests::Full
        } else {
            crate::ci::Tests::Subset
        };
        crate::ci::run(no_lint, tests)
    }
}
