//! The searched column: which committed search cache (`xtask/beam/NAME-ARCH.json`, made by `cargo xtask
//! compile --beam N`) a model is benchmarked with, the step-time goals against onnxruntime, and
//! the Markdown of the searched table.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::prepare::sha256_hex;
use super::report::{ratio, stats_row};

/// The search goals: searched modelrt's median step at most this multiple of onnxruntime's.
pub const GOALS: &[(&str, f64)] = &[
    ("policy", 1.5),
    ("dmonitor", 1.5),
    ("vision", 1.5),
    ("squeezenet", 2.5),
    ("resnet50", 2.5),
];

/// The committed search cache for `model` on this host's architecture, if there is one made for
/// `threads` threads: (path, a description for the results document). Caches bake the thread
/// split, so another `--threads` has no searched column (the bench says so).
pub(super) fn search_cache(
    root: &Path,
    model: &str,
    threads: usize,
) -> Result<Option<(PathBuf, Value)>> {
    let arch = std::env::consts::ARCH;
    let rel = format!("xtask/beam/{model}-{arch}.json");
    let path = root.join(&rel);
    let Ok(bytes) = std::fs::read(&path) else {
        eprintln!("[bench] {model}: no search cache {rel}: no searched column");
        return Ok(None);
    };
    let doc: Value =
        serde_json::from_slice(&bytes).with_context(|| format!("{rel} is not JSON"))?;
    if doc["threads"].as_str() != Some(threads.to_string().as_str()) {
        eprintln!(
            "[bench] {model}: {rel} was searched for {} threads, not {threads}: no searched column",
            doc["threads"]
        );
        return Ok(None);
    }
    let info = json!({"path": rel, "sha256": sha256_hex(&bytes), "beam": doc["beam"],
                      "search_s": doc["search_s"], "searched_on": doc["searched_on"],
                      "kernels": doc["kernels"].as_array().map_or(0, Vec::len)});
    Ok(Some((path, info)))
}

/// `policy, 2 threads` (the bare name for entries from before the thread list).
fn label(r: &Value) -> String {
    let name = r["model"].as_str().unwrap_or("?");
    match r["threads"].as_u64() {
        Some(t) => format!("{name}, {}", super::report::threads_text(t)),
        None => name.to_string(),
    }
}

fn ratio_f(a: &Value, b: &Value) -> Option<f64> {
    match (a.as_u64(), b.as_u64()) {
        (Some(x), Some(y)) if y > 0 => Some(x as f64 / y as f64),
        _ => None,
    }
}

/// The searched section of the report: per model the searched bundle and tinygrad's replay of the
/// same searched kernels next to onnxruntime (same run, same rounds), and the ratios against the goals.
pub(super) fn markdown(s: &mut String, doc: &Value) {
    let rows: Vec<&Value> = doc["models"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["beam"].is_object())
        .collect();
    if rows.is_empty() {
        return;
    }
    s.push_str("\nSearched kernels (`--beam-cache xtask/beam/NAME-ARCH.json`), interleaved with the runs above:\n\n");
    s.push_str("| model | kernels / launches | runtime | steps | step min (ms) | step median (ms) | step max (ms) | load (ms) | peak RSS (MiB) |\n");
    s.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
    for r in &rows {
        let b = &r["beam"];
        for (rt, st) in [
            ("modelrt BEAM", &b["modelrt"]),
            ("tinygrad BEAM", &b["tinygrad"]),
            ("onnxruntime", &r["onnxruntime"]),
        ] {
            let model = label(r);
            s.push_str(&stats_row(&model, &b["kernels"], &b["launches"], rt, st));
        }
    }
    s.push_str("\n| model | search cache | modelrt BEAM / onnxruntime (median) | goal | met | modelrt BEAM=0 / onnxruntime (median) | modelrt BEAM / BEAM=0 (median) | modelrt BEAM / tinygrad BEAM (median) |\n");
    s.push_str("|---|---|---:|---:|---|---:|---:|---:|\n");
    for r in &rows {
        let b = &r["beam"];
        let name = r["model"].as_str().unwrap_or("?");
        let shown = label(r);
        let searched = ratio_f(&b["modelrt"]["median_ns"], &r["onnxruntime"]["median_ns"]);
        let goal = GOALS.iter().find(|(m, _)| *m == name).map(|g| g.1);
        let met = match (searched, goal) {
            (Some(x), Some(g)) if x <= g => "yes",
            (Some(_), Some(_)) => "no",
            _ => "-",
        };
        let _ = writeln!(
            s,
            "| {shown} | BEAM={} ({} kernels, searched in {} s) | {} | {} | {met} | {} | {} | {} |",
            b["cache"]["beam"],
            b["cache"]["kernels"],
            b["cache"]["search_s"],
            searched.map_or("-".into(), |x| format!("{x:.3}")),
            goal.map_or("-".into(), |g| format!("≤ {g}")),
            ratio(&r["modelrt"]["median_ns"], &r["onnxruntime"]["median_ns"]),
            ratio(&b["modelrt"]["median_ns"], &r["modelrt"]["median_ns"]),
            ratio(&b["modelrt"]["median_ns"], &b["tinygrad"]["median_ns"]),
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn searched_table_states_ratios_against_the_goals() {
        let st = crate::bench::stats::fixture;
        let doc = json!({"models": [
            {"model": "vision", "modelrt": st(4_000_000), "tinygrad": st(8_000_000), "onnxruntime": st(1_000_000),
             "beam": {"kernels": 6, "launches": 6, "modelrt": st(2_000_000), "tinygrad": st(5_000_000),
                      "cache": {"beam": 2, "kernels": 6, "search_s": 120.5}}},
            {"model": "resnet50", "modelrt": st(4_000_000), "tinygrad": st(8_000_000), "onnxruntime": st(2_000_000),
             "beam": {"kernels": 30, "launches": 55, "modelrt": st(4_000_000), "tinygrad": st(6_000_000),
                      "cache": {"beam": 2, "kernels": 30, "search_s": 900}}},
            {"model": "policy", "modelrt": st(4_000_000), "tinygrad": st(8_000_000), "onnxruntime": st(2_000_000)}]});
        let mut md = String::new();
        super::markdown(&mut md, &doc);
        assert!(
            md.contains(
                "| vision | 6 / 6 | modelrt BEAM | 3 | 1.999 | 2.000 | 2.001 | 2.000 | 10.0 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| vision | 6 / 6 | tinygrad BEAM | 3 | 4.999 | 5.000 |"),
            "{md}"
        );
        // 2.0 / 1.0 ms = 2.0 > 1.5: not met; BEAM=0 was 4.0; searched / unsearched 0.5; vs tinygrad 0.4
        assert!(
            md.contains("| vision | BEAM=2 (6 kernels, searched in 120.5 s) | 2.000 | ≤ 1.5 | no | 4.000 | 0.500 | 0.400 |"),
            "{md}"
        );
        // 4.0 / 2.0 = 2.0 ≤ 2.5: met
        assert!(
            md.contains(
                "| resnet50 | BEAM=2 (30 kernels, searched in 900 s) | 2.000 | ≤ 2.5 | yes |"
            ),
            "{md}"
        );
        assert!(
            !md.contains("| policy |"),
            "no searched export, no row: {md}"
        );
    }
}
