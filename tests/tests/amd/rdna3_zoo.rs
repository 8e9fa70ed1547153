//! The heavy run (not part of `cargo test`: `test = false` in tests/Cargo.toml; minutes per model): ONNX light-zoo models with seeded random
//! weights (`xtask/exporter/tools/zoo_random_weights.py`) compiled for amd-gfx1100, every kernel checked
//! against `llvm-objdump-19`, the whole model run on the RDNA3 interpreter and compared with
//! onnxruntime. Results go to `target/rdna3-zoo.md`; the table in docs/hw/rdna3-isa.md is copied
//! from there.
//!
//! ```sh
//! cargo test --release -p modelrt-tests --test rdna3_zoo -- --nocapture
//! MODELRT_RDNA3_ZOO=squeezenet,shufflenet cargo test --release …   # a subset
//! ```
#![forbid(unsafe_code)]
mod rdna3_support;

use std::process::Command;

use modelrt_core::Bundle;
use modelrt_tests::{compile, light_zoo, python, root};
use rdna3_support::{check, objdump};

/// One model: (instructions compared with LLVM, max abs error, step seconds, lane-ops/s).
fn one(py: &std::path::Path, model: &str) -> Result<(usize, f64, f64, f64), String> {
    let dir = root().join("target/e2e/rdna3-zoo");
    std::fs::create_dir_all(&dir).unwrap();
    let onnx = dir.join(format!("{model}.onnx"));
    let ok = Command::new(py)
        .arg(root().join("xtask/exporter/tools/zoo_random_weights.py"))
        .arg(light_zoo(py).join(format!("light_{model}.onnx")))
        .arg(&onnx)
        .status()
        .map_err(|e| e.to_string())?
        .success();
    if !ok {
        return Err("zoo_random_weights.py failed".into());
    }
    let bytes = std::fs::read(compile(py, &onnx, "amd-gfx1100", true, "-rdna3")).unwrap();
    let b = Bundle::parse(&bytes).map_err(|e| e.to_string())?;
    let mut checked = 0;
    for k in b.body().kernels.iter() {
        let k = k.unwrap();
        checked += check::against_llvm(&dir, &format!("{model}-{}", k.entry), k.binary)?;
    }
    let run = check::against_reference(&b)?;
    let rate = run.stats.lane_ops as f64 / 2.0 / run.step_secs; // two runs were counted
    Ok((checked, run.max_abs, run.step_secs, rate))
}

#[test]
fn light_zoo_on_the_interpreter() {
    let py = python().expect("the exporter's Python venv is required: run `cargo xtask setup`");
    assert!(objdump::available(), "llvm-objdump-19 is required");
    let only = std::env::var("MODELRT_RDNA3_ZOO").unwrap_or_default();
    let mut table = String::from(
        "| model | instructions equal to LLVM | max abs err vs onnxruntime | emulated step (wall) | lane-ops/s (wall) |\n|---|---:|---:|---:|---:|\n",
    );
    let mut failed = Vec::new();
    for &model in xtask::zoo::MODELS {
        if !only.is_empty() && !only.split(',').any(|m| m == model) {
            continue;
        }
        eprintln!("==> rdna3 zoo: {model}");
        match one(&py, model) {
            Ok((n, err, step, rate)) => {
                table += &format!(
                    "| {model} | {n} | {err:.2e} | {step:.1} s | {:.0} M |\n",
                    rate / 1e6
                )
            }
            Err(e) => {
                table += &format!("| {model} | failed: {e} | | | |\n");
                failed.push(model);
            }
        }
        std::fs::write(root().join("target/rdna3-zoo.md"), &table).unwrap();
    }
    eprintln!("{table}");
    assert!(failed.is_empty(), "failed: {failed:?}");
}
