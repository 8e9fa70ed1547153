//! The stateful-pipeline benchmark: an openpilot-shaped modeld step (`xtask/models/modeld_pipeline.py`: NV12 warp,
//! vision, policy, on-device queues) timed frame by frame. One capture (`xtask/bench/export_pipeline_with_pickle.py`,
//! the exporter's `--tinygrad` path unchanged plus a compile_modeld-style pickle of the same jit) gives the bundle,
//! the pickle and the frames, so both runtimes replay the same kernels (checked by hashing every kernel binary) on
//! the same inputs; it is exported per thread count. Each round starts one fresh process per (runtime, thread count)
//! pair in rotated order: `modelrt bench --steps N` (inputs copied), the same with `--zero-copy` (frames read in
//! place), and tinygrad's own replay (`xtask/bench/refbench_pipeline.py`); every process times N consecutive frames
//! from the initial state. There is no onnxruntime column: the pipeline is
//! a tinygrad program, not an ONNX model.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::measure::Ctx;
use super::prepare::{check_same_kernels, export_key};
use super::proc;
use super::stats::{stats_json, summarize, Acc};
use crate::manifest::Manifest;

/// Pipelines of the full benchmark: (name, `SCRIPT.py:FN` relative to the workspace).
pub const PIPELINES: &[(&str, &str)] =
    &[("modeld_pipeline", "xtask/models/modeld_pipeline.py:build")];

/// The runtimes, in the order of the first round.
const RUNTIMES: [&str; 3] = ["modelrt", "modelrt-zero-copy", "tinygrad"];
/// Seed of the benchmark frames.
const FRAMES_SEED: u64 = 7;
/// Upper bound for one worker process or the export.
const TIMEOUT: Duration = Duration::from_secs(900);

/// A pipeline's bundle, pickle and frames from one capture.
struct Prepared {
    bundle: PathBuf,
    pickle: PathBuf,
    frames_dir: PathBuf,
    inputs: Vec<String>,
    kernels: usize,
    launches: usize,
}

/// Export `spec` (once per content of the script, exporter, bench scripts, threads and frame count).
fn prepare(
    root: &Path,
    python: &Path,
    spec: &str,
    dir: &Path,
    threads: usize,
    frames: usize,
) -> Result<Prepared> {
    let (script, _) = spec
        .rsplit_once(':')
        .context("pipeline spec is not SCRIPT.py:FN")?;
    let scripts = root.join("xtask").join("bench");
    let key = export_key(
        root,
        &root.join(script),
        &[threads, frames],
        &["export_pipeline_with_pickle.py", "export_with_pickle.py"],
    )?;
    let (bundle, pickle, frames_dir) = (
        dir.join("pipeline.mrt"),
        dir.join("jit.pkl"),
        dir.join("frames"),
    );
    let meta_path = dir.join("jit.pkl.json");
    let stamp = dir.join("stamp");
    let fresh = std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == key)
        && bundle.is_file()
        && pickle.is_file()
        && meta_path.is_file();
    if !fresh {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let manifest_dir = dir.join("manifest");
        eprintln!("[bench] exporting {spec} (bundle + tinygrad pickle + {frames} frames from one capture)");
        let status = crate::exporter_python::command(python)
            .arg(scripts.join("export_pipeline_with_pickle.py"))
            .arg("--pickle-out")
            .arg(&pickle)
            .args([
                "--frames",
                &frames.to_string(),
                "--frames-seed",
                &FRAMES_SEED.to_string(),
            ])
            .arg("--frames-out")
            .arg(&frames_dir)
            .arg("--tinygrad")
            .arg(format!(
                "{}:{}",
                root.join(script).display(),
                &spec[script.len() + 1..]
            ))
            .args([
                "--target",
                modelrt_hal::target::TargetName::host_cpu().as_str(),
                "--threads",
                &threads.to_string(),
                "--out",
            ])
            .arg(&manifest_dir)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(std::process::Stdio::null())
            .status()
            .context("cannot start the pipeline export")?;
        if !status.success() {
            bail!("export of {spec} failed ({status})");
        }
        let manifest = Manifest::load(&manifest_dir)?;
        let bytes = crate::bundle_build::build(&manifest)?;
        std::fs::write(&bundle, bytes)
            .with_context(|| format!("cannot write {}", bundle.display()))?;
        std::fs::write(&stamp, &key)?;
    }
    let (kernels, launches) = check_same_kernels(&bundle, &meta_path)?;
    let meta: Value =
        serde_json::from_slice(&std::fs::read(&meta_path)?).context("bad jit.pkl.json")?;
    let inputs = meta["inputs"]
        .as_array()
        .context("jit.pkl.json has no input list")?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    Ok(Prepared {
        bundle,
        pickle,
        frames_dir,
        inputs,
        kernels,
        launches,
    })
}

fn worker(
    ctx: &Ctx<'_>,
    runtime: &str,
    p: &Prepared,
    frames: usize,
    threads: usize,
) -> Result<Value> {
    let warmup = ctx.opts.warmup.to_string();
    let mut cmd = if runtime == "tinygrad" {
        let mut c = crate::exporter_python::command(ctx.python);
        c.arg(ctx.refbench.with_file_name("refbench_pipeline.py"))
            .arg("--pickle")
            .arg(&p.pickle)
            .arg("--frames-dir")
            .arg(&p.frames_dir)
            .args(["--warmup", &warmup]);
        c
    } else {
        let mut c = Command::new(ctx.modelrt);
        c.arg("bench").arg(&p.bundle).args([
            "--json",
            "--steps",
            &frames.to_string(),
            "--warmup",
            &warmup,
            "--threads",
            &threads.to_string(),
        ]);
        for name in &p.inputs {
            c.arg("--input").arg(format!(
                "{name}={}",
                p.frames_dir.join(format!("{name}.npy")).display()
            ));
        }
        if runtime == "modelrt-zero-copy" {
            c.arg("--zero-copy");
        }
        c
    };
    proc::run_json(&mut cmd, runtime, TIMEOUT)
}

/// Median of the per-process medians of `key` (ns) in `docs`.
fn median_of(docs: &[Value], key: &str) -> Value {
    let v: Vec<u64> = docs.iter().filter_map(|d| d[key].as_u64()).collect();
    summarize(&v).map_or(Value::Null, |(_, m, _)| json!(m))
}

/// Benchmark one pipeline for each thread count of `counts` (exported per count); one results object per count.
/// Each round starts one fresh process per (runtime, thread count) pair in rotated order, as for the models.
pub(super) fn bench_pipeline(
    ctx: &Ctx<'_>,
    root: &Path,
    name: &str,
    spec: &str,
    counts: &[usize],
) -> Result<Vec<Value>> {
    // `--iters` is the frame count here: at least 20, like the golden test (10 in the quick check).
    let frames = if ctx.opts.quick {
        10
    } else {
        ctx.opts.iters.max(20)
    };
    let mut prepared = Vec::new();
    for &t in counts {
        let dir = ctx.out_dir.join(format!("{name}-t{t}"));
        prepared.push(prepare(root, ctx.python, spec, &dir, t, frames)?);
    }
    let pairs: Vec<(&str, usize)> = (0..counts.len())
        .flat_map(|i| RUNTIMES.iter().map(move |rt| (*rt, i)))
        .collect();
    let mut accs: Vec<Acc> = pairs.iter().map(|_| Acc::default()).collect();
    let mut docs: Vec<Vec<Value>> = vec![Vec::new(); pairs.len()];
    for r in 0..ctx.opts.rounds {
        for (rt, i) in super::round_order(&pairs, r) {
            let threads = counts[i];
            eprintln!(
                "[bench] {name}: round {}/{} {rt}, {threads} thread(s) ({frames} frames)",
                r + 1,
                ctx.opts.rounds
            );
            let v = worker(ctx, rt, &prepared[i], frames, threads)
                .with_context(|| format!("{name}: {rt}, {threads} thread(s)"))?;
            let k = pairs.iter().position(|x| *x == (rt, i)).unwrap_or(0);
            accs[k].add(&v)?;
            docs[k].push(v);
        }
    }
    let ratio = |a: u64, b: u64| {
        if b == 0 {
            Value::Null
        } else {
            json!(a as f64 / b as f64)
        }
    };
    let mut out = Vec::new();
    for (i, p) in prepared.iter().enumerate() {
        let k = |rt: &str| pairs.iter().position(|x| *x == (rt, i)).unwrap_or(0);
        let (km, kz, kt) = (k(RUNTIMES[0]), k(RUNTIMES[1]), k(RUNTIMES[2]));
        let [m, z, t] = [accs[km].stats()?, accs[kz].stats()?, accs[kt].stats()?];
        let mut frames_bytes = 0u64;
        for name in &p.inputs {
            frames_bytes += std::fs::metadata(p.frames_dir.join(format!("{name}.npy")))?.len();
        }
        let paths = docs[kz]
            .last()
            .map_or(Value::Null, |d| d["input_paths"].clone());
        out.push(json!({
            "pipeline": name, "threads": counts[i], "spec": spec, "frames": frames, "frames_bytes": frames_bytes,
            "kernels": p.kernels, "launches": p.launches, "same_kernels_as_tinygrad": true,
            "modelrt": stats_json(&m), "modelrt_zero_copy": stats_json(&z), "tinygrad": stats_json(&t),
            "modelrt_enqueue_median_ns": median_of(&docs[km], "enqueue_median_ns"),
            "modelrt_device_median_ns": median_of(&docs[km], "device_median_ns"),
            "zero_copy_enqueue_median_ns": median_of(&docs[kz], "enqueue_median_ns"),
            "zero_copy_device_median_ns": median_of(&docs[kz], "device_median_ns"),
            "zero_copy_input_paths": paths,
            "ratio_modelrt_over_tinygrad": ratio(m.median_ns, t.median_ns),
            "ratio_zero_copy_over_tinygrad": ratio(z.median_ns, t.median_ns),
        }));
    }
    Ok(out)
}
