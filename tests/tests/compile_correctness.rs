//! Issue 10 end to end: graphs that once compiled into silently wrong bundles (outputs that are reordering views,
//! outputs the program never writes) or crashed the exporter (1-D and 0-d inputs), and float16/float64 models whose
//! dtypes used to be declared float32 — compiled with the real `xtask compile` pipeline, run by the CPU backend, and
//! compared with onnxruntime's outputs (the reference the exporter embeds; the runtime never sees how it was made).
//! Graph inputs that feed shape-like parameters must be refused with the `--const` fix, and accepted with it.
use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt_core::bundle::Bundle;
use modelrt_core::verify::compare;
use modelrt_hal::target::DType;
use modelrt_tests::{python, reference, root, run_cpu};
use xtask::exporter::ExportArgs;

/// Builds `xtask/exporter/tools/make_correctness_models.py`'s graphs into `target/e2e/correctness/`.
fn models(python: &Path) -> PathBuf {
    let dir = root().join("target/e2e/correctness");
    let st = Command::new(python)
        .arg(root().join("xtask/exporter/tools/make_correctness_models.py"))
        .arg(&dir)
        .output()
        .expect("python runs");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    dir
}

fn compile(
    python: &Path,
    dir: &Path,
    name: &str,
    consts: &[(&str, PathBuf)],
) -> anyhow::Result<PathBuf> {
    let mut args = ExportArgs::onnx(dir.join(format!("{name}.onnx")), "cpu-x86_64", "");
    args.reference = true;
    args.consts = consts
        .iter()
        .map(|(n, p)| (n.to_string(), p.clone()))
        .collect();
    let out = dir.join(format!("{name}.mrt"));
    xtask::compile::compile(python, args, &out)?;
    Ok(out)
}

/// Run the bundle on its embedded (onnxruntime) reference inputs; every output must match in its own dtype.
fn check(bundle: &Path, want_dtypes: &[DType]) {
    let bytes = std::fs::read(bundle).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let dtypes: Vec<DType> = b.body().outputs.iter().map(|t| t.unwrap().dtype).collect();
    assert_eq!(dtypes, want_dtypes, "{}: output dtypes", bundle.display());
    let (ins, want, atol, rtol) = reference(&bytes);
    let got = run_cpu(bundle, &ins).unwrap();
    assert_eq!(got.len(), want.len());
    for ((g, w), dt) in got.iter().zip(&want).zip(&dtypes) {
        let c = compare(*dt, g, w, atol as f64, rtol as f64);
        assert!(c.ok(), "{}: {c:?}", bundle.display());
        if matches!(dt, DType::F16 | DType::F32 | DType::F64) {
            assert!(
                g.iter().any(|&x| x != 0),
                "{}: all-zero output",
                bundle.display()
            );
        }
    }
}

#[test]
fn views_unwritten_outputs_and_odd_ranks_match_onnxruntime() {
    let Some(py) = python() else { return };
    let dir = models(&py);
    for (name, dtypes) in [
        ("view_depth_to_space", &[DType::F32][..]),
        ("view_transpose", &[DType::F32]),
        ("view_expand", &[DType::F32]),
        ("view_strided_slice", &[DType::F32]),
        ("view_concat_two_outputs", &[DType::F32, DType::F32]),
        ("constant_output", &[DType::F32, DType::F32]),
        ("input_passthrough", &[DType::F32]),
        ("input_1d_gather", &[DType::F32]),
        ("input_1d_matmul", &[DType::F32]),
        ("input_0d_clip", &[DType::F32]),
        ("output_0d", &[DType::F32]),
        ("dtype_float16", &[DType::F16]),
        ("dtype_float64", &[DType::F64]),
        ("constant_eyelike", &[DType::F32]),
        ("constant_no_inputs", &[DType::F32]),
        ("constant_size", &[DType::I64]),
        ("python_number_output", &[DType::I64, DType::F32]),
        ("int_division", &[DType::I32, DType::I32]),
    ] {
        let bundle = compile(&py, &dir, name, &[]).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        check(&bundle, dtypes);
    }
    // 0-d outputs stay 0-d (ONNX declares them so; a 1-element [1] would be a different tensor)
    for (name, output) in [
        ("output_0d", 0),
        ("python_number_output", 0),
        ("constant_size", 0),
    ] {
        let bytes = std::fs::read(dir.join(format!("{name}.mrt"))).unwrap();
        let b = Bundle::parse(&bytes).unwrap();
        let t = b.body().outputs.iter().nth(output).unwrap().unwrap();
        assert!(
            t.shape.is_empty(),
            "{name}: output {} has shape {:?}, not 0-d",
            t.name,
            t.shape
        );
    }
}

#[test]
fn shape_like_inputs_are_refused_then_accepted_with_const() {
    let Some(py) = python() else { return };
    let dir = models(&py);
    let e = compile(&py, &dir, "shape_input_reshape", &[]).unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("input 's'") && msg.contains("--const s=FILE.npy") && !msg.contains('\n'),
        "{msg}"
    );
    assert!(matches!(
        e.downcast_ref::<xtask::exporter::ExportFailure>(),
        Some(xtask::exporter::ExportFailure::Refused(_))
    ));
    let npy = dir.join("shape_3x4.npy");
    let st = Command::new(&py)
        .args([
            "-c",
            "import sys, numpy as np; np.save(sys.argv[1], np.array([3, 4], dtype=np.int64))",
        ])
        .arg(&npy)
        .status()
        .unwrap();
    assert!(st.success());
    let bundle = compile(&py, &dir, "shape_input_reshape", &[("s", npy)]).unwrap();
    let bytes = std::fs::read(&bundle).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let names: Vec<&str> = b.body().inputs.iter().map(|t| t.unwrap().name).collect();
    assert_eq!(names, ["x"], "the folded input is no longer a bundle input");
    check(&bundle, &[DType::F32]);
}
