//! `cargo xtask keygen`: its arguments and what it runs.
use std::path::PathBuf;

use anyhow::Result;

/// Generate an Ed25519 signing key pair in DIR: modelrt-signing.key (private, mode 0600: keep it
/// secret) and modelrt-signing.pub (what `modelrt --trusted-keys` and MODELRT_TRUSTED_KEYS read).
#[derive(clap::Args)]
pub struct Args {
    /// Directory for the key files (created if missing).
    pub dir: PathBuf,
    /// Replace existing key files.
    #[arg(long)]
    pub yes: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let (secret, public) = xtask::signing::keygen(&self.dir, self.yes)?;
        let key = modelrt_platform::trust::read_public_key(&public)?;
        println!("wrote {} (private, mode 0600)", secret.display());
        println!(
            "wrote {} ({})",
            public.display(),
            modelrt_platform::trust::fingerprint(&key)
        );
        Ok(())
    }
}
