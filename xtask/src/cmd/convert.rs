//! `cargo xtask convert`: its arguments ([`xtask::compile_cli::convert::Args`], shared with the wheel's
//! `modelrt convert`) run with this repository's exporter and venv.
use anyhow::Result;

pub use xtask::compile_cli::convert::Args;

/// Run `cargo xtask convert`.
pub fn run(args: Args) -> Result<()> {
    let python = xtask::venv::ensure_venv(&xtask::setup::workspace_root())?;
    args.run(&xtask::compile::Toolchain::repo(&python))
        .map(drop)
}
