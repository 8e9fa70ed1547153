//! Signing keys and signed bundles on the host (docs/signing.md): `cargo xtask keygen` writes an
//! Ed25519 key pair (the private key file mode 0600, the public key as `*.pub`, the file the
//! runtime's trust store reads), `cargo xtask sign` and `--sign` on compile/convert sign a bundle
//! through `modelrt_core::bundle::writer::sign_bundle`. The randomness is the OS's (getrandom).
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ed25519_compact::{KeyPair, Seed};
use modelrt_core::bundle::writer::sign_bundle;
use modelrt_platform::trust::{fingerprint, hex, parse_hex32, public_key_text};

/// The first word of a private key file; the 64 hex digits of the Ed25519 seed follow.
pub const SECRET_KEY_TAG: &str = "modelrt-ed25519-secret";
/// The private key file `keygen` writes into its directory.
pub const SECRET_KEY_FILE: &str = "modelrt-signing.key";
/// The public key file `keygen` writes beside it.
pub const PUBLIC_KEY_FILE: &str = "modelrt-signing.pub";

/// A signing key pair read from a private key file.
pub struct SigningKey {
    pair: KeyPair,
}

impl SigningKey {
    /// The Ed25519 public key.
    pub fn public(&self) -> [u8; 32] {
        *self.pair.pk
    }

    /// Sign bundle `bytes` (replacing an earlier signature).
    pub fn sign(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        sign_bundle(bytes, &self.public(), |m| *self.pair.sk.sign(m, None))
            .map_err(|e| anyhow::anyhow!("cannot sign: {e}"))
    }
}

/// Generate a key pair in `dir` (created if missing): [`SECRET_KEY_FILE`] (mode 0600) and
/// [`PUBLIC_KEY_FILE`]. Refuses to replace either unless `overwrite`. Returns both paths.
pub fn keygen(dir: &Path, overwrite: bool) -> Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let secret = dir.join(SECRET_KEY_FILE);
    let public = dir.join(PUBLIC_KEY_FILE);
    for p in [&secret, &public] {
        if p.symlink_metadata().is_ok() {
            if !overwrite {
                bail!(
                    "{} exists: refusing to replace a key (pass --yes to replace it)",
                    p.display()
                );
            }
            std::fs::remove_file(p).with_context(|| format!("cannot remove {}", p.display()))?;
        }
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
    let pair = KeyPair::from_seed(Seed::new(seed));
    // create_new: never through a symlink or into a file someone else opened; 0600 from the start.
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&secret)
        .with_context(|| format!("cannot create {}", secret.display()))?;
    writeln!(f, "{SECRET_KEY_TAG} {}", hex(&seed))?;
    f.sync_all()?;
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&public)
        .with_context(|| format!("cannot create {}", public.display()))?;
    f.write_all(public_key_text(&pair.pk, &fingerprint(&pair.pk)).as_bytes())?;
    f.sync_all()?;
    Ok((secret, public))
}

/// Read a private key file; refuses one that others can read (like ssh).
pub fn read_signing_key(path: &Path) -> Result<SigningKey> {
    let meta = std::fs::metadata(path)
        .with_context(|| format!("cannot read signing key {}", path.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        bail!(
            "signing key {} is readable by others (mode {:o}): chmod 600 it",
            path.display(),
            meta.permissions().mode() & 0o777
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read signing key {}", path.display()))?;
    let mut words = text.split_whitespace();
    let seed = match (words.next(), words.next().and_then(parse_hex32)) {
        (Some(SECRET_KEY_TAG), Some(seed)) => seed,
        _ => bail!(
            "{} is not a modelrt signing key (expected `{SECRET_KEY_TAG} <64 hex digits>`; \
             `cargo xtask keygen` writes one)",
            path.display()
        ),
    };
    Ok(SigningKey {
        pair: KeyPair::from_seed(Seed::new(seed)),
    })
}

/// Sign the bundle file `path` in place (a temporary file beside it, renamed over it); the signer's
/// fingerprint.
pub fn sign_file(path: &Path, key: &SigningKey) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    write_bundle(path, &bytes, Some(key))?;
    Ok(fingerprint(&key.public()))
}

/// Write bundle `bytes` to `out`, signed with `key` when there is one: the bytes are signed in
/// memory first, then written whole to a temporary file beside `out` that is renamed over it
/// (`modelrt_targets::replace`). So `out` never holds an unsigned or half-written bundle, not even
/// for a moment: it is the earlier file until the signed one replaces it, and a bundle that cannot
/// be signed or written leaves it as it was. Returns the number of bytes written.
pub fn write_bundle(out: &Path, bytes: &[u8], key: Option<&SigningKey>) -> Result<usize> {
    write_bundle_with(out, bytes, |b| match key {
        Some(k) => k.sign(b),
        None => Ok(b.to_vec()),
    })
}

/// [`write_bundle`] with the signing step given (tests observe the destination from inside it).
fn write_bundle_with(
    out: &Path,
    bytes: &[u8],
    sign: impl FnOnce(&[u8]) -> Result<Vec<u8>>,
) -> Result<usize> {
    let signed = sign(bytes).with_context(|| format!("{}", out.display()))?;
    modelrt_targets::replace::replace_with(out, &signed)
        .with_context(|| format!("cannot write {}", out.display()))?;
    Ok(signed.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use modelrt_platform::trust::{read_public_key, TrustStore};

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xtask-signing-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn keygen_writes_a_private_key_only_its_owner_reads_and_refuses_to_overwrite() {
        let dir = tmp("keygen");
        let (secret, public) = keygen(&dir, false).unwrap();
        let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(public.extension().is_some_and(|x| x == "pub"));
        let key = read_signing_key(&secret).unwrap();
        assert_eq!(read_public_key(&public).unwrap(), key.public());
        let before = std::fs::read(&secret).unwrap();
        let e = keygen(&dir, false).unwrap_err().to_string();
        assert!(e.contains("refusing to replace a key (pass --yes"), "{e}");
        assert_eq!(std::fs::read(&secret).unwrap(), before);
        keygen(&dir, true).unwrap();
        assert_ne!(std::fs::read(&secret).unwrap(), before, "a fresh key");
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_signing_key(&secret).err().unwrap().to_string();
        assert!(e.contains("readable by others"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sign_file_signs_a_bundle_the_public_key_verifies() {
        let dir = tmp("sign");
        let (secret, public) = keygen(&dir, false).unwrap();
        let bundle = dir.join("demo.mrt");
        let demo =
            std::fs::read(crate::setup::workspace_root().join("targets/assets/demo-x86_64.mrt"))
                .unwrap();
        std::fs::write(&bundle, &demo).unwrap();
        let key = read_signing_key(&secret).unwrap();
        let fp = sign_file(&bundle, &key).unwrap();
        assert_eq!(fp, fingerprint(&key.public()));
        let signed = std::fs::read(&bundle).unwrap();
        let store = TrustStore::from_paths(&[&public]).unwrap();
        assert_eq!(store.check(&signed).unwrap(), key.public());
        assert!(TrustStore::from_paths(&[&public])
            .unwrap()
            .check(&demo)
            .is_err());
        // Signing again replaces the signature: same length.
        sign_file(&bundle, &key).unwrap();
        assert_eq!(std::fs::read(&bundle).unwrap().len(), signed.len());
        std::fs::write(&bundle, b"not a bundle").unwrap();
        let e = format!("{:#}", sign_file(&bundle, &key).unwrap_err());
        assert!(e.contains("not a modelrt bundle"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Names in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// `--sign` once wrote the bundle unsigned to the destination and signed it there
    /// afterwards. Now, while it is being signed and while the signed bytes are written, the
    /// destination is still absent (or the earlier file), and afterwards it is the signed bundle.
    #[test]
    fn the_destination_never_holds_an_unsigned_bundle() {
        let dir = tmp("never-unsigned");
        let (secret, public) = keygen(&dir.join("keys"), false).unwrap();
        let key = read_signing_key(&secret).unwrap();
        let demo =
            std::fs::read(crate::setup::workspace_root().join("targets/assets/demo-x86_64.mrt"))
                .unwrap();
        let out = dir.join("m.mrt");
        let store = TrustStore::from_paths(&[&public]).unwrap();
        for earlier in [None, Some(b"an earlier bundle".to_vec())] {
            if let Some(e) = &earlier {
                std::fs::write(&out, e).unwrap();
            }
            let seen = |what: &str| {
                let now = std::fs::read(&out).ok();
                assert_eq!(
                    now, earlier,
                    "{what}: the destination changed before the rename"
                );
            };
            let n = write_bundle_with(&out, &demo, |b| {
                seen("before signing");
                let signed = key.sign(b)?;
                seen("after signing");
                Ok(signed)
            })
            .unwrap();
            let written = std::fs::read(&out).unwrap();
            assert_eq!(written.len(), n);
            assert_eq!(store.check(&written).unwrap(), key.public());
            assert_eq!(listing(&dir), ["keys", "m.mrt"]);
            std::fs::remove_file(&out).unwrap();
        }
        // The public entry point signs too.
        write_bundle(&out, &demo, Some(&key)).unwrap();
        assert!(store.check(&std::fs::read(&out).unwrap()).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A bundle that cannot be signed (not a bundle) or written (the destination is a directory)
    /// leaves the destination as it was and no temporary file.
    #[test]
    fn a_failed_sign_or_write_leaves_the_destination_alone() {
        let dir = tmp("sign-fails");
        let (secret, _) = keygen(&dir.join("keys"), false).unwrap();
        let key = read_signing_key(&secret).unwrap();
        let out = dir.join("m.mrt");
        let e = format!(
            "{:#}",
            write_bundle(&out, b"not a bundle", Some(&key)).unwrap_err()
        );
        assert!(e.contains("not a modelrt bundle"), "{e}");
        assert_eq!(listing(&dir), ["keys"]);
        std::fs::write(&out, b"keep").unwrap();
        assert!(write_bundle(&out, b"not a bundle", Some(&key)).is_err());
        assert_eq!(std::fs::read(&out).unwrap(), b"keep");
        let demo =
            std::fs::read(crate::setup::workspace_root().join("targets/assets/demo-x86_64.mrt"))
                .unwrap();
        let as_dir = dir.join("d.mrt");
        std::fs::create_dir_all(as_dir.join("inside")).unwrap();
        let e = format!(
            "{:#}",
            write_bundle(&as_dir, &demo, Some(&key)).unwrap_err()
        );
        assert!(e.contains("cannot write"), "{e}");
        assert!(as_dir.join("inside").is_dir());
        assert_eq!(listing(&dir), ["d.mrt", "keys", "m.mrt"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
