//! `cargo xtask wheel --arm64-root`: the aarch64 wheel installed into an arm64 Debian root and used from that root's
//! own Python under qemu-user, as on a comma device. The root is bootstrapped under `target/arm64-root/` by
//! debootstrap's first stage (`--foreign`: nothing of the foreign architecture runs) from the machine's own Debian
//! archive (its apt sources, as `cargo xtask firmware` reads them; signatures checked with its keyring), with
//! `python3`; the packages debootstrap fetched are unpacked with `dpkg-deb -x`. numpy's aarch64 wheel (from the
//! package registry) and our wheel go into `ROOT/opt/modelrt-site` with the host's pip for the arm64 platform; the
//! root's `/usr/bin/python3` then runs under `qemu-aarch64 -L ROOT` (qemu resolves the root's absolute paths, the
//! dynamic loader first) and verifies the cpu-aarch64 demo bundle against its embedded onnxruntime reference from
//! Python. Result in docs/python-wheel.md.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};

use crate::firmware::{debian_archive, DEFAULT_KEYRING, URI_ENV};
use crate::prereq::Probe;

/// The Debian release of the root: the machine's own (its archive serves it).
const SUITE: &str = "bookworm";

/// What runs inside the root: the demo bundle verified from Python, and one run checked against the reference.
const CHECK: &str = r#"
import platform, sys
import numpy as np
import modelrt
m = modelrt.load(sys.argv[1], device="cpu")
r = m.verify()
bad = {k: v for k, v in r.items() if not v.get("ok", False)}
assert r and not bad, r
print(f"python {platform.python_version()} on {platform.machine()}, modelrt {modelrt.__version__}: "
      f"{sys.argv[1].rsplit('/', 1)[-1]} on {m.device}: {len(r)} outputs match the embedded reference "
      f"(max abs err {max(v['max_abs'] for v in r.values()):.3e})")
"#;

fn run(cmd: &mut Command, what: &str) -> Result<String> {
    eprintln!("[arm64-root] {what}");
    let o = cmd
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !o.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout).trim(),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The machine's Debian archive URI and keyring (`$MODELRT_DEBIAN_URI` overrides the URI).
fn archive() -> Result<(String, String)> {
    if let Ok(u) = std::env::var(URI_ENV) {
        if !u.is_empty() {
            return Ok((u, DEFAULT_KEYRING.into()));
        }
    }
    let sources = crate::apt_sources::machine_sources();
    let s = debian_archive(&sources).ok_or_else(|| {
        anyhow!("no Debian archive among the apt sources in /etc/apt/sources.list(.d); set {URI_ENV}=<Debian archive URI>")
    })?;
    let keyring = s
        .signed_by
        .clone()
        .filter(|k| k.starts_with('/'))
        .unwrap_or_else(|| DEFAULT_KEYRING.to_string());
    Ok((s.uri.clone(), keyring))
}

/// Bootstrap (once) the arm64 root with python3 at `root`; returns its python.
pub fn bootstrap(root: &Path) -> Result<PathBuf> {
    let python = root.join("usr/bin/python3");
    let stamp = root.join(".modelrt-unpacked");
    if stamp.is_file() && python.exists() {
        return Ok(python);
    }
    for tool in ["debootstrap", "qemu-aarch64", "dpkg-deb"] {
        if !crate::prereq::System.has_program(tool) {
            bail!("{tool} is missing: install it with `apt-get install debootstrap qemu-user` (`cargo xtask setup` does)");
        }
    }
    let (uri, keyring) = archive()?;
    if root.exists() {
        std::fs::remove_dir_all(root)
            .with_context(|| format!("cannot clear {}", root.display()))?;
    }
    run(
        Command::new("debootstrap")
            .args([
                "--foreign",
                "--arch=arm64",
                "--variant=minbase",
                "--include=python3",
            ])
            .arg(format!("--keyring={keyring}"))
            .arg(SUITE)
            .arg(root)
            .arg(&uri),
        &format!("debootstrap --foreign --arch=arm64 {SUITE} from {uri}"),
    )?;
    let debs = root.join("var/cache/apt/archives");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&debs)
        .with_context(|| format!("debootstrap left no packages in {}", debs.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    files.sort();
    for deb in &files {
        // merged /usr: the root's /lib, /bin, ... are symlinks into /usr, which tar must keep
        let mut tar = Command::new("sh");
        tar.arg("-c")
            .arg("dpkg-deb --fsys-tarfile \"$1\" | tar -x --keep-directory-symlink -C \"$2\"")
            .arg("sh")
            .arg(deb)
            .arg(root);
        run(
            &mut tar,
            &format!(
                "unpack {}",
                deb.file_name().unwrap_or_default().to_string_lossy()
            ),
        )?;
    }
    if !python.exists() {
        bail!(
            "the arm64 root has no {} after unpacking {} packages",
            python.display(),
            files.len()
        );
    }
    std::fs::write(&stamp, format!("{} packages\n", files.len()))?;
    Ok(python)
}

/// Install numpy and `wheel` (manylinux tag `tag`) into `ROOT/opt/modelrt-site` with the pip of the tools' venv
/// (`bin`) and verify the aarch64 demo bundle from the root's Python under qemu; returns what it printed.
pub fn test(bin: &Path, wheel: &Path, tag: &str, root: &Path) -> Result<String> {
    let python = bootstrap(root)?;
    let site = root.join("opt/modelrt-site");
    if site.exists() {
        std::fs::remove_dir_all(&site)?;
    }
    let version = run(
        Command::new("qemu-aarch64")
            .arg("-L")
            .arg(root)
            .arg(&python)
            .args([
                "-c",
                "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')",
            ]),
        "the root's python3 --version under qemu",
    )?;
    let version = version.trim();
    run(
        Command::new(bin.join("python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args([
                "--platform",
                "manylinux2014_aarch64",
                "--platform",
                tag,
                "--only-binary=:all:",
            ])
            .args([
                "--implementation",
                "cp",
                "--python-version",
                version,
                "--target",
            ])
            .arg(&site)
            .arg("numpy")
            .arg(wheel),
        &format!(
            "pip install numpy {} for arm64 Python {version}",
            wheel.display()
        ),
    )?;
    let bundle = root.join("opt/demo-aarch64.mrt");
    std::fs::copy(
        crate::setup::workspace_root().join("targets/assets/demo-aarch64.mrt"),
        &bundle,
    )?;
    run(
        Command::new("qemu-aarch64")
            .arg("-L")
            .arg(root)
            .arg(&python)
            // the host path: qemu maps the root's paths only for some system calls (not the bundle loader's)
            .args(["-c", CHECK])
            .arg(&bundle)
            .env("PYTHONPATH", "/opt/modelrt-site")
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        "the demo bundle from the root's Python under qemu-aarch64",
    )
}
