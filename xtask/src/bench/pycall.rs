//! Per-call cost from Python on the policy model: modelrt's Python `Model.run` (new output arrays, and
//! preallocated ones) against `onnxruntime.InferenceSession.run` and tinygrad's unpickled `TinyJit`, all four in
//! one process in interleaved rounds (`xtask/bench/pycall.py`). The wheel is built by [`crate::wheel::build`]
//! (release for measurements, the dev build for `--quick`) and installed with pip into a scratch directory
//! under `target/bench/`, never into the venv.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::measure::Ctx;
use super::prepare::Prepared;
use super::proc;

/// The callers `pycall.py` reports, in its first round's order.
const CALLERS: [&str; 4] = ["modelrt", "modelrt_prealloc", "onnxruntime", "tinygrad"];
/// The goals for modelrt's per-call time: ≤ 0.5× onnxruntime's and ≤ 0.1× tinygrad's.
const GOAL_OVER_ORT: f64 = 0.5;
const GOAL_OVER_TINYGRAD: f64 = 0.1;
/// Upper bound for the whole measuring process.
const TIMEOUT: Duration = Duration::from_secs(900);

/// Build the wheel and install it into `dir` (emptied first); returns `dir`.
pub(super) fn install_wheel(ctx: &Ctx<'_>, dir: &Path) -> Result<PathBuf> {
    let wheel = crate::wheel::build(!ctx.opts.quick, Some(ctx.python))?;
    let _ = std::fs::remove_dir_all(dir);
    let ok = Command::new(ctx.python)
        .args([
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            "--target",
        ])
        .arg(dir)
        .arg(&wheel)
        .stdin(std::process::Stdio::null())
        .status()
        .context("cannot run pip")?
        .success();
    if !ok {
        bail!(
            "pip could not install {} into {}",
            wheel.display(),
            dir.display()
        );
    }
    Ok(dir.to_path_buf())
}

/// `a / b` of two callers' medians.
fn ratio(v: &Value, a: &str, b: &str) -> Value {
    match (v[a]["median_ns"].as_u64(), v[b]["median_ns"].as_u64()) {
        (Some(x), Some(y)) if y > 0 => json!(x as f64 / y as f64),
        _ => Value::Null,
    }
}

/// Measure the four callers on `p` (a policy export, named `label` in the report) and `onnx`, with
/// the wheel installed in `site`; the results object with ratios.
pub(super) fn bench_pycall(
    ctx: &Ctx<'_>,
    root: &Path,
    site: &Path,
    onnx: &Path,
    p: &Prepared,
    label: &str,
) -> Result<Value> {
    let scripts = root.join("xtask").join("bench");
    let path = std::env::join_paths([site, scripts.as_path()]).context("bad PYTHONPATH entry")?;
    let (rounds, iters, warmup) = if ctx.opts.quick {
        (1, 20, 5)
    } else {
        (ctx.opts.rounds.max(5), 200, 20)
    };
    eprintln!(
        "[bench] {label}: per-call cost from Python ({rounds} rounds × {iters} calls per caller)"
    );
    let mut cmd = Command::new(ctx.python);
    cmd.env("PYTHONPATH", path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(scripts.join("pycall.py"))
        .arg("--bundle")
        .arg(&p.bundle)
        .arg("--pickle")
        .arg(&p.pickle)
        .arg("--onnx")
        .arg(onnx)
        .args(["--threads", &ctx.threads.to_string()])
        .args(["--rounds", &rounds.to_string()])
        .args(["--iters", &iters.to_string()])
        .args(["--warmup", &warmup.to_string()]);
    let mut v = proc::run_json(&mut cmd, "pycall.py", TIMEOUT)?;
    for c in CALLERS {
        v[c]["median_ns"]
            .as_u64()
            .with_context(|| format!("pycall.py reported no median for {c}"))?;
    }
    v["model"] = json!(label);
    v["ratio_modelrt_over_onnxruntime"] = ratio(&v, "modelrt", "onnxruntime");
    v["ratio_modelrt_over_tinygrad"] = ratio(&v, "modelrt", "tinygrad");
    v["ratio_prealloc_over_onnxruntime"] = ratio(&v, "modelrt_prealloc", "onnxruntime");
    v["ratio_prealloc_over_tinygrad"] = ratio(&v, "modelrt_prealloc", "tinygrad");
    v["goal_over_onnxruntime"] = json!(GOAL_OVER_ORT);
    v["goal_over_tinygrad"] = json!(GOAL_OVER_TINYGRAD);
    Ok(v)
}
