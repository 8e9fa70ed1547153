//! `cargo xtask dist`: its arguments and what it runs.
use anyhow::Result;

/// Cross-build release binaries for a device into target/dist/ (tarball + manifest + sha256).
#[derive(clap::Args)]
pub struct Args {
    /// Rust target triple (comma devices: aarch64-unknown-linux-gnu).
    #[arg(long, default_value = "aarch64-unknown-linux-gnu")]
    pub target: String,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self { target } = self;
        xtask::setup::ensure_apt()?;
        xtask::setup::ensure_rust()?;
        let r = xtask::dist::dist(&target)?;
        for b in &r.binaries {
            println!("built {}", b.display());
        }
        println!("wrote {} and {}", r.dir.display(), r.tarball.display());
        Ok(())
    }
}
