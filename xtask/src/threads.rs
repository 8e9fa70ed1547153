//! `cargo xtask threads`: which `--threads` split to compile CPU bundles with on this host.
//!
//! The CPU kernels' thread split is baked in at compile time (tinygrad's `core_id` axis), so the
//! only way to choose it is to compile the model once per candidate and time each bundle here. Each
//! candidate is compiled with the same exporter settings but `--threads T`; then, in rounds whose
//! order rotates, one fresh `modelrt bench --json` process per bundle times its steps (the runtime
//! pool runs as many threads as the split, capped by the cores). Step samples are pooled per
//! candidate; the report gives min/median/max, the load average, and the split with the lowest
//! median, and is written to `target/bench/threads.md`.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::bench::{build_modelrt, summarize};
use crate::exporter::ExportArgs;
use modelrt_hal::target::TargetName;

/// What `cargo xtask threads` measures.
#[derive(Clone, Debug)]
pub struct ThreadsOptions {
    /// The ONNX model.
    pub model: PathBuf,
    /// Thread splits to compile and compare.
    pub candidates: Vec<u32>,
    /// Fresh-process rounds per candidate.
    pub rounds: usize,
    /// Timed steps per process.
    pub iters: usize,
}

/// One candidate's pooled result.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub threads: u32,
    pub min_ns: u64,
    pub median_ns: u64,
    pub max_ns: u64,
    pub samples: usize,
}

fn loadavg() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Step samples of one `modelrt bench --json` process.
fn bench_once(modelrt: &Path, bundle: &Path, iters: usize) -> Result<Vec<u64>> {
    let out = Command::new(modelrt)
        .arg("bench")
        .arg(bundle)
        .args(["--iters", &iters.to_string(), "--warmup", "5", "--json"])
        .output()
        .context("cannot run modelrt")?;
    if !out.status.success() {
        bail!(
            "modelrt bench {} failed: {}",
            bundle.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let doc: Value = serde_json::from_slice(&out.stdout).context("modelrt bench --json output")?;
    doc["samples_ns"]
        .as_array()
        .context("no samples_ns in modelrt bench --json")?
        .iter()
        .map(|v| v.as_u64().context("non-integer sample"))
        .collect()
}

/// Compile every candidate, time them interleaved, write `target/bench/threads.md` and return the
/// results (best first by median).
pub fn run(o: &ThreadsOptions) -> Result<Vec<Candidate>> {
    if o.candidates.is_empty() || o.candidates.contains(&0) {
        bail!("--candidates must list thread counts of at least 1");
    }
    if o.rounds == 0 || o.iters == 0 {
        bail!("--rounds and --iters must be at least 1");
    }
    let root = crate::setup::workspace_root();
    let python = crate::venv::ensure_venv(&root)?;
    let modelrt = build_modelrt(&root, true)?;
    let name = o
        .model
        .file_stem()
        .map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned());
    let dir = root.join("target").join("bench").join("threads");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut bundles = Vec::new();
    for &t in &o.candidates {
        let out = dir.join(format!("{name}-t{t}.mrt"));
        let mut args = ExportArgs::onnx(&o.model, TargetName::host_cpu(), &dir);
        args.threads = Some(t);
        let r = crate::compile::compile(&python, args, &out)?;
        eprintln!(
            "[threads] compiled --threads {t}: {} ({:.1} s)",
            out.display(),
            r.seconds
        );
        bundles.push((t, out));
    }
    let load_start = loadavg();
    let n = bundles.len();
    let mut samples: Vec<Vec<u64>> = vec![Vec::new(); n];
    for r in 0..o.rounds {
        // Rotated every round, so no candidate is always first or last.
        for i in (0..n).map(|k| (k + r) % n) {
            samples[i].extend(bench_once(&modelrt, &bundles[i].1, o.iters)?);
        }
    }
    let load_end = loadavg();
    let mut results: Vec<Candidate> = bundles
        .iter()
        .zip(&samples)
        .filter_map(|((t, _), s)| {
            let (min_ns, median_ns, max_ns) = summarize(s)?;
            Some(Candidate {
                threads: *t,
                min_ns,
                median_ns,
                max_ns,
                samples: s.len(),
            })
        })
        .collect();
    results.sort_by_key(|c| c.median_ns);
    let md = markdown(&name, &results, o, &load_start, &load_end);
    print!("{md}");
    let path = dir.join("..").join("threads.md");
    std::fs::write(&path, &md).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(results)
}

fn markdown(
    name: &str,
    results: &[Candidate],
    o: &ThreadsOptions,
    load_start: &str,
    load_end: &str,
) -> String {
    let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut s = format!(
        "{name}: compile --threads T, modelrt bench on this host ({cores} cores); {} rounds x {} steps \
         per candidate, rotated order; load average {load_start} at start, {load_end} at end.\n\n\
         | --threads | steps | step min (ms) | step median (ms) | step max (ms) |\n|---:|---:|---:|---:|---:|\n",
        o.rounds, o.iters
    );
    for c in results {
        s += &format!(
            "| {} | {} | {} | {} | {} |\n",
            c.threads,
            c.samples,
            ms(c.min_ns),
            ms(c.median_ns),
            ms(c.max_ns)
        );
    }
    if let Some(best) = results.first() {
        s += &format!(
            "\nbest split here: --threads {} (lowest median step)\n",
            best.threads
        );
    }
    s
}
