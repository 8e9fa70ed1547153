//! openpilot 0.11's real TinyJit pickles (qcom/testdata/openpilot-0.11/, docs/openpilot-pickles.md) through `cargo xtask convert`
//! (`xtask::pickle_table`, the code `cargo xtask pickle-table` runs over all seven): a representative subset —
//! one pickle per converted layout, the one with fractional global sizes, and one per kind of refusal. Converted
//! pickles run on `--device qcom-emu` and every output byte must equal the kernel's own OpenCL C run on the host
//! (driver warps, one kernel) or the numpy model of openpilot's warp (`qcom/tests/qcom_cl/pickle_e2e.py`, the model
//! v0.10.4's warp pickles are checked against; driver warps are compared with it too, to tell where openpilot
//! changed the warp). Expected layouts and refusals come from the data README (tinygrad versions, what `lib`
//! holds), not from the converter.
use modelrt_tests::{python, root};
use xtask::pickle_table::{run_one, Outcome, Row};

fn run(stem: &str) -> Option<Row> {
    let py = python()?; // skip::require: a missing venv fails under MODELRT_REQUIRE_PYTHON (CI)
    let r = run_one(&py, &root(), stem, &root().join("target/openpilot_pickles")).unwrap();
    println!("{stem}: {} — {:?}", r.layout, r.outcome);
    Some(r)
}

fn computes(stem: &str, layout: &str, outputs: usize, partial: bool, equal_to: &str) {
    let Some(r) = run(stem) else { return };
    assert!(r.layout.starts_with(layout), "{stem}: layout {}", r.layout);
    match r.outcome {
        Outcome::Computes {
            outputs: n,
            partial: p,
            equal_to: e,
            ..
        } => {
            assert_eq!(n, outputs, "{stem}: outputs");
            assert!(e.contains(equal_to), "{stem}: equal to {e}");
            assert_eq!(
                p > 0,
                partial,
                "{stem}: launches with partial work groups: {p}"
            );
        }
        Outcome::Refused(e) => panic!("{stem} was refused: {e}"),
    }
}

fn refused(stem: &str, layout: &str, needles: &[&str]) {
    let Some(r) = run(stem) else { return };
    assert!(r.layout.starts_with(layout), "{stem}: layout {}", r.layout);
    match r.outcome {
        Outcome::Refused(e) => {
            for n in needles {
                assert!(e.contains(n), "{stem}: `{n}` not in `{e}`");
            }
        }
        o => panic!("{stem} converted ({o:?}) but its kernels cannot be right"),
    }
}

#[test]
fn driver_warp_v0_12_0_329_exec_items_computes() {
    // the same OpenCL C as v0.10.4's driver warp (qcom/testdata/qcom-cl), so also equal to its numpy model
    computes(
        "tg0.12-329_dm_warp_1928x1208_tinygrad",
        "exec-items",
        1,
        false,
        "OpenCL C run on the host and the numpy warp model",
    );
}

#[test]
fn driver_warp_v0_12_0_1606_linear_layout_computes() {
    // openpilot 0.11.2 changed the driver warp (its source writes 16 outside the frame): host OpenCL C only
    computes(
        "tg0.12-1606_dm_warp_1928x1208_tinygrad",
        "linear-index",
        1,
        false,
        "openpilot changed this warp",
    );
}

#[test]
fn road_warp_v0_12_0_329_with_fractional_global_sizes_computes() {
    computes(
        "tg0.12-329_warp_1928x1208_tinygrad",
        "exec-items",
        4,
        true,
        "the numpy warp model",
    );
}

#[test]
fn source_only_qcom_kernels_are_refused_naming_the_kernel() {
    refused(
        "tg0.12-455_dm_warp_1928x1208_tinygrad",
        "exec-items",
        &["kernel E_960_480_3", "OpenCL C source text"],
    );
}

#[test]
fn raw_x86_cpu_kernels_are_refused_with_the_reason() {
    refused(
        "tg0.13.0-288_cpu_dm_warp_1928x1208_tinygrad",
        "linear-param",
        &["E_120_480_8_3", "raw machine code without an ELF header"],
    );
}
