//! The trust store: the Ed25519 public keys whose signatures a loader accepts (docs/signing.md).
//! When a [`LoadOptions`](crate::LoadOptions) carries one, [`Registry::load`](crate::Registry::load)
//! refuses an unsigned bundle, one signed by another key and one changed after signing before the
//! device is opened, so before any of the bundle's code is mapped or run; the CLI, Python and C APIs
//! all load through it. Also the public key file format (`*.pub`) and key fingerprints.
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use sha2::{Digest, Sha256};

/// The environment variable naming trusted key files or directories (a path list, `:`-separated).
pub const TRUSTED_KEYS_ENV: &str = "MODELRT_TRUSTED_KEYS";
/// The first word of a public key file; the 64 hex digits of the key follow.
pub const PUBLIC_KEY_TAG: &str = "modelrt-ed25519-public";

/// A set of trusted Ed25519 public keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustStore {
    keys: Vec<[u8; 32]>,
}

impl TrustStore {
    /// A store trusting `keys`.
    pub fn new(keys: Vec<[u8; 32]>) -> TrustStore {
        TrustStore { keys }
    }

    /// The trusted keys.
    pub fn keys(&self) -> &[[u8; 32]] {
        &self.keys
    }

    /// The keys of `paths`: each a public key file, or a directory whose `*.pub` files are read (a
    /// directory without any is an error: it would trust nothing by mistake).
    pub fn from_paths<P: AsRef<Path>>(paths: &[P]) -> anyhow::Result<TrustStore> {
        let mut keys = Vec::new();
        for p in paths {
            let p = p.as_ref();
            if p.is_dir() {
                let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                    .with_context(|| format!("cannot read trusted keys directory {}", p.display()))?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|f| f.extension().is_some_and(|x| x == "pub"))
                    .collect();
                files.sort();
                if files.is_empty() {
                    bail!("trusted keys directory {} has no *.pub file", p.display());
                }
                for f in files {
                    keys.push(read_public_key(&f)?);
                }
            } else {
                keys.push(read_public_key(p)?);
            }
        }
        if keys.is_empty() {
            bail!("no trusted key given");
        }
        Ok(TrustStore { keys })
    }

    /// The store `MODELRT_TRUSTED_KEYS` names, if it is set and not empty.
    pub fn from_env() -> anyhow::Result<Option<TrustStore>> {
        match std::env::var_os(TRUSTED_KEYS_ENV) {
            Some(v) if !v.is_empty() => {
                let paths: Vec<PathBuf> = std::env::split_paths(&v).collect();
                TrustStore::from_paths(&paths)
                    .context(TRUSTED_KEYS_ENV)
                    .map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The store `paths` names, or else the one of `MODELRT_TRUSTED_KEYS`, or none.
    pub fn from_paths_or_env<P: AsRef<Path>>(paths: &[P]) -> anyhow::Result<Option<TrustStore>> {
        if paths.is_empty() {
            TrustStore::from_env()
        } else {
            TrustStore::from_paths(paths).map(Some)
        }
    }

    /// Check bundle file bytes `bytes` against the store; the signer's key. The error is a
    /// [`Refused`]: one line naming what failed.
    pub fn check(&self, bytes: &[u8]) -> anyhow::Result<[u8; 32]> {
        use modelrt_core::sign::SignError;
        modelrt_core::sign::verify(bytes, &self.keys).map_err(|e| {
            let message = match e {
                SignError::UntrustedKey { key } | SignError::BadSignature { key } => {
                    format!(
                        "bundle refused by the trust store: {e} (signer {})",
                        fingerprint(&key)
                    )
                }
                _ => format!("bundle refused by the trust store: {e}"),
            };
            anyhow::Error::new(Refused(message))
        })
    }
}

/// A bundle the trust store refused (the C API reports it as its own status code).
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Whether `e` (or an error it wraps) is a trust store refusal.
pub fn is_refusal(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<Refused>())
}

/// A key's fingerprint as `info` and errors show it: `SHA256:` and the first 16 bytes of the SHA-256
/// of the key, in hex.
pub fn fingerprint(key: &[u8; 32]) -> String {
    let d = Sha256::digest(key);
    format!("SHA256:{}", hex(&d[..16]))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The 32 bytes of 64 hex digits.
pub fn parse_hex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// The text of a public key file: `modelrt-ed25519-public <hex>` and an optional comment word.
pub fn public_key_text(key: &[u8; 32], comment: &str) -> String {
    format!("{PUBLIC_KEY_TAG} {} {comment}\n", hex(key))
}

/// Parse the text of a public key file.
pub fn parse_public_key(text: &str) -> Option<[u8; 32]> {
    let mut words = text.split_whitespace();
    if words.next()? != PUBLIC_KEY_TAG {
        return None;
    }
    parse_hex32(words.next()?)
}

/// Read the public key file `path`.
pub fn read_public_key(path: &Path) -> anyhow::Result<[u8; 32]> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read public key {}", path.display()))?;
    match std::str::from_utf8(&bytes).ok().and_then(parse_public_key) {
        Some(k) => Ok(k),
        None => bail!(
            "{} is not a modelrt public key file (expected `{PUBLIC_KEY_TAG} <64 hex digits>`)",
            path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_key_text_round_trips() {
        let key = [7u8; 32];
        assert_eq!(parse_public_key(&public_key_text(&key, "me")), Some(key));
        assert_eq!(parse_public_key("modelrt-ed25519-public 00"), None);
        assert_eq!(parse_public_key("ssh-ed25519 AAAA"), None);
    }
}
