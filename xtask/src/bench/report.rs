//! The results document's machine description and its Markdown report (`target/bench/results.md`).
use std::fmt::Write as _;
use std::process::Command;

use serde_json::{json, Value};

use super::RUNTIMES;

/// The 1/5/15-minute load averages (other processes compete for the cores).
pub(super) fn loadavg() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// CPU model, cores, date, OS and architecture of this machine.
pub(super) fn machine() -> Value {
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

/// `a / b` with three decimals, `-` when either is missing or `b` is 0.
pub(super) fn ratio(a: &Value, b: &Value) -> String {
    match (a.as_u64(), b.as_u64()) {
        (Some(x), Some(y)) if y > 0 => format!("{:.3}", x as f64 / y as f64),
        _ => "-".into(),
    }
}

fn mib(b: u64) -> String {
    format!("{:.1}", b as f64 / (1024.0 * 1024.0))
}

/// One row of a per-runtime table: model, kernels / launches, runtime, steps, step min/median/max,
/// load time and peak RSS of `st` (a [`super::stats::stats_json`] object).
pub(super) fn stats_row(
    model: &str,
    kernels: &Value,
    launches: &Value,
    rt: &str,
    st: &Value,
) -> String {
    let g = |k: &str| st[k].as_u64().unwrap_or(0);
    format!(
        "| {model} | {kernels} / {launches} | {rt} | {} | {} | {} | {} | {} | {} |\n",
        g("samples"),
        ms(g("min_ns")),
        ms(g("median_ns")),
        ms(g("max_ns")),
        ms(g("load_median_ns")),
        mib(g("peak_rss_bytes"))
    )
}

/// The thread counts of a results document: the `threads` list (a single number in documents before the list).
pub(super) fn thread_list(doc: &Value) -> Vec<u64> {
    match &doc["threads"] {
        Value::Array(a) => a.iter().filter_map(Value::as_u64).collect(),
        v => v.as_u64().into_iter().collect(),
    }
}

/// The thread count of one model entry (documents before the list: the document's).
pub(super) fn entry_threads(doc: &Value, r: &Value) -> u64 {
    r["threads"]
        .as_u64()
        .or_else(|| thread_list(doc).last().copied())
        .unwrap_or(0)
}

/// `1 thread` / `2 threads`.
pub(super) fn threads_text(t: u64) -> String {
    format!("{t} thread{}", if t == 1 { "" } else { "s" })
}

/// The Markdown report of a results document produced by [`super::run`].
pub fn markdown(doc: &Value) -> String {
    let mut s = String::new();
    let m = &doc["machine"];
    let text = |v: &Value| v.as_str().unwrap_or("?").to_string();
    let counts = thread_list(doc);
    let list = counts
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        s,
        "Machine: {} ({} cores, {} {}), {}; load average (1/5/15 min) {} at start, {} at end. \
         Thread counts {list}, each given to every runtime; {} round(s), each a fresh process per (runtime, thread \
         count) pair in rotated order, so every thread count's figures come from the same rounds; \
         {} warm-up steps per process; the first round times {} steps, later rounds enough for ~1.5 s \
         of the slowest runtime (the `steps` column is the pooled total).\n",
        text(&m["cpu"]),
        m["cores"],
        text(&m["os"]),
        text(&m["arch"]),
        text(&m["date"]),
        text(&doc["loadavg_start"]),
        text(&doc["loadavg_end"]),
        doc["rounds"],
        doc["warmup"],
        doc["iters"]
    );
    if doc["modelrt_build"] == "debug" {
        s.push_str("**Quick harness check with a debug modelrt build: these numbers are not representative.**\n\n");
    }
    let models: Vec<&Value> = doc["models"].as_array().into_iter().flatten().collect();
    for &t in &counts {
        let rows: Vec<&Value> = models
            .iter()
            .copied()
            .filter(|r| entry_threads(doc, r) == t)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(s, "**{}**\n", threads_text(t));
        s.push_str("| model | kernels / launches | runtime | steps | step min (ms) | step median (ms) | step max (ms) | load (ms) | peak RSS (MiB) |\n");
        s.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
        for r in &rows {
            for rt in RUNTIMES {
                s.push_str(&stats_row(
                    &text(&r["model"]),
                    &r["kernels"],
                    &r["launches"],
                    rt,
                    &r[rt],
                ));
            }
            if r["v4"].is_object() {
                s.push_str(&stats_row(
                    &text(&r["model"]),
                    &r["v4"]["kernels"],
                    &r["v4"]["launches"],
                    "modelrt x86-64-v4",
                    &r["v4"]["modelrt"],
                ));
            }
        }
        ratio_table(&mut s, &rows);
    }
    super::beam::markdown(&mut s, doc);
    pipelines_markdown(&mut s, doc);
    kernel_tables_markdown(&mut s, doc);
    for v in doc["pycall"].as_array().into_iter().flatten() {
        pycall_markdown(&mut s, v);
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
    s.push_str(&super::prose::prose(doc));
    s
}

/// The ratio table of one thread count: modelrt v3 and v4 over onnxruntime (median and min) against the goals
/// ([`super::goals`], judged on the median), and modelrt over tinygrad.
fn ratio_table(s: &mut String, rows: &[&Value]) {
    s.push_str("\n| model | v3 / onnxruntime (median) | v3 / onnxruntime (min) | v3 goal | v4 / onnxruntime (median) | v4 / onnxruntime (min) | v4 goal | v4 / v3 (median) | modelrt / tinygrad (median) | modelrt / tinygrad (min) |\n");
    s.push_str("|---|---:|---:|---|---:|---:|---|---:|---:|---:|\n");
    for r in rows {
        let name = r["model"].as_str().unwrap_or("?");
        let q = |a: &Value, b: &Value, k: &str| ratio(&a[k], &b[k]);
        let (o, m4) = (&r["onnxruntime"], &r["v4"]["modelrt"]);
        let judged = |column: &str| {
            r["goals"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|g| g["column"] == column)
                .map_or("-".to_string(), |g| {
                    let bound = format!(
                        "{} {}",
                        if g["strict"] == true { "<" } else { "≤" },
                        g["bound"]
                    );
                    if g["met"] == true {
                        format!("{bound}: met")
                    } else {
                        format!("{bound}: **missed**")
                    }
                })
        };
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            q(&r["modelrt"], o, "median_ns"),
            q(&r["modelrt"], o, "min_ns"),
            judged("modelrt"),
            q(m4, o, "median_ns"),
            q(m4, o, "min_ns"),
            judged(super::V4_RUNTIME),
            q(m4, &r["modelrt"], "median_ns"),
            q(&r["modelrt"], &r["tinygrad"], "median_ns"),
            q(&r["modelrt"], &r["tinygrad"], "min_ns"),
        );
    }
    s.push('\n');
}

/// The column label of a per-kernel table.
pub(super) fn column_label(column: &Value) -> &'static str {
    if column == super::V4_RUNTIME {
        "modelrt x86-64-v4"
    } else {
        "modelrt v3"
    }
}

/// The per-kernel tables ([`super::kernels`]) of the bundles that missed their goal.
fn kernel_tables_markdown(s: &mut String, doc: &Value) {
    let mut first = true;
    for r in doc["models"].as_array().into_iter().flatten() {
        for k in r["kernel_tables"].as_array().into_iter().flatten() {
            if first {
                let _ = writeln!(
                    s,
                    "\nPer-kernel evidence for each bundle that missed its goal (every v3 bundle in `--quick`): the \
                     median over {} traced step(s) (`modelrt bench --trace`, one warm step per process) of each kernel \
                     holding at least {:.0}% of the traced step; FLOPs are {}; FMA instructions by register width from \
                     `llvm-objdump-19 -d` of the kernel's object code; the peak is the {}, times the cores the kernel's \
                     `core_id` split runs on, for the widest width the kernel uses.",
                    k["traced_runs"],
                    k["share_min"].as_f64().unwrap_or(0.0) * 100.0,
                    k["flops_source"].as_str().unwrap_or("?"),
                    k["peak_source"].as_str().unwrap_or("?")
                );
                let per_core = &doc["fma_peak"]["per_core_gflops"];
                if per_core.is_object() {
                    let fig = |w: &str| {
                        per_core[w]
                            .as_f64()
                            .map_or("–".to_string(), |v| format!("{v:.1}"))
                    };
                    let _ = writeln!(
                        s,
                        "Measured per-core peak (GFLOP/s): zmm {}, ymm {}, xmm {}, scalar {}.",
                        fig("zmm"),
                        fig("ymm"),
                        fig("xmm"),
                        fig("scalar")
                    );
                }
                first = false;
            }
            let _ = writeln!(
                s,
                "\n{}, {}, {} (traced step {:.1} µs, of which {:.1} µs input upload and output download):\n",
                r["model"].as_str().unwrap_or("?"),
                threads_text(entry_threads(doc, r)),
                column_label(&k["column"]),
                k["step_us"].as_f64().unwrap_or(f64::NAN),
                k["transfers_us"].as_f64().unwrap_or(f64::NAN)
            );
            s.push_str("| kernel | launches | share of step | µs | MFLOP | GFLOP/s | FMA zmm / ymm / xmm / scalar | peak (width × cores) | % of peak |\n");
            s.push_str("|---|---:|---:|---:|---:|---:|---|---|---:|\n");
            for row in k["rows"].as_array().into_iter().flatten() {
                let f = |v: &Value, scale: f64, digits: usize| {
                    v.as_f64()
                        .map_or("-".to_string(), |x| format!("{:.*}", digits, x * scale))
                };
                let fma = &row["fma"];
                let peak = match row["peak_width"].as_str() {
                    Some(w) => format!(
                        "{} GFLOP/s ({w} × {})",
                        f(&row["peak_gflops"], 1.0, 0),
                        row["cores"]
                    ),
                    None => "- (no FMA)".into(),
                };
                let _ = writeln!(
                    s,
                    "| `{}` | {} | {}% | {} | {} | {} | {} / {} / {} / {} | {peak} | {} |",
                    row["kernel"].as_str().unwrap_or("?"),
                    row["launches"],
                    f(&row["share"], 100.0, 1),
                    f(&row["us"], 1.0, 1),
                    f(&row["flops"], 1e-6, 2),
                    f(&row["gflops"], 1.0, 1),
                    fma["zmm"],
                    fma["ymm"],
                    fma["xmm"],
                    fma["scalar"],
                    f(&row["pct_of_peak"], 1.0, 1)
                );
            }
        }
    }
}

/// Per-call cost from Python on the policy model (`pycall.py`): one row per caller, then the ratios and goals.
fn pycall_markdown(s: &mut String, v: &Value) {
    if !v.is_object() {
        return;
    }
    let _ = writeln!(
        s,
        "\nPer-call cost from Python, {} (one process, {} interleaved rounds × {} calls per caller; \
         modelrt and onnxruntime max abs difference {:e}):\n",
        v["model"].as_str().unwrap_or("?"),
        v["rounds"],
        v["iters"],
        v["max_abs_modelrt_vs_onnxruntime"].as_f64().unwrap_or(f64::NAN)
    );
    s.push_str(
        "| caller | calls | min (µs) | median (µs) | max (µs) |\n|---|---:|---:|---:|---:|\n",
    );
    let us = |x: &Value| format!("{:.1}", x.as_u64().unwrap_or(0) as f64 / 1e3);
    for (c, label) in [
        ("modelrt", "modelrt `Model.run(feeds)`"),
        (
            "modelrt_prealloc",
            "modelrt `Model.run(feeds, outputs=prealloc)`",
        ),
        ("onnxruntime", "onnxruntime `InferenceSession.run`"),
        ("tinygrad", "tinygrad unpickled `TinyJit`"),
    ] {
        let st = &v[c];
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {} |",
            st["samples"],
            us(&st["min_ns"]),
            us(&st["median_ns"]),
            us(&st["max_ns"])
        );
    }
    let r = |k: &str| v[k].as_f64().map_or("-".to_string(), |x| format!("{x:.3}"));
    let layer = |c: &str| match (v[c]["median_ns"].as_u64(), v[c]["step_median_ns"].as_u64()) {
        (Some(call), Some(step)) => format!(
            "{} µs, of which the runtime's step is {} µs",
            us(&json!(call)),
            us(&json!(step))
        ),
        _ => "-".into(),
    };
    let _ = writeln!(
        s,
        "\nmodelrt median call {} (new outputs), {} (preallocated); the rest is the Python layer.",
        layer("modelrt"),
        layer("modelrt_prealloc")
    );
    let _ = writeln!(
        s,
        "\nmodelrt / onnxruntime (median call): {} with new outputs, {} preallocated (goal ≤ {}); \
         modelrt / tinygrad: {} and {} (goal ≤ {}).",
        r("ratio_modelrt_over_onnxruntime"),
        r("ratio_prealloc_over_onnxruntime"),
        v["goal_over_onnxruntime"],
        r("ratio_modelrt_over_tinygrad"),
        r("ratio_prealloc_over_tinygrad"),
        v["goal_over_tinygrad"]
    );
}

/// `modeld_pipeline, 2 threads` (the bare name in documents before the thread list).
pub(super) fn pipeline_label(r: &Value) -> String {
    let name = r["pipeline"].as_str().unwrap_or("?");
    match r["threads"].as_u64() {
        Some(t) => format!("{name}, {}", threads_text(t)),
        None => name.to_string(),
    }
}

/// The stateful pipelines: per-frame time of modelrt (inputs copied, and read in place) and of tinygrad's own replay
/// of the same capture, plus modelrt's per-frame host overhead (enqueue) and device time.
fn pipelines_markdown(s: &mut String, doc: &Value) {
    let Some(rows) = doc["pipelines"].as_array().filter(|r| !r.is_empty()) else {
        return;
    };
    s.push_str("\nStateful pipelines, per frame (each process times consecutive frames from the initial state):\n\n");
    s.push_str("| pipeline | kernels / launches | runtime | frames | frame min (ms) | frame median (ms) | frame max (ms) | enqueue median (ms) | device median (ms) | load (ms) | peak RSS (MiB) |\n");
    s.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        for (rt, key, enq, dev) in [
            (
                "modelrt",
                "modelrt",
                "modelrt_enqueue_median_ns",
                "modelrt_device_median_ns",
            ),
            (
                "modelrt --zero-copy",
                "modelrt_zero_copy",
                "zero_copy_enqueue_median_ns",
                "zero_copy_device_median_ns",
            ),
            ("tinygrad", "tinygrad", "", ""),
        ] {
            let st = &r[key];
            let g = |k: &str| st[k].as_u64().unwrap_or(0);
            let opt = |k: &str| r[k].as_u64().map_or("-".to_string(), ms);
            let _ = writeln!(
                s,
                "| {} | {} / {} | {rt} | {} | {} | {} | {} | {} | {} | {} | {} |",
                pipeline_label(r),
                r["kernels"],
                r["launches"],
                g("samples"),
                ms(g("min_ns")),
                ms(g("median_ns")),
                ms(g("max_ns")),
                opt(enq),
                opt(dev),
                ms(g("load_median_ns")),
                mib(g("peak_rss_bytes"))
            );
        }
    }
    for r in rows {
        let q = |a: &str| ratio(&r[a]["median_ns"], &r["tinygrad"]["median_ns"]);
        let _ = writeln!(
            s,
            "\n{}: modelrt / tinygrad (median frame) {} with inputs copied, {} with inputs read in place ({}). \
             Peak RSS includes the {} MiB of stacked frames every process holds.",
            pipeline_label(r),
            q("modelrt"),
            q("modelrt_zero_copy"),
            r["zero_copy_input_paths"]
                .as_array()
                .map(|p| p.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                .unwrap_or_else(|| "-".into()),
            mib(r["frames_bytes"].as_u64().unwrap_or(0))
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::markdown;

    #[test]
    fn markdown_lists_each_runtime_and_the_ratios() {
        let st = crate::bench::stats::fixture;
        let doc = json!({"machine": {"cpu": "Test CPU", "cores": 2, "os": "linux", "arch": "x86_64", "date": "2026-01-01 00:00 UTC"},
            "threads": 2, "rounds": 1, "iters": 3, "warmup": 1, "loadavg_start": "0.10 0.20 0.30", "loadavg_end": "1.00 2.00 3.00",
            "models": [{"model": "m", "kernels": 4, "launches": 6, "modelrt": st(1_000_000), "tinygrad": st(4_000_000),
                        "onnxruntime": st(500_000), "ratio_modelrt_over_tinygrad": 0.25, "ratio_modelrt_over_onnxruntime": 2.0,
                        "goals": [crate::bench::goals::goals_for("m")[0].judge(2.0)]}],
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
        // median 1.0/0.5 and 1.0/4.0 ms; min 0.999/0.499 and 0.999/3.999; the goal judged as recorded
        assert!(
            md.contains(
                "| m | 2.000 | 2.002 | ≤ 1.5: **missed** | - | - | - | - | 0.250 | 0.250 |"
            ),
            "{md}"
        );
        // a document from before the thread list: its single count heads the table
        assert!(md.contains("**2 threads**\n"), "{md}");
        assert!(md.contains("1-thread kernel: 123 ns per kernel launch (median step 30 µs with 201 launches vs 5 µs with 1"));
        assert!(
            !md.contains("Stateful pipelines"),
            "no pipelines, no section"
        );
        assert!(!md.contains("Per-call cost"), "no pycall, no section");
    }

    #[test]
    fn markdown_lists_the_per_call_cost_from_python() {
        let st = |med: u64| json!({"samples": 40, "min_ns": med - 1000, "median_ns": med, "max_ns": med * 3, "step_median_ns": med / 2});
        let doc = json!({"machine": {}, "models": [], "overhead": [], "pycall": [{
            "model": "policy model", "rounds": 2, "iters": 20, "max_abs_modelrt_vs_onnxruntime": 0.00025,
            "modelrt": st(30_000), "modelrt_prealloc": st(25_000), "onnxruntime": st(100_000), "tinygrad": st(1_000_000),
            "ratio_modelrt_over_onnxruntime": 0.3, "ratio_prealloc_over_onnxruntime": 0.25,
            "ratio_modelrt_over_tinygrad": 0.03, "ratio_prealloc_over_tinygrad": 0.025,
            "goal_over_onnxruntime": 0.5, "goal_over_tinygrad": 0.1}]});
        let md = markdown(&doc);
        assert!(md.contains("policy model (one process, 2 interleaved rounds × 20 calls per caller; modelrt and onnxruntime max abs difference 2.5e-4)"), "{md}");
        assert!(
            md.contains(
                "| modelrt `Model.run(feeds, outputs=prealloc)` | 40 | 24.0 | 25.0 | 75.0 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| tinygrad unpickled `TinyJit` | 40 | 999.0 | 1000.0 | 3000.0 |"),
            "{md}"
        );
        assert!(md.contains("modelrt median call 30.0 µs, of which the runtime's step is 15.0 µs (new outputs), 25.0 µs, of which the runtime's step is 12.5 µs (preallocated)"), "{md}");
        assert!(md.contains("0.300 with new outputs, 0.250 preallocated (goal ≤ 0.5); modelrt / tinygrad: 0.030 and 0.025 (goal ≤ 0.1)."), "{md}");
    }

    #[test]
    fn markdown_lists_the_per_kernel_tables_of_a_miss() {
        let st = crate::bench::stats::fixture;
        let row = json!({"kernel": "r_64_16", "launches": 2, "share": 0.456, "us": 410.04, "flops": 28_740_000u64,
            "gflops": 70.09, "fma": {"zmm": 24, "ymm": 0, "xmm": 1, "scalar": 2}, "peak_width": "zmm", "cores": 2,
            "peak_gflops": 580.0, "pct_of_peak": 12.08});
        let bare = json!({"kernel": "E_4", "launches": 1, "share": 0.05, "us": 45.0, "flops": null, "gflops": null,
            "fma": {"zmm": 0, "ymm": 0, "xmm": 0, "scalar": 0}, "peak_width": null, "cores": 1, "peak_gflops": null,
            "pct_of_peak": null});
        let doc = json!({"machine": {}, "threads": [2], "overhead": [], "models": [{"model": "vision", "threads": 2,
            "modelrt": st(2_000_000), "tinygrad": st(4_000_000), "onnxruntime": st(1_000_000),
            "kernel_tables": [{"column": "modelrt-v4", "traced_runs": 3, "step_us": 900.0, "transfers_us": 150.5,
                               "share_min": 0.05, "flops_source": "FS", "peak_source": "PS", "rows": [row, bare]}]}]});
        let md = markdown(&doc);
        assert!(md.contains("the median over 3 traced step(s)"), "{md}");
        assert!(
            md.contains("at least 5% of the traced step; FLOPs are FS;"),
            "{md}"
        );
        assert!(md.contains("the peak is the PS, times the cores"), "{md}");
        assert!(
            md.contains("vision, 2 threads, modelrt x86-64-v4 (traced step 900.0 µs, of which 150.5 µs input upload and output download):"),
            "{md}"
        );
        assert!(
            md.contains("| `r_64_16` | 2 | 45.6% | 410.0 | 28.74 | 70.1 | 24 / 0 / 1 / 2 | 580 GFLOP/s (zmm × 2) | 12.1 |"),
            "{md}"
        );
        assert!(
            md.contains("| `E_4` | 1 | 5.0% | 45.0 | - | - | 0 / 0 / 0 / 0 | - (no FMA) | - |"),
            "{md}"
        );
    }

    #[test]
    fn markdown_lists_pipelines_per_frame() {
        let st = |med: u64| {
            json!({"min_ns": med / 2, "median_ns": med, "max_ns": med * 2, "samples": 200,
                   "load_median_ns": 1_000_000, "peak_rss_bytes": 104_857_600})
        };
        let doc = json!({"machine": {}, "models": [], "overhead": [], "pipelines": [{
            "pipeline": "p", "kernels": 17, "launches": 17, "frames_bytes": 3_145_728,
            "modelrt": st(2_000_000), "modelrt_zero_copy": st(1_500_000), "tinygrad": st(8_000_000),
            "modelrt_enqueue_median_ns": 1_000, "modelrt_device_median_ns": 1_900_000,
            "zero_copy_enqueue_median_ns": 3_000, "zero_copy_device_median_ns": 1_400_000,
            "zero_copy_input_paths": ["zero-copy", "copied (misaligned)"]}]});
        let md = markdown(&doc);
        assert!(
            md.contains("| p | 17 / 17 | modelrt | 200 | 1.000 | 2.000 | 4.000 | 0.001 | 1.900 | 1.000 | 100.0 |"),
            "{md}"
        );
        assert!(md.contains("| p | 17 / 17 | modelrt --zero-copy | 200 | 0.750 | 1.500 | 3.000 | 0.003 | 1.400 |"), "{md}");
        assert!(
            md.contains("| p | 17 / 17 | tinygrad | 200 | 4.000 | 8.000 | 16.000 | - | - |"),
            "{md}"
        );
        assert!(
            md.contains("p: modelrt / tinygrad (median frame) 0.250 with inputs copied, 0.188 with inputs read in place (zero-copy, copied (misaligned)). Peak RSS includes the 3.0 MiB"),
            "{md}"
        );
    }
}
