//! `cargo xtask capi`: build modelrt's C library (crate `targets/capi`) and lay it out for C users:
//! `target/capi/include/modelrt.h` (the checked-in `targets/capi/include/modelrt.h`) and
//! `target/capi/lib/libmodelrt.{so,a}`; with a target triple (comma devices:
//! `aarch64-unknown-linux-gnu`, `--target cpu-aarch64`) under `target/capi/<triple>/` instead.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::setup::workspace_root;

/// What `capi` produced.
#[derive(Clone, Debug)]
pub struct CapiBuild {
    /// The directory holding `modelrt.h`.
    pub include: PathBuf,
    /// `libmodelrt.so`.
    pub cdylib: PathBuf,
    /// `libmodelrt.a`.
    pub staticlib: PathBuf,
}

/// The Rust triple for a `--target` value (`cpu-aarch64` is the comma build; a triple passes through).
pub fn triple_for(target: &str) -> &str {
    match target {
        "cpu-aarch64" => "aarch64-unknown-linux-gnu",
        t => t,
    }
}

/// Build the C library (`release` or dev profile) for `triple` (`None`: the host) and copy it,
/// with the header, into `target/capi/`.
pub fn build(triple: Option<&str>, release: bool) -> Result<CapiBuild> {
    let root = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(&root)
        .args(["build", "-p", "modelrt-capi", "--lib"]);
    if release {
        cmd.arg("--release");
    }
    if let Some(t) = triple {
        cmd.args(["--target", t]);
    }
    eprintln!("[capi] {cmd:?}");
    if !cmd.status().context("cannot run cargo")?.success() {
        bail!("building modelrt-capi failed (a cross build needs gcc-aarch64-linux-gnu: `cargo xtask setup`)");
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let mut built = target_dir.clone();
    if let Some(t) = triple {
        built.push(t);
    }
    built.push(if release { "release" } else { "debug" });
    let mut out = target_dir.join("capi");
    if let Some(t) = triple {
        out.push(t);
    }
    let (include, lib) = (out.join("include"), out.join("lib"));
    std::fs::create_dir_all(&include)?;
    std::fs::create_dir_all(&lib)?;
    copy(&header_path(&root), &include.join("modelrt.h"))?;
    let cdylib = lib.join("libmodelrt.so");
    let staticlib = lib.join("libmodelrt.a");
    copy(&built.join("libmodelrt.so"), &cdylib)?;
    copy(&built.join("libmodelrt.a"), &staticlib)?;
    Ok(CapiBuild {
        include,
        cdylib,
        staticlib,
    })
}

/// The checked-in header.
pub fn header_path(root: &Path) -> PathBuf {
    root.join("targets/capi/include/modelrt.h")
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to)
        .map(|_| ())
        .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))
}

/// System libraries a program linking `libmodelrt.a` needs on Linux (what the Rust standard
/// library pulls in).
pub const STATIC_LINK_LIBS: &[&str] = &["-lpthread", "-ldl", "-lm", "-lrt", "-lgcc_s", "-lc"];
