//! `cargo xtask firmware`: its arguments and what it runs.
use anyhow::Result;

/// Fetch Debian's firmware-amd-graphics (bookworm, non-free-firmware) through this machine's apt source,
/// verify it and unpack the Navi31 blobs into target/amdgpu-firmware/ (nothing is installed system-wide).
#[derive(clap::Args)]
pub struct Args {}

impl Args {
    pub fn run(self) -> Result<()> {
        let dir = xtask::firmware::ensure()?;
        println!("firmware blobs in {}", dir.display());
        Ok(())
    }
}
