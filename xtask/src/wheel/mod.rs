//! `cargo xtask wheel`: build modelrt's Python extension (crate `targets/python`) with cargo and
//! pack it, with its type stubs (`targets/python/modelrt.pyi`), into an abi3 wheel
//! `target/wheels/modelrt-<version>-cp310-abi3-linux_<arch>.whl` (PEP 427: the module, then
//! `modelrt-<version>.dist-info/{METADATA,WHEEL,RECORD}`). The wheel is assembled here rather than
//! by maturin so the build needs nothing beyond cargo (no network, no extra Python package).
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::setup::workspace_root;

mod zip;

/// The wheel's version (the workspace's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The wheel file name for this machine.
pub fn wheel_name() -> String {
    format!(
        "modelrt-{VERSION}-cp310-abi3-linux_{}.whl",
        std::env::consts::ARCH
    )
}

/// Build the extension (`release` or dev profile) and write the wheel into `target/wheels/`.
/// `python` (the interpreter PyO3's build looks at; abi3 needs only its version) defaults to
/// `$MODELRT_PYTHON`, else `python3` on PATH.
pub fn build(release: bool, python: Option<&Path>) -> Result<PathBuf> {
    let root = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(&root)
        .args(["build", "-p", "modelrt-python", "--lib"]);
    if release {
        cmd.arg("--release");
    }
    if let Some(p) = python
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("MODELRT_PYTHON").map(PathBuf::from))
    {
        cmd.env("PYO3_PYTHON", p);
    }
    eprintln!("[wheel] {cmd:?}");
    if !cmd.status().context("cannot run cargo")?.success() {
        bail!("building modelrt-python failed");
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let lib = target_dir
        .join(if release { "release" } else { "debug" })
        .join("libmodelrt_py.so");
    let so = std::fs::read(&lib).with_context(|| format!("reading {}", lib.display()))?;
    let stubs = root.join("targets/python/modelrt.pyi");
    let pyi = std::fs::read(&stubs).with_context(|| format!("reading {}", stubs.display()))?;
    let dir = target_dir.join("wheels");
    std::fs::create_dir_all(&dir)?;
    let out = dir.join(wheel_name());
    std::fs::write(&out, wheel_bytes(&so, &pyi))
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(out)
}

/// The `METADATA` file (core metadata 2.1).
fn metadata() -> String {
    format!(
        "Metadata-Version: 2.1\nName: modelrt\nVersion: {VERSION}\n\
         Summary: Run precompiled modelrt bundles (.mrt) from Python with numpy arrays\n\
         License: MIT OR Apache-2.0\nRequires-Python: >=3.10\nRequires-Dist: numpy\n"
    )
}

/// The `WHEEL` file.
fn wheel_file() -> String {
    format!(
        "Wheel-Version: 1.0\nGenerator: modelrt-xtask {VERSION}\nRoot-Is-Purelib: false\n\
         Tag: cp310-abi3-linux_{}\n",
        std::env::consts::ARCH
    )
}

/// A RECORD hash: `sha256=` and the URL-safe base64 of the digest without padding (PEP 376/427).
pub fn record_hash(data: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let d = Sha256::digest(data);
    let mut s = String::from("sha256=");
    for chunk in d.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            s.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    s
}

/// The whole wheel: the module, its stubs and the dist-info files, RECORD last.
pub fn wheel_bytes(so: &[u8], pyi: &[u8]) -> Vec<u8> {
    let info = format!("modelrt-{VERSION}.dist-info");
    let files: Vec<(String, Vec<u8>)> = vec![
        ("modelrt.abi3.so".into(), so.to_vec()),
        ("modelrt.pyi".into(), pyi.to_vec()),
        (format!("{info}/METADATA"), metadata().into_bytes()),
        (format!("{info}/WHEEL"), wheel_file().into_bytes()),
    ];
    let mut record = String::new();
    for (name, data) in &files {
        record += &format!("{name},{},{}\n", record_hash(data), data.len());
    }
    record += &format!("{info}/RECORD,,\n");
    let mut z = zip::Writer::default();
    for (name, data) in &files {
        z.add(name, data, name.ends_with(".so"));
    }
    z.add(&format!("{info}/RECORD"), record.as_bytes(), false);
    z.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_hash_is_pep376_urlsafe_base64() {
        // sha256("") = e3b0c442…b855; its URL-safe base64 without padding, from Python's
        // base64.urlsafe_b64encode(hashlib.sha256(b"").digest()).rstrip(b"=").
        assert_eq!(
            record_hash(b""),
            "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
    }
}
