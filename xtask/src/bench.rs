//! `cargo xtask bench`: modelrt vs tinygrad 0.14's own Python runtime vs onnxruntime on this machine.
//!
//! For each model, one capture (`xtask/bench/export_with_pickle.py`, the exporter unchanged plus a
//! compile3-style pickle of the same TinyJit) yields both the bundle and the pickle, so modelrt and
//! tinygrad replay the very same kernels (checked by hashing every kernel binary). Each round
//! starts one fresh process per runtime (so each reports its own load time and peak RSS), in an
//! order rotated per round; step samples are pooled over rounds. Results go to
//! `target/bench/results.{json,md}` (`results-quick.*` for `--quick`), one Perfetto trace per
//! model to `target/bench/NAME.trace.json`; the dispatch-overhead figure comes from [`overhead`].
pub mod overhead;
pub mod proc;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::manifest::Manifest;

/// Models of the full benchmark: (name, where to find the ONNX file).
pub const MODELS: &[(&str, ModelSource)] = &[
    ("policy", ModelSource::Repo("xtask/models/policy.onnx")),
    ("dmonitor", ModelSource::Repo("xtask/models/dmonitor.onnx")),
    ("vision", ModelSource::Repo("xtask/models/vision.onnx")),
    ("squeezenet", ModelSource::OnnxZoo("light_squeezenet.onnx")),
    ("resnet50", ModelSource::OnnxZoo("light_resnet50.onnx")),
];

/// Where a benchmark model comes from.
#[derive(Clone, Copy, Debug)]
pub enum ModelSource {
    /// A path inside this repository.
    Repo(&'static str),
    /// A file of the ONNX light model zoo shipped inside the venv's onnx wheel.
    OnnxZoo(&'static str),
}

/// The three runtimes, in the order of the first round.
const RUNTIMES: [&str; 3] = ["modelrt", "tinygrad", "onnxruntime"];
/// Upper bound for one worker process (resnet50 in tinygrad's runtime is the slowest).
const WORKER_TIMEOUT: Duration = Duration::from_secs(900);
/// Timed time per process and round that [`steps_for`] aims at.
const ROUND_STEP_BUDGET: Duration = Duration::from_millis(1500);
/// Upper bound of steps per process.
const MAX_STEPS: usize = 1000;
/// Launches of the long overhead chain (the short one has 1).
const CHAIN_LAUNCHES: usize = 201;

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// CI smoke mode: policy only, one round, few iterations.
    pub quick: bool,
    /// Only these models (names from [`MODELS`]); empty = all.
    pub models: Vec<String>,
    /// Fresh-process rounds per runtime.
    pub rounds: usize,
    /// Timed steps per process.
    pub iters: usize,
    /// Untimed warm-up steps per process.
    pub warmup: usize,
    /// Threads for every runtime (baked into the kernels, ORT intra-op threads); 0 = all cores.
    pub threads: usize,
}

impl BenchOptions {
    /// The full benchmark with defaults sized for a 2-core machine.
    pub fn full() -> Self {
        BenchOptions {
            quick: false,
            models: Vec::new(),
            rounds: 3,
            iters: 30,
            warmup: 5,
            threads: 0,
        }
    }

    /// The CI smoke run (< 60 s once the venv and release build exist).
    pub fn quick() -> Self {
        BenchOptions {
            quick: true,
            models: vec!["policy".into()],
            rounds: 1,
            iters: 5,
            warmup: 1,
            threads: 0,
        }
    }
}

/// Pooled statistics of one runtime on one model.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub min_ns: u64,
    pub median_ns: u64,
    pub max_ns: u64,
    pub samples: usize,
    pub load_median_ns: u64,
    pub peak_rss_bytes: u64,
}

/// Min/median/max of `samples` (upper median for even counts); `None` if empty.
pub fn summarize(samples: &[u64]) -> Option<(u64, u64, u64)> {
    let mut v = samples.to_vec();
    v.sort_unstable();
    Some((*v.first()?, v[v.len() / 2], *v.last()?))
}

/// The order of the runtimes in round `r` (rotated so no runtime always runs first or last).
pub fn round_order(r: usize) -> [&'static str; 3] {
    let mut o = RUNTIMES;
    o.rotate_left(r % RUNTIMES.len());
    o
}

fn host_cpu_target() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "cpu-aarch64"
    } else {
        "cpu-x86_64"
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
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
fn model_path(root: &Path, python: &Path, src: ModelSource, out_dir: &Path) -> Result<PathBuf> {
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
struct Prepared {
    bundle: PathBuf,
    pickle: PathBuf,
    kernels: usize,
    launches: usize,
}

fn export_model(
    root: &Path,
    python: &Path,
    onnx: &Path,
    dir: &Path,
    threads: usize,
) -> Result<Prepared> {
    let bundle = dir.join("model.mrt");
    let pickle = dir.join("jit.pkl");
    let meta = dir.join("jit.pkl.json");
    let scripts = root.join("xtask").join("bench");
    let mut key = Sha256::new();
    key.update(std::fs::read(onnx).with_context(|| format!("cannot read {}", onnx.display()))?);
    key.update(threads.to_le_bytes());
    for f in ["export_with_pickle.py", "materialize_light.py"] {
        key.update(std::fs::read(scripts.join(f)).with_context(|| format!("cannot read {f}"))?);
    }
    for entry in std::fs::read_dir(root.join("xtask").join("exporter"))
        .context("cannot list the exporter")?
    {
        let p = entry?.path();
        if p.extension().is_some_and(|e| e == "py") {
            key.update(std::fs::read(&p)?);
        }
    }
    let key: String = key.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let stamp = dir.join("stamp");
    let fresh = std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == key)
        && bundle.is_file()
        && pickle.is_file()
        && meta.is_file();
    if !fresh {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let manifest_dir = dir.join("manifest");
        eprintln!(
            "[bench] exporting {} (bundle + tinygrad pickle from one capture)",
            onnx.display()
        );
        let status = Command::new(python)
            .arg(scripts.join("export_with_pickle.py"))
            .arg("--pickle-out")
            .arg(&pickle)
            .arg("--onnx")
            .arg(onnx)
            .args([
                "--target",
                host_cpu_target(),
                "--threads",
                &threads.to_string(),
                "--reference",
                "--out",
            ])
            .arg(&manifest_dir)
            .stdin(std::process::Stdio::null())
            .status()
            .context("cannot start the exporter")?;
        if !status.success() {
            bail!("export of {} failed ({status})", onnx.display());
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
fn check_same_kernels(bundle: &Path, meta: &Path) -> Result<(usize, usize)> {
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
        .filter(|s| matches!(s, Ok(modelrt_core::bundle::Step::Launch { .. })))
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

/// Accumulates one runtime's results over rounds.
#[derive(Default)]
struct Acc {
    samples: Vec<u64>,
    loads: Vec<u64>,
    rss: u64,
}

impl Acc {
    fn add(&mut self, v: &Value) -> Result<()> {
        let samples = v["samples_ns"]
            .as_array()
            .context("worker JSON has no samples_ns")?;
        self.samples
            .extend(samples.iter().filter_map(Value::as_u64));
        self.loads.push(
            v["load_ns"]
                .as_u64()
                .context("worker JSON has no load_ns")?,
        );
        self.rss = self.rss.max(v["peak_rss_bytes"].as_u64().unwrap_or(0));
        Ok(())
    }

    fn stats(&self) -> Result<Stats> {
        let (min_ns, median_ns, max_ns) = summarize(&self.samples).context("no samples")?;
        let (_, load_median_ns, _) = summarize(&self.loads).context("no load times")?;
        Ok(Stats {
            min_ns,
            median_ns,
            max_ns,
            samples: self.samples.len(),
            load_median_ns,
            peak_rss_bytes: self.rss,
        })
    }
}

fn stats_json(s: &Stats) -> Value {
    json!({"min_ns": s.min_ns, "median_ns": s.median_ns, "max_ns": s.max_ns, "samples": s.samples,
           "load_median_ns": s.load_median_ns, "peak_rss_bytes": s.peak_rss_bytes})
}

struct Ctx<'a> {
    python: &'a Path,
    modelrt: &'a Path,
    refbench: PathBuf,
    opts: &'a BenchOptions,
    threads: usize,
    out_dir: PathBuf,
}

fn run_worker(
    ctx: &Ctx<'_>,
    runtime: &str,
    onnx: &Path,
    p: &Prepared,
    iters: usize,
) -> Result<Value> {
    let (iters, warmup) = (iters.to_string(), ctx.opts.warmup.to_string());
    let mut cmd = match runtime {
        "modelrt" => {
            let mut c = Command::new(ctx.modelrt);
            c.arg("bench")
                .arg(&p.bundle)
                .args(["--json", "--iters", &iters, "--warmup", &warmup]);
            c.args(["--threads", &ctx.threads.to_string()]);
            c
        }
        "tinygrad" => {
            let mut c = Command::new(ctx.python);
            c.arg(&ctx.refbench)
                .arg("tinygrad")
                .arg("--pickle")
                .arg(&p.pickle);
            c.args(["--iters", &iters, "--warmup", &warmup]);
            c
        }
        _ => {
            let mut c = Command::new(ctx.python);
            c.arg(&ctx.refbench)
                .arg("onnxruntime")
                .arg("--onnx")
                .arg(onnx);
            c.arg("--meta").arg(p.pickle.with_extension("pkl.json"));
            c.args([
                "--threads",
                &ctx.threads.to_string(),
                "--iters",
                &iters,
                "--warmup",
                &warmup,
            ]);
            c
        }
    };
    proc::run_json(&mut cmd, runtime, WORKER_TIMEOUT)
}

fn bench_model(ctx: &Ctx<'_>, name: &str, onnx: &Path, p: &Prepared) -> Result<Value> {
    let mut accs: [Acc; 3] = Default::default();
    let mut iters = ctx.opts.iters;
    for r in 0..ctx.opts.rounds {
        for rt in round_order(r) {
            eprintln!(
                "[bench] {name}: round {}/{} {rt} ({iters} steps)",
                r + 1,
                ctx.opts.rounds
            );
            let v = run_worker(ctx, rt, onnx, p, iters).with_context(|| format!("{name}: {rt}"))?;
            let i = RUNTIMES.iter().position(|x| *x == rt).unwrap_or(0);
            accs[i].add(&v)?;
        }
        if r == 0 && !ctx.opts.quick {
            let slowest = accs
                .iter()
                .filter_map(|a| summarize(&a.samples))
                .map(|(_, med, _)| med)
                .max();
            iters = steps_for(slowest.unwrap_or(0), ctx.opts.iters);
        }
    }
    let [m, t, o] = [accs[0].stats()?, accs[1].stats()?, accs[2].stats()?];
    let trace = write_trace(ctx, name, p)?;
    let ratio = |a: u64, b: u64| {
        if b == 0 {
            Value::Null
        } else {
            json!(a as f64 / b as f64)
        }
    };
    Ok(json!({
        "model": name, "onnx": onnx.display().to_string(), "kernels": p.kernels, "launches": p.launches,
        "same_kernels_as_tinygrad": true, "trace": trace.display().to_string(),
        "modelrt": stats_json(&m), "tinygrad": stats_json(&t), "onnxruntime": stats_json(&o),
        "ratio_modelrt_over_tinygrad": ratio(m.median_ns, t.median_ns),
        "ratio_modelrt_over_onnxruntime": ratio(m.median_ns, o.median_ns),
    }))
}

/// Steps per process after the first round: enough for about [`ROUND_STEP_BUDGET`] of the slowest
/// runtime's median step, at least `min` and at most [`MAX_STEPS`], the same for every runtime.
pub fn steps_for(slowest_median_ns: u64, min: usize) -> usize {
    let want = ROUND_STEP_BUDGET.as_nanos() as u64 / slowest_median_ns.max(1);
    (want as usize).clamp(min, MAX_STEPS.max(min))
}

/// Write `target/bench/NAME.trace.json` with `modelrt bench --trace` (untimed) and check that it is a
/// trace-event document with one slice per launch.
fn write_trace(ctx: &Ctx<'_>, name: &str, p: &Prepared) -> Result<PathBuf> {
    let file = ctx.out_dir.join(format!("{name}.trace.json"));
    let mut c = Command::new(ctx.modelrt);
    c.arg("bench").arg(&p.bundle).args([
        "--json",
        "--iters",
        "1",
        "--warmup",
        "1",
        "--threads",
        &ctx.threads.to_string(),
    ]);
    c.arg("--trace").arg(&file);
    proc::run_json(&mut c, "modelrt bench --trace", WORKER_TIMEOUT)?;
    let doc: Value = serde_json::from_slice(&std::fs::read(&file)?)
        .with_context(|| format!("{} is not JSON", file.display()))?;
    let launches = doc["traceEvents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["cat"] == "launch")
        .count();
    if launches != p.launches {
        bail!(
            "{}: {launches} launch slices for {} launches",
            file.display(),
            p.launches
        );
    }
    Ok(file)
}

/// Median step time of the overhead chains with 1 and [`CHAIN_LAUNCHES`] launches, interleaved,
/// for a single-threaded kernel (`threads` = 1) or one split over `threads` core ids.
fn bench_overhead(ctx: &Ctx<'_>, dir: &Path, threads: u32) -> Result<Value> {
    let scratch = dir.join("overhead");
    let obj = overhead::compile_kernel(&scratch, threads)?;
    let mut paths = Vec::new();
    for n in [1, CHAIN_LAUNCHES] {
        let p = scratch.join(format!("chain{n}_t{threads}.mrt"));
        std::fs::write(&p, overhead::chain_bundle(&obj, threads, n)?)?;
        paths.push(p);
    }
    let iters = if ctx.opts.quick { "200" } else { "2000" };
    let mut medians: [Vec<u64>; 2] = Default::default();
    for _ in 0..ctx.opts.rounds.max(3) {
        for (i, p) in paths.iter().enumerate() {
            let mut c = Command::new(ctx.modelrt);
            c.arg("bench").arg(p).args([
                "--json",
                "--iters",
                iters,
                "--warmup",
                "100",
                "--threads",
                &threads.to_string(),
            ]);
            let v = proc::run_json(&mut c, "modelrt bench (overhead chain)", WORKER_TIMEOUT)?;
            medians[i].push(v["median_ns"].as_u64().context("no median_ns")?);
        }
    }
    let (_, short, _) = summarize(&medians[0]).context("no samples")?;
    let (_, long, _) = summarize(&medians[1]).context("no samples")?;
    let per = long.saturating_sub(short) as f64 / (CHAIN_LAUNCHES - 1) as f64;
    Ok(
        json!({"threads": threads, "launches_short": 1, "launches_long": CHAIN_LAUNCHES, "median_step_short_ns": short,
              "median_step_long_ns": long, "ns_per_kernel": per, "goal_ns_per_kernel": 1000.0,
              "kernel": overhead::kernel_source(threads).trim()}),
    )
}

/// The 1/5/15-minute load averages (other processes compete for the cores).
fn loadavg() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn machine() -> Value {
    let lscpu = Command::new("lscpu")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default();
    let model = lscpu
        .lines()
        .find_map(|l| l.strip_prefix("Model name:"))
        .map(str::trim)
        .unwrap_or("unknown")
        .to_string();
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    json!({"cpu": model, "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
           "date": date.unwrap_or_default(), "os": std::env::consts::OS, "arch": std::env::consts::ARCH})
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn mib(b: u64) -> String {
    format!("{:.1}", b as f64 / (1024.0 * 1024.0))
}

/// The Markdown report of a results document produced by [`run`].
pub fn markdown(doc: &Value) -> String {
    let mut s = String::new();
    let m = &doc["machine"];
    let text = |v: &Value| v.as_str().unwrap_or("?").to_string();
    let _ = writeln!(
        s,
        "Machine: {} ({} cores, {} {}), {}; load average (1/5/15 min) {} at start, {} at end. \
         {} threads per runtime; {} rounds, each a fresh process per runtime in rotated order; \
         {} warm-up steps per process; the first round times {} steps, later rounds enough for ~1.5 s \
         of the slowest runtime (the `steps` column is the pooled total).\n",
        text(&m["cpu"]),
        m["cores"],
        text(&m["os"]),
        text(&m["arch"]),
        text(&m["date"]),
        text(&doc["loadavg_start"]),
        text(&doc["loadavg_end"]),
        doc["threads"],
        doc["rounds"],
        doc["warmup"],
        doc["iters"]
    );
    if doc["modelrt_build"] == "debug" {
        s.push_str("**Quick harness check with a debug modelrt build: these numbers are not representative.**\n\n");
    }
    s.push_str("| model | kernels / launches | runtime | steps | step min (ms) | step median (ms) | step max (ms) | load (ms) | peak RSS (MiB) |\n");
    s.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
    for r in doc["models"].as_array().into_iter().flatten() {
        for rt in RUNTIMES {
            let st = &r[rt];
            let g = |k: &str| st[k].as_u64().unwrap_or(0);
            let _ = writeln!(
                s,
                "| {} | {} / {} | {rt} | {} | {} | {} | {} | {} | {} |",
                text(&r["model"]),
                r["kernels"],
                r["launches"],
                g("samples"),
                ms(g("min_ns")),
                ms(g("median_ns")),
                ms(g("max_ns")),
                ms(g("load_median_ns")),
                mib(g("peak_rss_bytes"))
            );
        }
    }
    s.push_str("\n| model | modelrt / tinygrad (median) | modelrt / tinygrad (min) | modelrt / onnxruntime (median) | modelrt / onnxruntime (min) |\n");
    s.push_str("|---|---:|---:|---:|---:|\n");
    for r in doc["models"].as_array().into_iter().flatten() {
        let q = |a: &str, b: &str, k: &str| match (r[a][k].as_u64(), r[b][k].as_u64()) {
            (Some(x), Some(y)) if y > 0 => format!("{:.3}", x as f64 / y as f64),
            _ => "-".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            text(&r["model"]),
            q("modelrt", "tinygrad", "median_ns"),
            q("modelrt", "tinygrad", "min_ns"),
            q("modelrt", "onnxruntime", "median_ns"),
            q("modelrt", "onnxruntime", "min_ns")
        );
    }
    for o in doc["overhead"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "\nDispatch overhead, {}-thread kernel: {:.0} ns per kernel launch (median step {} µs with {} launches vs {} µs with 1; goal ≤ 1000 ns).",
            o["threads"],
            o["ns_per_kernel"].as_f64().unwrap_or(f64::NAN),
            o["median_step_long_ns"].as_u64().unwrap_or(0) as f64 / 1e3,
            o["launches_long"],
            o["median_step_short_ns"].as_u64().unwrap_or(0) as f64 / 1e3
        );
    }
    s
}

/// Run the benchmark; writes `target/bench/results.{json,md}` (`results-quick.*` in quick mode)
/// and returns the JSON.
pub fn run(opts: &BenchOptions) -> Result<Value> {
    if opts.rounds == 0 || opts.iters == 0 {
        bail!("--rounds and --iters must be at least 1");
    }
    let root = crate::setup::workspace_root();
    let python = crate::venv::ensure_venv(&root)?;
    let modelrt = build_modelrt(&root, !opts.quick)?;
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.threads
    };
    let out_dir = root.join("target").join("bench");
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let ctx = Ctx {
        python: &python,
        modelrt: &modelrt,
        refbench: root.join("xtask/bench/refbench.py"),
        opts,
        threads,
        out_dir: out_dir.clone(),
    };
    for m in &opts.models {
        if !MODELS.iter().any(|(n, _)| n == m) {
            let names: Vec<&str> = MODELS.iter().map(|(n, _)| *n).collect();
            bail!(
                "unknown benchmark model '{m}' (known: {})",
                names.join(", ")
            );
        }
    }
    let load_start = loadavg();
    let mut results = Vec::new();
    for (name, src) in MODELS {
        if !opts.models.is_empty() && !opts.models.iter().any(|m| m == name) {
            continue;
        }
        let onnx = model_path(&root, &python, *src, &out_dir)?;
        let prepared = export_model(
            &root,
            &python,
            &onnx,
            &out_dir.join(format!("{name}-t{threads}")),
            threads,
        )?;
        results.push(bench_model(&ctx, name, &onnx, &prepared)?);
    }
    let mut overhead = vec![bench_overhead(&ctx, &out_dir, 1)?];
    if threads > 1 {
        overhead.push(bench_overhead(&ctx, &out_dir, threads as u32)?);
    }
    let doc = json!({"machine": machine(), "threads": threads, "rounds": opts.rounds, "iters": opts.iters,
                     "warmup": opts.warmup, "quick": opts.quick,
                     "modelrt_build": if opts.quick { "debug" } else { "release" },
                     "loadavg_start": load_start, "loadavg_end": loadavg(), "models": results, "overhead": overhead});
    // The smoke run must not overwrite the last full results.
    let stem = if opts.quick {
        "results-quick"
    } else {
        "results"
    };
    let json_path = out_dir.join(format!("{stem}.json"));
    std::fs::write(&json_path, serde_json::to_string_pretty(&doc)? + "\n")?;
    let md = markdown(&doc);
    let md_path = out_dir.join(format!("{stem}.md"));
    std::fs::write(&md_path, &md)?;
    println!("{md}");
    println!("wrote {} and {}", json_path.display(), md_path.display());
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarize_gives_min_upper_median_max() {
        assert_eq!(summarize(&[5, 1, 9, 3]), Some((1, 5, 9)));
        assert_eq!(summarize(&[7]), Some((7, 7, 7)));
        assert_eq!(summarize(&[]), None);
    }

    #[test]
    fn steps_fill_the_budget_within_bounds() {
        assert_eq!(steps_for(500_000_000, 30), 30); // slow model: the minimum
        assert_eq!(steps_for(10_000_000, 30), 150); // 1.5 s / 10 ms
        assert_eq!(steps_for(1_000, 30), 1000); // fast model: the cap
        assert_eq!(steps_for(0, 30), 1000);
        assert_eq!(steps_for(1_000, 5000), 5000); // an explicit minimum above the cap wins
    }

    #[test]
    fn every_runtime_takes_every_position_over_three_rounds() {
        for rt in RUNTIMES {
            let positions: BTreeSet<usize> = (0..3)
                .map(|r| round_order(r).iter().position(|x| *x == rt).unwrap())
                .collect();
            assert_eq!(positions.len(), 3, "{rt}");
        }
    }

    #[test]
    fn markdown_lists_each_runtime_and_the_ratios() {
        let st = |med: u64| {
            json!({"min_ns": med - 1000, "median_ns": med, "max_ns": med + 1000, "samples": 3,
                                   "load_median_ns": 2_000_000, "peak_rss_bytes": 10_485_760})
        };
        let doc = json!({"machine": {"cpu": "Test CPU", "cores": 2, "os": "linux", "arch": "x86_64", "date": "2026-01-01 00:00 UTC"},
            "threads": 2, "rounds": 1, "iters": 3, "warmup": 1, "loadavg_start": "0.10 0.20 0.30", "loadavg_end": "1.00 2.00 3.00",
            "models": [{"model": "m", "kernels": 4, "launches": 6, "modelrt": st(1_000_000), "tinygrad": st(4_000_000),
                        "onnxruntime": st(500_000), "ratio_modelrt_over_tinygrad": 0.25, "ratio_modelrt_over_onnxruntime": 2.0}],
            "overhead": [{"threads": 1, "ns_per_kernel": 123.4, "median_step_long_ns": 30000, "median_step_short_ns": 5000, "launches_long": 201}]});
        let md = markdown(&doc);
        assert!(
            md.contains("Test CPU (2 cores, linux x86_64), 2026-01-01 00:00 UTC"),
            "{md}"
        );
        assert!(
            md.contains("0.10 0.20 0.30 at start, 1.00 2.00 3.00 at end"),
            "{md}"
        );
        assert!(
            md.contains("| m | 4 / 6 | modelrt | 3 | 0.999 | 1.000 | 1.001 | 2.000 | 10.0 |"),
            "{md}"
        );
        assert!(md.contains("| m | 4 / 6 | tinygrad | 3 | 3.999 | 4.000 | 4.001 |"));
        // median 1.0/4.0 and 2.0 ms; min 0.999/3.999 and 0.999/0.499
        assert!(md.contains("| m | 0.250 | 0.250 | 2.000 | 2.002 |"), "{md}");
        assert!(md.contains("1-thread kernel: 123 ns per kernel launch (median step 30 µs with 201 launches vs 5 µs with 1"));
    }
}
