//! Per-kernel evidence for a bundle whose step misses its goal: which kernels hold the step, how fast they compute
//! and at what vector width. After the timed rounds, `modelrt bench --trace` runs the bundle step by step a few times
//! (fresh process each, one warm traced step per process); per launch the median over those runs is taken. For each
//! kernel with at least [`SHARE_MIN`] of the traced step: its time, its FLOPs (tinygrad's own operation count of the
//! compiled kernel, `Estimates.ops`, recorded at export in `jit.pkl.json`; index arithmetic excluded, a multiply-add
//! counted as 2), the achieved GFLOP/s, the FMA instructions in its object code by register width (`llvm-objdump-19
//! -d`, as `xtask/bench/conv_layers.py` counts them) and the share of the FMA peak for the widest width it uses.
//! The peak is the host's per-core figure measured at the start of the run ([`super::peak`]) times the cores the
//! kernel's `core_id` split runs on.
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::measure::Ctx;
use super::prepare::{sha256_hex, Prepared};
use super::proc;
use super::stats::summarize;

/// Kernels below this share of the traced step are left out of the table.
pub const SHARE_MIN: f64 = 0.05;
const TRACE_TIMEOUT: Duration = Duration::from_secs(900);

/// FMA instructions of one object file by register width: (zmm, ymm, xmm packed, scalar).
pub fn count_fmas(disassembly: &str) -> [usize; 4] {
    let mut n = [0; 4];
    for line in disassembly.lines() {
        let Some(m) = line.split_whitespace().find(|w| {
            w.starts_with("vfmadd")
                || w.starts_with("vfnmadd")
                || w.starts_with("vfmsub")
                || w.starts_with("vfnmsub")
        }) else {
            continue;
        };
        if m.ends_with("ss") || m.ends_with("sd") {
            n[3] += 1;
        } else if line.contains("%zmm") {
            n[0] += 1;
        } else if line.contains("%ymm") {
            n[1] += 1;
        } else if line.contains("%xmm") {
            n[2] += 1;
        }
    }
    n
}

fn objdump(obj: &[u8], scratch: &Path) -> Result<String> {
    std::fs::write(scratch, obj).with_context(|| format!("cannot write {}", scratch.display()))?;
    let out = Command::new("llvm-objdump-19")
        .arg("-d")
        .arg(scratch)
        .output()
        .context("cannot run llvm-objdump-19 (install llvm-19)")?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One launch of a traced step: (kernel index in the bundle, µs, `core_id` slices).
pub type Launch = (usize, f64, u64);

/// One traced step: its launches in order, and the µs of its other slices (input uploads, arena copies, output
/// downloads) in order.
pub fn parse_trace(doc: &Value) -> Result<(Vec<Launch>, Vec<f64>)> {
    let events = doc["traceEvents"]
        .as_array()
        .context("trace has no traceEvents")?;
    let mut launches = Vec::new();
    let mut others = Vec::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let dur = e["dur"].as_f64().context("trace slice without dur")?;
        if e["cat"] != "launch" {
            others.push(dur);
        } else {
            let k = e["args"]["kernel"]
                .as_u64()
                .context("launch slice without its kernel index")?;
            launches.push((
                k as usize,
                dur,
                e["args"]["global"][0].as_u64().unwrap_or(1),
            ));
        }
    }
    Ok((launches, others))
}

/// Median of `v` (upper median); 0 for an empty list.
fn median_f(v: &[f64]) -> f64 {
    let ns: Vec<u64> = v.iter().map(|x| (x * 1e3).round() as u64).collect();
    summarize(&ns).map_or(0.0, |(_, m, _)| m as f64 / 1e3)
}

/// The per-kernel table of `p` (the bundle of bench column `column`, run with `threads` threads): `runs` traced
/// steps, kernels of at least [`SHARE_MIN`] of the step, heaviest first.
pub(super) fn kernel_table(
    ctx: &Ctx<'_>,
    label: &str,
    column: &str,
    p: &Prepared,
    threads: usize,
    runs: usize,
) -> Result<Value> {
    let bytes =
        std::fs::read(&p.bundle).with_context(|| format!("cannot read {}", p.bundle.display()))?;
    let b = modelrt_core::Bundle::parse(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: {e}", p.bundle.display()))?;
    let meta: Value = serde_json::from_slice(&std::fs::read(p.pickle.with_extension("pkl.json"))?)
        .context("bad jit.pkl.json")?;
    let ops_by_hash: BTreeMap<String, u64> = meta["kernels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| Some((k["sha256"].as_str()?.to_string(), k["ops"].as_u64()?)))
        .collect();
    let kernels: Vec<(String, Vec<u8>)> = b
        .body()
        .kernels
        .iter()
        .map(|k| k.map(|k| (k.name.to_string(), k.binary.to_vec())))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("{}: {e}", p.bundle.display()))?;
    let trace_file = ctx.out_dir.join(format!("{label}.kernels.trace.json"));
    let mut per_launch: Vec<Vec<f64>> = Vec::new();
    let mut launch_info: Vec<(usize, u64)> = Vec::new();
    let mut per_other: Vec<Vec<f64>> = Vec::new();
    for run in 0..runs.max(1) {
        eprintln!(
            "[bench] {label}: traced step {}/{} for the per-kernel table",
            run + 1,
            runs.max(1)
        );
        let mut c = Command::new(ctx.modelrt);
        c.arg("bench").arg(&p.bundle).args([
            "--json",
            "--iters",
            "1",
            "--warmup",
            "1",
            "--threads",
            &threads.to_string(),
        ]);
        c.arg("--trace").arg(&trace_file);
        proc::run_json(&mut c, "modelrt bench --trace", TRACE_TIMEOUT)?;
        let doc: Value = serde_json::from_slice(&std::fs::read(&trace_file)?)
            .with_context(|| format!("{} is not JSON", trace_file.display()))?;
        let (launches, others) = parse_trace(&doc)?;
        if run == 0 {
            per_launch = vec![Vec::new(); launches.len()];
            launch_info = launches.iter().map(|l| (l.0, l.2)).collect();
            per_other = vec![Vec::new(); others.len()];
        }
        if launches.len() != per_launch.len() || others.len() != per_other.len() {
            anyhow::bail!(
                "{}: traced runs differ in their launches",
                trace_file.display()
            );
        }
        for (i, l) in launches.iter().enumerate() {
            per_launch[i].push(l.1);
        }
        for (i, d) in others.iter().enumerate() {
            per_other[i].push(*d);
        }
    }
    // every slice's median over the runs (one slow upload in one process does not make the step), summed
    let transfers_us: f64 = per_other.iter().map(|v| median_f(v)).sum();
    let step_us = transfers_us + per_launch.iter().map(|v| median_f(v)).sum::<f64>();
    // kernel index -> (µs, launches, core_id slices)
    let mut by_kernel: BTreeMap<usize, (f64, u64, u64)> = BTreeMap::new();
    for (samples, (k, slices)) in per_launch.iter().zip(&launch_info) {
        let e = by_kernel.entry(*k).or_default();
        e.0 += median_f(samples);
        e.1 += 1;
        e.2 = e.2.max(*slices);
    }
    let mut heavy: Vec<(usize, (f64, u64, u64))> = by_kernel
        .into_iter()
        .filter(|(_, (us, _, _))| step_us > 0.0 && us / step_us >= SHARE_MIN)
        .collect();
    heavy.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0));
    let scratch = ctx.out_dir.join(format!("{label}.kernel.o"));
    let mut rows = Vec::new();
    for (k, (us, launches, slices)) in heavy {
        let (name, bin) = kernels
            .get(k)
            .with_context(|| format!("trace names kernel {k}, the bundle has {}", kernels.len()))?;
        let fma = count_fmas(&objdump(bin, &scratch)?);
        let flops = ops_by_hash.get(&sha256_hex(bin)).map(|ops| ops * launches);
        let gflops = flops.map(|f| f as f64 / (us * 1e3));
        let cores = slices.clamp(1, threads.max(1) as u64);
        let width = super::peak::WIDTHS
            .iter()
            .zip(fma)
            .find(|(_, n)| *n > 0)
            .map(|(w, _)| (*w, ctx.peaks.get(w).map(|p| p * cores as f64)));
        let pct = match (gflops, width) {
            (Some(g), Some((_, Some(peak)))) => json!(100.0 * g / peak),
            _ => Value::Null,
        };
        rows.push(json!({"kernel": name, "index": k, "launches": launches, "us": us, "share": us / step_us,
            "flops": flops, "gflops": gflops, "fma": {"zmm": fma[0], "ymm": fma[1], "xmm": fma[2], "scalar": fma[3]},
            "peak_width": width.map(|w| w.0), "cores": cores, "peak_gflops": width.and_then(|w| w.1), "pct_of_peak": pct}));
    }
    let _ = std::fs::remove_file(&scratch);
    Ok(
        json!({"column": column, "bundle": p.bundle.display().to_string(), "threads": threads,
              "traced_runs": runs.max(1), "step_us": step_us, "transfers_us": transfers_us, "share_min": SHARE_MIN,
              "flops_source": "tinygrad's Estimates.ops of each compiled kernel (jit.pkl.json)",
              "peak_source": ctx.peaks.source, "rows": rows}),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fmas_are_counted_by_register_width_and_scalars_apart() {
        let dis = "  10: 62 f2 7d 48 b8 c1   vfmadd231ps %zmm1, %zmm0, %zmm0\n\
                   14: c4 e2 75 b8 c2      vfmadd231ps %ymm2, %ymm1, %ymm0\n\
                   18: c4 e2 71 a9 c2      vfmadd213ss %xmm2, %xmm1, %xmm0\n\
                   1c: c4 e2 71 b8 c2      vfnmadd231ps (%rax), %xmm1, %xmm0\n\
                   20: c5 f4 58 c2         vaddps %ymm2, %ymm1, %ymm0\n";
        assert_eq!(count_fmas(dis), [1, 1, 1, 1]);
    }

    #[test]
    fn trace_launches_carry_their_kernel_and_the_other_slices_are_kept() {
        let doc = json!({"traceEvents": [
            {"name": "process_name", "ph": "M"},
            {"name": "upload", "cat": "upload", "ph": "X", "dur": 1.5, "args": {"bytes": 4}},
            {"name": "r_4", "cat": "launch", "ph": "X", "dur": 10.0, "args": {"kernel": 1, "global": [2, 1, 1]}},
            {"name": "E_4", "cat": "launch", "ph": "X", "dur": 2.5, "args": {"kernel": 0, "global": [1, 1, 1]}}]});
        let (l, others) = parse_trace(&doc).unwrap();
        assert_eq!(l, vec![(1, 10.0, 2), (0, 2.5, 1)]);
        assert_eq!(others, vec![1.5]);
    }
}
