//! openpilot v0.10.4's two real warp pickles (`DEV=QCOM`, kernels from Qualcomm's compiler;
//! `qcom/testdata/qcom-cl/`) converted by `cargo xtask convert` and run on `--device qcom-emu` — the KGSL model
//! executing CP_RUN_OPENCL dispatches in CL mode (docs/hw/adreno-kgsl-pm4.md §16.11) — against numpy models of
//! openpilot's warp (`qcom/tests/qcom_cl/warp_model.py`, `road_warp_model.py`): every byte of every output equal,
//! on real-size NV12 frames of pseudo-random content with transforms reaching past the frame's edges.
use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt_core::bundle::Bundle;
use modelrt_targets::runner::{load, LoadOptions};
use modelrt_tests::{python, root};
use xtask::exporter::{ExportArgs, Source};

fn script(name: &str) -> PathBuf {
    root().join("qcom/tests/qcom_cl").join(name)
}

fn py_run(py: &Path, args: &[&std::ffi::OsStr]) {
    let out = Command::new(py)
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Convert pickle `stem` (gzipped in the testdata), run it on qcom-emu on `kind`'s inputs and compare every
/// output with the numpy model's.
fn check(stem: &str, kind: &str) {
    let Some(py) = python() else { return };
    let dir = root().join("target/qcom_cl_pickles").join(kind);
    std::fs::create_dir_all(&dir).unwrap();
    let pkl = dir.join(format!("{stem}.pkl"));
    let gz = root().join(format!("qcom/testdata/qcom-cl/{stem}.pkl.gz"));
    py_run(
        &py,
        &[
            script("pickle_e2e.py").as_os_str(),
            "gunzip".as_ref(),
            gz.as_os_str(),
            pkl.as_os_str(),
        ],
    );
    let mrt = dir.join(format!("{stem}.mrt"));
    let mut args = ExportArgs::pickle(&pkl, "");
    args.source = Source::Pickle(pkl.clone());
    xtask::compile::compile(&py, args, &mrt).unwrap();
    py_run(
        &py,
        &[
            script("pickle_e2e.py").as_os_str(),
            kind.as_ref(),
            dir.as_os_str(),
        ],
    );

    let bytes = std::fs::read(&mrt).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let ins: Vec<Vec<u8>> = (0..b.body().inputs.len())
        .map(|i| std::fs::read(dir.join(format!("input{i}.bin"))).unwrap())
        .collect();
    let mut outs: Vec<Vec<u8>> = b
        .body()
        .outputs
        .iter()
        .map(|t| vec![0u8; t.unwrap().byte_len() as usize])
        .collect();
    let mut m = load(
        b,
        LoadOptions::on(modelrt_targets::runner::device("qcom-emu").unwrap()),
    )
    .unwrap();
    assert!(m.computes_outputs());
    let ins: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
    let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    m.run(&ins, &mut refs).unwrap_or_else(|e| panic!("{e:#}"));
    for (j, got) in outs.iter().enumerate() {
        let want = std::fs::read(dir.join(format!("expected{j}.bin"))).unwrap();
        assert_eq!(got.len(), want.len(), "{stem} output{j}: size");
        let bad = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        println!(
            "{stem} output{j}: {bad} of {} bytes differ from the numpy model",
            want.len()
        );
        assert_eq!(bad, 0, "{stem} output{j} differs from the numpy warp model");
    }
}

#[test]
fn road_warp_pickle_on_qcom_emu_equals_the_numpy_warp() {
    check("v0.10.4_warp_1928x1208_tinygrad", "road");
}

#[test]
fn driver_warp_pickle_on_qcom_emu_equals_the_numpy_warp() {
    check("v0.10.4_dm_warp_1928x1208_tinygrad", "driver");
}
