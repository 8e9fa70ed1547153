//! `cargo xtask dist`: cross-build the release binaries for a device (comma devices are
//! `aarch64-unknown-linux-gnu`) into `target/dist/` as a tarball with a manifest and SHA-256 sums.
//!
//! Layout: `target/dist/modelrt-<version>-<triple>/{bin/*, README.md, MANIFEST.json, SHA256SUMS}` and
//! `target/dist/modelrt-<version>-<triple>.tar.gz` beside it (+ `.sha256`). The manifest lists every
//! file with its size and hash, the git commit and the toolchain; it holds no timestamps, so it is
//! reproducible for the same commit and toolchain.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::setup::workspace_root;

/// Binaries shipped: (package, binary).
pub const BINARIES: &[(&str, &str)] = &[
    ("modelrt-targets", "modelrt"),
    ("modelrt-gpuflash", "gpuflash"),
];

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn capture(cmd: &mut Command) -> String {
    cmd.output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// What `dist` produced.
pub struct DistReport {
    pub dir: PathBuf,
    pub tarball: PathBuf,
    pub binaries: Vec<PathBuf>,
}

/// Cross-build and package for `triple`.
pub fn dist(triple: &str) -> Result<DistReport> {
    let root = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(&cargo);
    build
        .current_dir(&root)
        .args(["build", "--release", "--target", triple]);
    for (pkg, bin) in BINARIES {
        build.args(["-p", pkg, "--bin", bin]);
    }
    eprintln!("[dist] cargo build --release --target {triple}");
    if !build.status().context("cannot run cargo")?.success() {
        bail!("cross build for {triple} failed (is the linker installed? `cargo xtask setup` installs gcc-aarch64-linux-gnu)");
    }
    let version = env!("CARGO_PKG_VERSION");
    let name = format!("modelrt-{version}-{triple}");
    let dist_root = root.join("target").join("dist");
    let dir = dist_root.join(&name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(dir.join("bin"))?;
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut binaries = Vec::new();
    for (_, bin) in BINARIES {
        let src = target_dir.join(triple).join("release").join(bin);
        let data = std::fs::read(&src)
            .with_context(|| format!("built binary missing: {}", src.display()))?;
        let dst = dir.join("bin").join(bin);
        std::fs::write(&dst, &data)?;
        set_executable(&dst)?;
        binaries.push(dst);
        files.push((format!("bin/{bin}"), data));
    }
    let readme = std::fs::read(root.join("README.md")).context("README.md missing")?;
    std::fs::write(dir.join("README.md"), &readme)?;
    files.push(("README.md".into(), readme));

    let commit = capture(
        Command::new("git")
            .current_dir(&root)
            .args(["rev-parse", "HEAD"]),
    );
    let rustc = capture(Command::new("rustc").arg("--version"));
    let entries: Vec<serde_json::Value> = files
        .iter()
        .map(|(p, d)| serde_json::json!({"path": p, "size": d.len(), "sha256": sha256_hex(d)}))
        .collect();
    let manifest = serde_json::json!({
        "name": "modelrt",
        "version": version,
        "target": triple,
        "git_commit": commit,
        "rustc": rustc,
        "files": entries,
    });
    let manifest = serde_json::to_vec_pretty(&manifest)?;
    std::fs::write(dir.join("MANIFEST.json"), &manifest)?;
    files.push(("MANIFEST.json".into(), manifest));
    let sums: String = files
        .iter()
        .map(|(p, d)| format!("{}  {p}\n", sha256_hex(d)))
        .collect();
    std::fs::write(dir.join("SHA256SUMS"), sums)?;

    let tarball = dist_root.join(format!("{name}.tar.gz"));
    let ok = Command::new("tar")
        .current_dir(&dist_root)
        .args([
            "--sort=name",
            "--owner=0",
            "--group=0",
            "--numeric-owner",
            "--mtime=@0",
            "-czf",
        ])
        .arg(&tarball)
        .arg(&name)
        .env("GZIP", "-n")
        .status()
        .context("cannot run tar")?
        .success();
    if !ok {
        bail!("tar failed");
    }
    let tar_bytes = std::fs::read(&tarball)?;
    std::fs::write(
        tarball.with_extension("gz.sha256"),
        format!("{}  {name}.tar.gz\n", sha256_hex(&tar_bytes)),
    )?;
    Ok(DistReport {
        dir,
        tarball,
        binaries,
    })
}

#[cfg(unix)]
fn set_executable(p: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> Result<()> {
    Ok(())
}
