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

#[cfg(test)]
mod tests {
    use clap::Parser;

    /// `keygen DIR [--yes]`, `sign BUNDLE --key KEY` and `--sign KEY` on compile and convert parse.
    #[test]
    fn signing_arguments_parse() {
        let cli = crate::Cli::try_parse_from(["xtask", "keygen", "keys", "--yes"]).unwrap();
        let crate::Cmd::Keygen(a) = cli.cmd else {
            panic!("not keygen")
        };
        assert!(a.yes && a.dir.ends_with("keys"));
        let cli = crate::Cli::try_parse_from(["xtask", "sign", "m.mrt", "--key", "k.key"]).unwrap();
        let crate::Cmd::Sign(a) = cli.cmd else {
            panic!("not sign")
        };
        assert!(a.bundle.ends_with("m.mrt") && a.key.ends_with("k.key"));
        assert!(crate::Cli::try_parse_from(["xtask", "sign", "m.mrt"]).is_err());
        let cli = crate::Cli::try_parse_from([
            "xtask", "compile", "m.onnx", "-o", "m.mrt", "--sign", "k.key",
        ])
        .unwrap();
        let crate::Cmd::Compile(a) = cli.cmd else {
            panic!("not compile")
        };
        assert!(a.sign.unwrap().ends_with("k.key"));
        let cli =
            crate::Cli::try_parse_from(["xtask", "convert", "p.pkl", "-o", "m.mrt", "--sign", "k"])
                .unwrap();
        let crate::Cmd::Convert(a) = cli.cmd else {
            panic!("not convert")
        };
        assert!(a.sign.is_some());
    }
}
