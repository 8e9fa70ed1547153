//! Running the worker processes: each round starts one fresh process per (runtime, thread count) pair (modelrt,
//! tinygrad, onnxruntime, and the v4 / searched bundles where built) in rotated order; plus the Perfetto trace of
//! one run, the per-kernel tables of bundles that miss their goal, and the dispatch-overhead chains.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::prepare::Prepared;
use super::stats::{stats_json, steps_for, summarize, Acc};
use super::{kernels, overhead, proc, BenchOptions, BEAM_RUNTIMES, RUNTIMES, V4_RUNTIME};

/// Upper bound for one worker process (resnet50 in tinygrad's runtime is the slowest).
const WORKER_TIMEOUT: Duration = Duration::from_secs(900);
/// Launches of the long overhead chain (the short one has 1).
const CHAIN_LAUNCHES: usize = 201;

/// The order of `runtimes` in round `r` (rotated so no runtime always runs first or last).
pub fn round_order<T: Clone>(runtimes: &[T], r: usize) -> Vec<T> {
    let mut o = runtimes.to_vec();
    if !o.is_empty() {
        o.rotate_left(r % runtimes.len());
    }
    o
}

/// What every worker run needs.
pub(super) struct Ctx<'a> {
    pub(super) python: &'a Path,
    pub(super) modelrt: &'a Path,
    pub(super) refbench: PathBuf,
    pub(super) opts: &'a BenchOptions,
    pub(super) threads: usize,
    pub(super) out_dir: PathBuf,
    /// The host's FMA peak per width, measured once at the start of the run.
    pub(super) peaks: super::peak::Peaks,
}

/// One thread count's exports of a model: the v3 bundle + pickle, the x86-64-v4 bundle (AVX-512 hosts, not in
/// `--quick`) and the searched export with its cache description (models with a usable committed cache).
pub(super) struct Exports {
    pub(super) threads: usize,
    pub(super) v3: Prepared,
    pub(super) v4: Option<Prepared>,
    pub(super) beam: Option<(Prepared, Value)>,
}

fn run_worker(
    ctx: &Ctx<'_>,
    runtime: &str,
    onnx: &Path,
    set: &Exports,
    iters: usize,
) -> Result<Value> {
    let (iters, warmup) = (iters.to_string(), ctx.opts.warmup.to_string());
    let threads = set.threads.to_string();
    // the searched runtimes run the searched capture's bundle / pickle; modelrt-v4 the x86-64-v4 bundle
    let (runtime, p) = match (runtime.strip_suffix("-beam"), &set.beam) {
        (Some(base), Some(b)) => (base, &b.0),
        (Some(_), None) => bail!("{runtime}: no searched export"),
        (None, _) if runtime == V4_RUNTIME => match &set.v4 {
            Some(b) => ("modelrt", b),
            None => bail!("{runtime}: no x86-64-v4 export"),
        },
        (None, _) => (runtime, &set.v3),
    };
    let mut cmd = match runtime {
        "modelrt" => {
            let mut c = Command::new(ctx.modelrt);
            c.arg("bench")
                .arg(&p.bundle)
                .args(["--json", "--iters", &iters, "--warmup", &warmup]);
            c.args(["--threads", &threads]);
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
                &threads,
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

/// The (runtime, thread-count index) pairs of one model's rotation: per thread count the three runtimes, the
/// searched pair where that thread count has a searched export, and the v4 bundle where it has one.
fn rotation(sets: &[Exports]) -> Vec<(&'static str, usize)> {
    let mut pairs = Vec::new();
    for (i, set) in sets.iter().enumerate() {
        pairs.extend(RUNTIMES.iter().map(|rt| (*rt, i)));
        if set.beam.is_some() {
            pairs.extend(BEAM_RUNTIMES.iter().map(|rt| (*rt, i)));
        }
        if set.v4.is_some() {
            pairs.push((V4_RUNTIME, i));
        }
    }
    pairs
}

fn ratio(a: u64, b: u64) -> Value {
    if b == 0 {
        Value::Null
    } else {
        json!(a as f64 / b as f64)
    }
}

/// All rounds of one model over every thread count of `sets`; one results object per thread count. Each round
/// starts one fresh process per (runtime, thread count) pair, in an order rotated per round, so the 1- and
/// 2-thread figures come from the same rounds. Then, per thread count, the Perfetto trace and, for each bundle
/// whose median step misses its goal (every v3 bundle in `--quick`), the per-kernel table ([`kernels`]).
pub(super) fn bench_model(
    ctx: &Ctx<'_>,
    name: &str,
    onnx: &Path,
    sets: &[Exports],
) -> Result<Vec<Value>> {
    let pairs = rotation(sets);
    let mut accs: Vec<Acc> = pairs.iter().map(|_| Acc::default()).collect();
    let mut iters = ctx.opts.iters;
    for r in 0..ctx.opts.rounds {
        for (rt, i) in round_order(&pairs, r) {
            let t = sets[i].threads;
            eprintln!(
                "[bench] {name}: round {}/{} {rt}, {t} thread(s) ({iters} steps)",
                r + 1,
                ctx.opts.rounds
            );
            let v = run_worker(ctx, rt, onnx, &sets[i], iters)
                .with_context(|| format!("{name}: {rt}, {t} thread(s)"))?;
            let k = pairs.iter().position(|x| *x == (rt, i)).unwrap_or(0);
            accs[k].add(&v)?;
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
    let mut docs = Vec::new();
    for (i, set) in sets.iter().enumerate() {
        let stats_of = |rt: &str| -> Result<Option<super::stats::Stats>> {
            match pairs.iter().position(|x| *x == (rt, i)) {
                Some(k) => accs[k].stats().map(Some),
                None => Ok(None),
            }
        };
        let get = |rt: &str| -> Result<super::stats::Stats> {
            stats_of(rt)?.with_context(|| format!("{name}: no {rt} samples"))
        };
        let (m, t, o) = (get("modelrt")?, get("tinygrad")?, get("onnxruntime")?);
        let label = format!("{name}-t{}", set.threads);
        let trace = write_trace(ctx, &label, set)?;
        let [g3, g4] = super::goals::goals_for(name);
        let mut goals = vec![g3.judge(m.median_ns as f64 / o.median_ns.max(1) as f64)];
        let mut doc = json!({
            "model": name, "threads": set.threads, "onnx": onnx.display().to_string(), "kernels": set.v3.kernels,
            "launches": set.v3.launches, "same_kernels_as_tinygrad": true, "trace": trace.display().to_string(),
            "modelrt": stats_json(&m), "tinygrad": stats_json(&t), "onnxruntime": stats_json(&o),
            "ratio_modelrt_over_tinygrad": ratio(m.median_ns, t.median_ns),
            "ratio_modelrt_over_onnxruntime": ratio(m.median_ns, o.median_ns),
        });
        if let (Some(b), Some(s4)) = (&set.v4, stats_of(V4_RUNTIME)?) {
            goals.push(g4.judge(s4.median_ns as f64 / o.median_ns.max(1) as f64));
            doc["v4"] = json!({
                "baseline": "x86-64-v4", "kernels": b.kernels, "launches": b.launches, "modelrt": stats_json(&s4),
                "ratio_modelrt_over_onnxruntime": ratio(s4.median_ns, o.median_ns),
                "ratio_over_v3_modelrt": ratio(s4.median_ns, m.median_ns),
            });
        }
        if let (Some((b, info)), Some(mb), Some(tb)) = (
            &set.beam,
            stats_of(BEAM_RUNTIMES[0])?,
            stats_of(BEAM_RUNTIMES[1])?,
        ) {
            doc["beam"] = json!({
                "cache": info, "kernels": b.kernels, "launches": b.launches, "same_kernels_as_tinygrad": true,
                "modelrt": stats_json(&mb), "tinygrad": stats_json(&tb),
                "ratio_modelrt_over_tinygrad": ratio(mb.median_ns, tb.median_ns),
                "ratio_modelrt_over_onnxruntime": ratio(mb.median_ns, o.median_ns),
                "ratio_over_unsearched_modelrt": ratio(mb.median_ns, m.median_ns),
            });
        }
        let runs = if ctx.opts.quick { 1 } else { 3 };
        let mut tables = Vec::new();
        for g in &goals {
            if g["met"] == true && !ctx.opts.quick {
                continue;
            }
            let (column, p, suffix) = if g["column"] == V4_RUNTIME {
                (V4_RUNTIME, set.v4.as_ref(), "-v4")
            } else {
                ("modelrt", Some(&set.v3), "")
            };
            if let Some(p) = p {
                tables.push(kernels::kernel_table(
                    ctx,
                    &format!("{label}{suffix}"),
                    column,
                    p,
                    set.threads,
                    runs,
                )?);
            }
        }
        doc["goals"] = json!(goals);
        doc["kernel_tables"] = json!(tables);
        docs.push(doc);
    }
    Ok(docs)
}

/// Write `target/bench/NAME-tT.trace.json` with `modelrt bench --trace` (untimed) and check that it is a
/// trace-event document with one slice per launch.
fn write_trace(ctx: &Ctx<'_>, label: &str, set: &Exports) -> Result<PathBuf> {
    let p = &set.v3;
    let file = ctx.out_dir.join(format!("{label}.trace.json"));
    let mut c = Command::new(ctx.modelrt);
    c.arg("bench").arg(&p.bundle).args([
        "--json",
        "--iters",
        "1",
        "--warmup",
        "1",
        "--threads",
        &set.threads.to_string(),
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
pub(super) fn bench_overhead(ctx: &Ctx<'_>, dir: &Path, threads: u32) -> Result<Value> {
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::round_order;
    use crate::bench::{BEAM_RUNTIMES, RUNTIMES};

    #[test]
    fn every_runtime_and_thread_count_pair_takes_every_position() {
        let pairs: Vec<(&str, usize)> = (0..2)
            .flat_map(|t| RUNTIMES.iter().map(move |rt| (*rt, t)))
            .collect();
        for p in &pairs {
            let positions: BTreeSet<usize> = (0..pairs.len())
                .map(|r| round_order(&pairs, r).iter().position(|x| x == p).unwrap())
                .collect();
            assert_eq!(positions.len(), pairs.len(), "{p:?}");
        }
    }

    #[test]
    fn every_runtime_takes_every_position_over_as_many_rounds() {
        let five: Vec<&str> = RUNTIMES.iter().chain(&BEAM_RUNTIMES).copied().collect();
        for list in [&RUNTIMES[..], &five[..]] {
            for rt in list {
                let positions: BTreeSet<usize> = (0..list.len())
                    .map(|r| round_order(list, r).iter().position(|x| x == rt).unwrap())
                    .collect();
                assert_eq!(positions.len(), list.len(), "{rt}");
            }
        }
    }
}
