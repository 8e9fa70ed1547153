//! `cargo xtask sign`: its arguments and what it runs.
use std::path::PathBuf;

use anyhow::Result;

/// Sign a bundle in place with an Ed25519 private key (from `cargo xtask keygen`), replacing any
/// earlier signature: the signature covers every byte of the bundle (docs/signing.md).
#[derive(clap::Args)]
pub struct Args {
    /// The bundle (.mrt).
    pub bundle: PathBuf,
    /// The private key file.
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let key = xtask::signing::read_signing_key(&self.key)?;
        let fp = xtask::signing::sign_file(&self.bundle, &key)?;
        println!("signed {} (signer {fp})", self.bundle.display());
        Ok(())
    }
}
