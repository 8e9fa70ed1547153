//! Index inputs: a Gather whose int64 index input holds 1000000 on a 50-row table used to return a
//! row of `-0.` (tinygrad masks out-of-range gathers to zero) where onnxruntime refuses. The compile now records the
//! valid range of every integer input that indexes something (bundle format 2.3 index checks) and `run` refuses an
//! out-of-range element before the first kernel, naming the input, the element and the range — here checked against
//! onnxruntime's own refusal of the same values, and against onnxruntime's outputs for in-range values (negative
//! indices included), on the library path (`LoadedModel::run`, which the C API calls, and `run_frame` with borrowed
//! inputs, which the Python API calls) and the CLI.
use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt_core::bundle::{Bundle, INDEX_CHECK_MINOR};
use modelrt_targets::frame::{FrameInput, InputPath};
use modelrt_targets::npy;
use modelrt_targets::runner::LoadOptions;
use modelrt_tests::{compile, python, root, run_cpu};

/// `xtask/exporter/tools/make_index_models.py`'s models and onnxruntime's answers, in `target/e2e/index/`.
fn models(py: &Path) -> PathBuf {
    let dir = root().join("target/e2e/index");
    let o = Command::new(py)
        .arg(root().join("xtask/exporter/tools/make_index_models.py"))
        .arg(&dir)
        .output()
        .expect("python runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    dir
}

fn npy_bytes(p: &Path) -> Vec<u8> {
    npy::parse(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
        .data
        .to_vec()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The bundle's inputs from `dir/NAME.KIND_INPUT.npy`, in bundle order.
fn inputs(bundle: &Path, dir: &Path, name: &str, kind: &str) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(bundle).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    b.body()
        .inputs
        .iter()
        .map(|t| npy_bytes(&dir.join(format!("{name}.{kind}_{}.npy", t.unwrap().name))))
        .collect()
}

fn modelrt_bin() -> PathBuf {
    xtask::bench::build_modelrt(&root(), false).unwrap_or_else(|e| panic!("{e:#}"))
}

#[test]
fn gather_out_of_range_is_refused_like_onnxruntime() {
    let Some(py) = python() else { return };
    let dir = models(&py);
    let bundle = compile(&py, &dir.join("gather.onnx"), "cpu-x86_64", false, "-index");
    let bytes = std::fs::read(&bundle).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    assert_eq!(b.header().minor, INDEX_CHECK_MINOR);
    let checks: Vec<_> = b.index_checks().iter().map(Result::unwrap).collect();
    assert_eq!(checks.len(), 1, "{checks:?}");
    // 50 rows: ONNX allows -50..=49.
    assert_eq!(
        (
            checks[0].input,
            checks[0].period,
            checks[0].min,
            checks[0].max
        ),
        (0, 1, -50, 49)
    );

    // In range (both ends, a negative index): onnxruntime's answer.
    let got = run_cpu(&bundle, &inputs(&bundle, &dir, "gather", "ok")).unwrap();
    assert_eq!(
        f32s(&got[0]),
        f32s(&npy_bytes(&dir.join("gather.ort_y.npy")))
    );

    // Out of range: onnxruntime refuses, and so does the bundle, before running anything.
    let ort = std::fs::read_to_string(dir.join("gather.ort_error.txt")).unwrap();
    assert!(ort.contains("out of data bounds"), "{ort}");
    let e = run_cpu(&bundle, &inputs(&bundle, &dir, "gather", "bad")).unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.starts_with("input 'idx' element 1 is 1000000, outside the valid range -50..=49 (indices of Gather 'g0'"),
        "{msg}"
    );

    // Borrowed (zero-copy) inputs, the Python API's path (`LoadedModel::run_frame`): the index input is copied so that it
    // can be checked, and refused the same way.
    let mut model = modelrt_targets::runner::load(
        b.clone(),
        LoadOptions::on(modelrt_targets::runner::device("cpu").unwrap()),
    )
    .unwrap();
    let mut bad = inputs(&bundle, &dir, "gather", "bad").remove(0);
    let mut y = vec![0u8; 3 * 4 * 4];
    let mut paths = [InputPath::Copied];
    let e = model
        .run_frame(
            &mut [FrameInput::Borrow(&mut bad)],
            &mut [&mut y],
            &mut paths,
        )
        .unwrap_err();
    assert!(
        format!("{e:#}").starts_with("input 'idx' element 1 is 1000000"),
        "{e:#}"
    );
    assert!(
        matches!(paths[0], InputPath::CopiedInstead(why) if why.contains("range-checks")),
        "{:?}",
        paths[0]
    );

    // The CLI: one error line, exit 1, no output written.
    let out = dir.join("cli-out");
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(modelrt_bin())
        .arg("run")
        .arg(&bundle)
        .arg("--input")
        .arg(format!("idx={}", dir.join("gather.bad_idx.npy").display()))
        .arg("--output-dir")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains("input 'idx' element 1 is 1000000"),
        "{err}"
    );
    assert!(
        !out.join("y.npy").exists(),
        "an output was written for a refused run"
    );
}

#[test]
fn gathernd_checks_each_tuple_position_against_its_axis() {
    let Some(py) = python() else { return };
    let dir = models(&py);
    let bundle = compile(
        &py,
        &dir.join("gathernd.onnx"),
        "cpu-x86_64",
        false,
        "-index",
    );
    let bytes = std::fs::read(&bundle).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let mut ranges: Vec<_> = b
        .index_checks()
        .iter()
        .map(|c| {
            let c = c.unwrap();
            (c.period, c.phase, c.min, c.max)
        })
        .collect();
    ranges.sort();
    // data [5, 7]: position 0 of each (row, col) pair indexes 5 rows, position 1 seven columns.
    assert_eq!(ranges, vec![(2, 0, -5, 4), (2, 1, -7, 6)]);

    let got = run_cpu(&bundle, &inputs(&bundle, &dir, "gathernd", "ok")).unwrap();
    assert_eq!(
        f32s(&got[0]),
        f32s(&npy_bytes(&dir.join("gathernd.ort_y.npy")))
    );

    let ort = std::fs::read_to_string(dir.join("gathernd.ort_error.txt")).unwrap();
    assert!(ort.contains("invalid index"), "{ort}");
    let e = run_cpu(&bundle, &inputs(&bundle, &dir, "gathernd", "bad")).unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.starts_with("input 'idx' element 3 is 7, outside the valid range -7..=6"),
        "{msg}"
    );
}
