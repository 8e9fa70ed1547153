//! `cargo xtask bench`: modelrt vs tinygrad 0.14's own Python runtime vs onnxruntime on this machine.
//!
//! For each model, one capture (`xtask/bench/export_with_pickle.py`, the exporter unchanged plus a
//! compile3-style pickle of the same TinyJit) yields both the bundle and the pickle, so modelrt and
//! tinygrad replay the very same kernels (checked by hashing every kernel binary). Each round
//! starts one fresh process per runtime (so each reports its own load time and peak RSS), in an
//! order rotated per round; step samples are pooled over rounds. Results go to
//! `target/bench/results.{json,md}` (`results-quick.*` for `--quick`), one Perfetto trace per
//! model to `target/bench/NAME.trace.json`; the dispatch-overhead figure comes from [`overhead`], and
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
mod measure;
pub mod overhead;
mod pipeline;
mod prepare;
pub mod proc;
mod pycall;
mod report;
mod stats;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

pub use measure::round_order;
use measure::{bench_model, bench_overhead, Ctx};
pub use pipeline::PIPELINES;
pub use prepare::build_modelrt;
use prepare::{export_model, model_path};
pub use report::markdown;
use report::{loadavg, machine};
pub use stats::{steps_for, summarize, Stats};

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

/// Whether this host runs x86-64-v4 bundles (the loader's own feature test).
fn host_has_avx512() -> bool {
    modelrt_targets::cpu::host_features() & modelrt_hal::target::cpu_features::AVX512F != 0
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
        let prepared = export_model(
            &root,
            &python,
            &onnx,
            &out_dir.join(format!("{name}-t{threads}")),
            threads,
            None,
            None,
        )?;
        // AVX-512 hosts: the same model built for x86-64-v4 (512-bit vectors) as one more runtime
        let v4 = if opts.quick || !host_has_avx512() {
            None
        } else {
            Some(export_model(
                &root,
                &python,
                &onnx,
                &out_dir.join(format!("{name}-t{threads}-v4")),
                threads,
                None,
                Some("x86-64-v4"),
            )?)
        };
        let cache = if opts.quick {
            None
        } else {
            beam::search_cache(&root, name, threads)?
        };
        // a cache searched before the channel-last layout pass names kernels the model no longer has: the
        // export refuses it and the model has no searched column (the bench says so)
        let searched = match &cache {
            Some((path, info)) => match export_model(
                &root,
                &python,
                &onnx,
                &out_dir.join(format!("{name}-t{threads}-beam")),
                threads,
                Some(path),
                None,
            ) {
                Ok(p) => Some((p, info.clone())),
                Err(e) => {
                    eprintln!(
                        "[bench] {name}: search cache not usable ({e:#}): no searched column"
                    );
                    None
                }
            },
            None => None,
        };
        let beam = searched.as_ref().map(|(p, info)| (p, info.clone()));
        results.push(bench_model(
            &ctx,
            name,
            &onnx,
            &prepared,
            beam,
            v4.as_ref(),
        )?);
        if *name == "policy" {
            let site = pycall::install_wheel(&ctx, &out_dir.join("pycall-site"))?;
            per_call.push(pycall::bench_pycall(
                &ctx,
                &root,
                &site,
                &onnx,
                &prepared,
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
            pipelines.push(pipeline::bench_pipeline(&ctx, &root, name, spec)?);
        }
    }
    let mut overhead = vec![bench_overhead(&ctx, &out_dir, 1)?];
    if threads > 1 {
        overhead.push(bench_overhead(&ctx, &out_dir, threads as u32)?);
    }
    let doc = json!({"machine": machine(), "threads": threads, "rounds": opts.rounds, "iters": opts.iters,
                     "warmup": opts.warmup, "quick": opts.quick,
                     "modelrt_build": if opts.quick { "debug" } else { "release" },
                     "loadavg_start": load_start, "loadavg_end": loadavg(), "models": results, "pipelines": pipelines,
                     "overhead": overhead, "pycall": per_call});
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
