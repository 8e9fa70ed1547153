//! What the benchmark measures, built once: the `modelrt` binary, each model's ONNX file (light-zoo
//! weights materialised), and one capture's bundle + tinygrad pickle, checked to hold the same kernels.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;
use sha2::{Digest, Sha256};

use modelrt_hal::target::TargetName;

use super::ModelSource;
use crate::manifest::Manifest;

pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn cargo_target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// Build the `modelrt` binary: release for measurements; the debug build (usually already built by
/// the tests) for the quick harness check, whose numbers are then marked as not representative.
pub fn build_modelrt(root: &Path, release: bool) -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--quiet",
        "-p",
        "modelrt-targets",
        "--bin",
        "modelrt",
    ]);
    if release {
        cmd.arg("--release");
    }
    let ok = cmd
        .current_dir(root)
        .status()
        .context("cannot run cargo")?
        .success();
    if !ok {
        bail!("building the modelrt binary failed");
    }
    let profile = if release { "release" } else { "debug" };
    Ok(cargo_target_dir(root).join(profile).join("modelrt"))
}

fn onnx_zoo_dir(python: &Path) -> Result<PathBuf> {
    let out = Command::new(python)
        .args(["-c", "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data', 'light'))"])
        .output()
        .context("cannot run the venv python")?;
    if !out.status.success() {
        bail!(
            "the venv's onnx package is missing: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// The ONNX file to benchmark. Light-zoo models get their constant-filled weights replaced by
/// seeded random ones first (`xtask/bench/materialize_light.py`), or tinygrad would fold the whole
/// network into a constant and there would be nothing to measure.
pub(super) fn model_path(
    root: &Path,
    python: &Path,
    src: ModelSource,
    out_dir: &Path,
) -> Result<PathBuf> {
    let p = match src {
        ModelSource::Repo(rel) => root.join(rel),
        ModelSource::OnnxZoo(file) => onnx_zoo_dir(python)?.join(file),
    };
    if !p.is_file() {
        bail!("benchmark model not found: {}", p.display());
    }
    let ModelSource::OnnxZoo(file) = src else {
        return Ok(p);
    };
    // Re-run every time (about a second): the output is deterministic, so the export cache stays valid.
    let dst = out_dir.join("zoo").join(file);
    std::fs::create_dir_all(out_dir.join("zoo"))?;
    let ok = Command::new(python)
        .arg(root.join("xtask/bench/materialize_light.py"))
        .arg(&p)
        .arg(&dst)
        .stdin(std::process::Stdio::null())
        .status()
        .context("cannot run materialize_light.py")?
        .success();
    if !ok {
        bail!("cannot materialize the weights of {}", p.display());
    }
    Ok(dst)
}

/// One model's bundle + pickle, exported once and reused while the inputs are unchanged.
pub(super) struct Prepared {
    pub(super) bundle: PathBuf,
    pub(super) pickle: PathBuf,
    pub(super) kernels: usize,
    pub(super) launches: usize,
}

/// Cache key of one benchmark export: the source file (ONNX model or pipeline script), the numbers
/// the export depends on (thread count, …), the named bench scripts and every exporter script.
pub(super) fn export_key(
    root: &Path,
    source: &Path,
    numbers: &[usize],
    bench_scripts: &[&str],
) -> Result<String> {
    let scripts = root.join("xtask").join("bench");
    let mut key = Sha256::new();
    key.update(std::fs::read(source).with_context(|| format!("cannot read {}", source.display()))?);
    for n in numbers {
        key.update(n.to_le_bytes());
    }
    for f in bench_scripts {
        key.update(std::fs::read(scripts.join(f)).with_context(|| format!("cannot read {f}"))?);
    }
    for p in exporter_sources(&root.join("xtask").join("exporter"))? {
        key.update(std::fs::read(&p)?);
    }
    Ok(key.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Every `.py` file under the exporter folder (entry points, the `mrt` package, tests, tools), in a fixed order.
fn exporter_sources(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in
            std::fs::read_dir(&d).with_context(|| format!("cannot list {}", d.display()))?
        {
            let p = entry?.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|e| e == "py") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Export `onnx` (bundle + pickle of the same capture) into `dir`; with `beam_cache`, the kernels are the
/// searched ones that cache records (`--beam-cache`, no search at bench time).
pub(super) fn export_model(
    root: &Path,
    python: &Path,
    onnx: &Path,
    dir: &Path,
    threads: usize,
    beam_cache: Option<&Path>,
    baseline: Option<&str>,
) -> Result<Prepared> {
    let bundle = dir.join("model.mrt");
    let pickle = dir.join("jit.pkl");
    let meta = dir.join("jit.pkl.json");
    let scripts = root.join("xtask").join("bench");
    let mut key = export_key(
        root,
        onnx,
        &[threads],
        &["export_with_pickle.py", "materialize_light.py"],
    )?;
    if let Some(b) = baseline {
        key.push_str(b);
    }
    if let Some(cache) = beam_cache {
        let bytes =
            std::fs::read(cache).with_context(|| format!("cannot read {}", cache.display()))?;
        key.push_str(&sha256_hex(&bytes));
    }
    let stamp = dir.join("stamp");
    let fresh = std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == key)
        && bundle.is_file()
        && pickle.is_file()
        && meta.is_file();
    // an export the exporter refused (exit 2: a search cache that does not fit the model) is refused again for the
    // same inputs: remember it instead of repeating the whole capture on every run
    let refused = dir.join("refused");
    if let Some(reason) = std::fs::read_to_string(&refused)
        .ok()
        .and_then(|s| s.strip_prefix(&format!("{key}\n")).map(str::to_string))
    {
        bail!("{} (refused for these inputs before)", reason.trim());
    }
    if !fresh {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let manifest_dir = dir.join("manifest");
        eprintln!(
            "[bench] exporting {} (bundle + tinygrad pickle from one capture)",
            onnx.display()
        );
        let status = crate::exporter_python::command(python)
            .arg(scripts.join("export_with_pickle.py"))
            .arg("--pickle-out")
            .arg(&pickle)
            .arg("--onnx")
            .arg(onnx)
            .args([
                "--target",
                TargetName::host_cpu().as_str(),
                "--threads",
                &threads.to_string(),
                "--reference",
                "--out",
            ])
            .arg(&manifest_dir)
            .args(
                beam_cache
                    .map(|c| ["--beam-cache".as_ref(), c.as_os_str()])
                    .into_iter()
                    .flatten(),
            )
            .args(
                baseline
                    .map(|b| ["--cpu-baseline", b])
                    .into_iter()
                    .flatten(),
            )
            .stdin(std::process::Stdio::null())
            .status()
            .context("cannot start the exporter")?;
        if !status.success() {
            let reason = format!("export of {} failed ({status})", onnx.display());
            if status.code() == Some(2) && beam_cache.is_some() {
                std::fs::write(&refused, format!("{key}\n{reason}\n"))?;
            }
            bail!("{reason}");
        }
        let manifest = Manifest::load(&manifest_dir)?;
        let bytes = crate::bundle_build::build(&manifest)?;
        std::fs::write(&bundle, bytes)
            .with_context(|| format!("cannot write {}", bundle.display()))?;
        std::fs::write(&stamp, &key)?;
    }
    let (kernels, launches) = check_same_kernels(&bundle, &meta)?;
    Ok(Prepared {
        bundle,
        pickle,
        kernels,
        launches,
    })
}

/// The bundle's kernel binaries must be exactly the pickled jit's (same capture). Returns
/// (kernels, run launches).
pub(super) fn check_same_kernels(bundle: &Path, meta: &Path) -> Result<(usize, usize)> {
    let bytes =
        std::fs::read(bundle).with_context(|| format!("cannot read {}", bundle.display()))?;
    let b = modelrt_core::Bundle::parse(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: {e}", bundle.display()))?;
    let mut ours = BTreeSet::new();
    for k in b.body().kernels.iter() {
        ours.insert(sha256_hex(k?.binary));
    }
    let launches = b
        .body()
        .run
        .iter()
        .filter(|s| {
            matches!(
                s,
                Ok(modelrt_core::bundle::Step::Launch { .. }
                    | modelrt_core::bundle::Step::LaunchThreads { .. })
            )
        })
        .count();
    let meta: Value = serde_json::from_slice(&std::fs::read(meta)?).context("bad jit.pkl.json")?;
    let theirs: BTreeSet<String> = meta["kernels"]
        .as_array()
        .context("jit.pkl.json has no kernel list")?
        .iter()
        .filter_map(|k| k["sha256"].as_str().map(str::to_string))
        .collect();
    if ours != theirs {
        bail!(
            "the bundle and the tinygrad pickle do not hold the same kernels ({} vs {} distinct binaries)",
            ours.len(),
            theirs.len()
        );
    }
    Ok((ours.len(), launches))
}
