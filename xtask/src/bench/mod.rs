//! `cargo xtask bench`: modelrt vs tinygrad 0.14's own Python runtime vs onnxruntime on this machine.
//!
//! For each model, one capture (`xtask/bench/export_with_pickle.py`, the exporter unchanged plus a
//! compile3-style pickle of the same TinyJit) yields both the bundle and the pickle, so modelrt and
//! tinygrad replay the very same kernels (checked by hashing every kernel binary); models are exported
//! once per thread count of the list. Each round starts one fresh process per (runtime, thread count)
//! pair (so each reports its own load time and peak RSS), in an order rotated per round; step samples
//! are pooled over rounds. Results go to `target/bench/results.{json,md}` (`results-quick.*` for
//! `--quick`), one Perfetto trace per model and thread count to `target/bench/NAME-tT.trace.json`;
//! [`goals`] judges the ratios, [`kernels`] tabulates the kernels of a bundle that misses, [`prose`]
//! writes the closing sentences; the dispatch-overhead figure comes from [`overhead`], and
//! the per-call cost from Python (modelrt's wheel vs onnxruntime vs tinygrad's unpickled jit, on the policy
//! model) from [`pycall`].
//!
//! Models with a committed search cache (`xtask/beam/`) also get a searched column: the bundle and
//! pickle of a `--beam-cache` capture, run in the same rotation ([`beam`]).
//!
//! One idea per module: [`prepare`] builds what is measured (the `modelrt` binary, each model's
//! bundle and pickle), [`measure`] runs the worker processes round by round, [`pipeline`] does both
//! for the stateful modeld pipeline (frame by frame, modelrt vs tinygrad's replay of the same
//! capture), [`stats`] pools their samples and [`report`] writes the results document and its
//! Markdown.
mod beam;
pub mod goals;
pub mod kernels;
mod measure;
pub mod overhead;
pub mod peak;
mod pipeline;
mod prepare;
pub mod proc;
pub mod prose;
mod pycall;
mod report;
mod stats;
pub mod usb_big;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

pub use measure::round_order;
use measure::{bench_model, bench_overhead, Ctx, Exports};
pub use pipeline::PIPELINES;
pub use prepare::build_modelrt;
use prepare::{export_model, model_path};
pub use report::markdown;
use report::{loadavg, machine};
pub use stats::{steps_for, summarize, Stats};

/// Models of the full benchmark: (name, where to find the ONNX file).
pub const MODELS: &[(&str, ModelSource)] = &[
    ("policy", ModelSource::Repo("xtask/models/policy.onnx")),
    // shaped like openpilot 0.11's driving_policy: 25-step histories, matrix-matrix products (make_models.py)
    (
        "policy_op",
        ModelSource::Repo("xtask/models/policy_op.onnx"),
    ),
    ("dmonitor", ModelSource::Repo("xtask/models/dmonitor.onnx")),
    // openpilot 0.8.5's real driver-monitoring network (xtask/models/README.md)
    (
        "dmonitor085",
        ModelSource::Repo("xtask/models/dmonitoring_model_0.8.5.onnx"),
    ),
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

/// The exports of `name` for `t` threads: v3 bundle + pickle, v4 on AVX-512 hosts (not in `--quick`), and the
/// searched export where a committed cache for `t` threads is usable (not in `--quick`).
fn export_all(
    ctx: &Ctx<'_>,
    root: &std::path::Path,
    name: &str,
    onnx: &std::path::Path,
    t: usize,
) -> Result<Exports> {
    let (python, quick, out_dir) = (ctx.python, ctx.opts.quick, &ctx.out_dir);
    let v3 = export_model(
        root,
        python,
        onnx,
        &out_dir.join(format!("{name}-t{t}")),
        t,
        None,
        None,
    )?;
    // AVX-512 hosts: the same model built for x86-64-v4 (512-bit vectors) as one more runtime
    let v4 = if quick || !host_has_avx512() {
        None
    } else {
        Some(export_model(
            root,
            python,
            onnx,
            &out_dir.join(format!("{name}-t{t}-v4")),
            t,
            None,
            Some("x86-64-v4"),
        )?)
    };
    let cache = if quick {
        None
    } else {
        beam::search_cache(root, name, t)?
    };
    // a cache searched before the channel-last layout pass names kernels the model no longer has: the
    // export refuses it and the model has no searched column (the bench says so)
    let beam = match cache {
        Some((path, info)) => match export_model(
            root,
            python,
            onnx,
            &out_dir.join(format!("{name}-t{t}-beam")),
            t,
            Some(&path),
            None,
        ) {
            Ok(p) => Some((p, info)),
            Err(e) => {
                eprintln!("[bench] {name}: search cache not usable ({e:#}): no searched column");
                None
            }
        },
        None => None,
    };
    Ok(Exports {
        threads: t,
        v3,
        v4,
        beam,
    })
}

/// Whether this host runs x86-64-v4 bundles (the loader's own feature test).
fn host_has_avx512() -> bool {
    modelrt_cpu::host_features() & modelrt_hal::target::cpu_features::AVX512F != 0
}

/// The v4 column's runtime: the model compiled for x86-64-v4 (added on AVX-512 hosts, not in `--quick`).
const V4_RUNTIME: &str = "modelrt-v4";

/// The three runtimes, in the order of the first round.
const RUNTIMES: [&str; 3] = ["modelrt", "tinygrad", "onnxruntime"];
/// The searched column's two runtimes (the searched bundle, tinygrad replaying the same searched
/// kernels), added to the rotation of models with a committed search cache (not in `--quick`).
const BEAM_RUNTIMES: [&str; 2] = ["modelrt-beam", "tinygrad-beam"];

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
    /// Thread counts, each for every runtime (baked into the kernels, ORT intra-op threads) and all measured in
    /// the same rounds; 0 = all cores; empty = 1 and 2, capped at the host's cores ([`thread_counts`]).
    pub threads: Vec<usize>,
    /// Also replace the generated section of docs/bench.md with the report.
    pub write_doc: bool,
}

/// The thread counts to measure, ascending without repeats: `asked` with 0 read as `cores`, or by default 1 and
/// 2 capped at `cores`.
pub fn thread_counts(asked: &[usize], cores: usize) -> Vec<usize> {
    let mut v: Vec<usize> = if asked.is_empty() {
        (1..=cores.clamp(1, 2)).collect()
    } else {
        asked
            .iter()
            .map(|&t| if t == 0 { cores.max(1) } else { t })
            .collect()
    };
    v.sort_unstable();
    v.dedup();
    v
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
            threads: Vec::new(),
            write_doc: false,
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
            threads: Vec::new(),
            write_doc: false,
        }
    }
}

/// The generated section of docs/bench.md (`--write-doc`).
pub const DOC_SECTION: &str = "bench-results";

/// Replace the generated section of docs/bench.md with `md` (a report of [`markdown`]).
pub fn write_doc(md: &str) -> Result<()> {
    let bench_md = crate::setup::workspace_root().join("docs").join("bench.md");
    crate::doc_section::write(&bench_md, DOC_SECTION, md)?;
    println!("updated {}", bench_md.display());
    Ok(())
}

/// The report of a results document read back from its JSON file: the tables and the generated prose come from
/// the file, not from the run's memory, so `cargo xtask bench --report FILE.json` regenerates the same text.
pub fn report_from_json(path: &std::path::Path) -> Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let doc: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a bench results document", path.display()))?;
    if !doc["models"].is_array() || !doc["machine"].is_object() {
        bail!(
            "{} is not a bench results document (no models / machine)",
            path.display()
        );
    }
    Ok(markdown(&doc))
}

/// What the CI smoke run must have exercised: every thread count of the list per model, a per-kernel table with
/// rows for each, and the generated prose naming each model and thread count.
fn check_quick(doc: &Value, md: &str) -> Result<()> {
    let counts = doc["threads"].as_array().map_or(0, Vec::len);
    for name in doc["models"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["model"].as_str())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let entries: Vec<&Value> = doc["models"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["model"] == name)
            .collect();
        if entries.len() != counts {
            bail!(
                "quick bench: {name} has {} thread-count entries for {counts} thread counts",
                entries.len()
            );
        }
        for e in entries {
            let rows = e["kernel_tables"][0]["rows"].as_array().map_or(0, Vec::len);
            if rows == 0 {
                bail!(
                    "quick bench: {name}, {} thread(s) has no per-kernel rows",
                    e["threads"]
                );
            }
            let sentence = prose::model_sentence_start(name, e["threads"].as_u64().unwrap_or(0));
            if !md.contains(&sentence) {
                bail!("quick bench: the generated prose lacks \"{sentence}\"");
            }
        }
    }
    Ok(())
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
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let counts = thread_counts(&opts.threads, cores);
    let threads = *counts.last().context("no thread count")?;
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
        peaks: peak::measure(&root, &out_dir),
    };
    for m in &opts.models {
        if !MODELS.iter().any(|(n, _)| n == m) && !PIPELINES.iter().any(|(n, _)| n == m) {
            let names: Vec<&str> = MODELS
                .iter()
                .map(|(n, _)| *n)
                .chain(PIPELINES.iter().map(|(n, _)| *n))
                .collect();
            bail!(
                "unknown benchmark model '{m}' (known: {})",
                names.join(", ")
            );
        }
    }
    let load_start = loadavg();
    let mut results = Vec::new();
    let mut per_call = Vec::new();
    for (name, src) in MODELS {
        if !opts.models.is_empty() && !opts.models.iter().any(|m| m == name) {
            continue;
        }
        let onnx = model_path(&root, &python, *src, &out_dir)?;
        let mut sets = Vec::new();
        for &t in &counts {
            sets.push(export_all(&ctx, &root, name, &onnx, t)?);
        }
        results.extend(bench_model(&ctx, name, &onnx, &sets)?);
        // the per-call cost from Python: the widest thread count's exports
        let Some(set) = sets.last() else { continue };
        let (prepared, searched) = (&set.v3, &set.beam);
        if *name == "policy" {
            let site = pycall::install_wheel(&ctx, &out_dir.join("pycall-site"))?;
            per_call.push(pycall::bench_pycall(
                &ctx,
                &root,
                &site,
                &onnx,
                prepared,
                "policy model",
            )?);
            if let Some((b, _)) = &searched {
                per_call.push(pycall::bench_pycall(
                    &ctx,
                    &root,
                    &site,
                    &onnx,
                    b,
                    "policy model, searched kernels",
                )?);
            }
        }
    }
    let mut pipelines = Vec::new();
    for (name, spec) in PIPELINES {
        if opts.models.is_empty() && !opts.quick || opts.models.iter().any(|m| m == name) {
            pipelines.extend(pipeline::bench_pipeline(&ctx, &root, name, spec, &counts)?);
        }
    }
    let mut overhead = vec![bench_overhead(&ctx, &out_dir, 1)?];
    // the widest thread count measured (a 2-thread kernel with the default list)
    if threads > 1 {
        overhead.push(bench_overhead(&ctx, &out_dir, threads as u32)?);
    }
    let doc = json!({"machine": machine(), "threads": counts, "rounds": opts.rounds, "iters": opts.iters,
                     "warmup": opts.warmup, "quick": opts.quick,
                     "modelrt_build": if opts.quick { "debug" } else { "release" },
                     "loadavg_start": load_start, "loadavg_end": loadavg(), "models": results, "pipelines": pipelines,
                     "overhead": overhead, "pycall": per_call, "fma_peak": ctx.peaks.to_json()});
    // The smoke run must not overwrite the last full results.
    let stem = if opts.quick {
        "results-quick"
    } else {
        "results"
    };
    let json_path = out_dir.join(format!("{stem}.json"));
    std::fs::write(&json_path, serde_json::to_string_pretty(&doc)? + "\n")?;
    let md = report_from_json(&json_path)?;
    if opts.quick {
        check_quick(&doc, &md)?;
    }
    let md_path = out_dir.join(format!("{stem}.md"));
    std::fs::write(&md_path, &md)?;
    println!("{md}");
    println!("wrote {} and {}", json_path.display(), md_path.display());
    if opts.write_doc {
        write_doc(&md)?;
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn thread_counts_default_to_one_and_two_capped_at_the_cores() {
        assert_eq!(thread_counts(&[], 8), vec![1, 2]);
        assert_eq!(thread_counts(&[], 1), vec![1]);
        assert_eq!(thread_counts(&[2, 0, 1, 2], 4), vec![1, 2, 4]);
    }

    #[test]
    fn the_quick_check_fails_without_every_thread_count_table_and_sentence() {
        let st = stats::fixture;
        let entry = |t: u64, rows: serde_json::Value| {
            json!({"model": "policy", "threads": t, "modelrt": st(2_000), "tinygrad": st(9_000),
                   "onnxruntime": st(1_000), "goals": [goals::goals_for("policy")[0].judge(2.0)],
                   "kernel_tables": [{"column": "modelrt", "rows": rows}]})
        };
        let row = json!([{"kernel": "r_1", "share": 0.9, "us": 1.0}]);
        let doc = json!({"machine": {}, "threads": [1, 2], "models": [entry(1, row.clone()), entry(2, row.clone())]});
        check_quick(&doc, &markdown(&doc)).unwrap();
        let e = check_quick(&doc, "no prose").unwrap_err().to_string();
        assert!(e.contains("- **policy, 1 thread**:"), "{e}");
        let one = json!({"machine": {}, "threads": [1, 2], "models": [entry(1, row.clone())]});
        let e = check_quick(&one, &markdown(&one)).unwrap_err().to_string();
        assert!(e.contains("1 thread-count entries for 2"), "{e}");
        let bare = json!({"machine": {}, "threads": [1, 2], "models": [entry(1, row), entry(2, json!([]))]});
        let e = check_quick(&bare, &markdown(&bare))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("policy, 2 thread(s) has no per-kernel rows"),
            "{e}"
        );
    }
}
