//! `cargo xtask convert` on openpilot v0.10.4's two real DEV=QCOM warp pickles (qcom/testdata/qcom-cl/, kernels from
//! Qualcomm's own OpenCL compiler): each converts to an adreno-a630 bundle whose kernels are `QcomCl` kernels holding
//! the Qualcomm containers byte for byte (compared with the binaries extracted next to the pickles), with the schedule
//! the data README states, every container parsing (`modelrt info`'s check), and the bundle loading on the Adreno
//! backend over the KGSL model (every kernel's container parsed into a CL-mode layout and the whole run stream
//! recorded), and `modelrt disasm`'s listing of every kernel. Running the converted bundles on the model's interpreter is tested separately (docs/hw/adreno-kgsl-pm4.md
//! §16).
use std::path::{Path, PathBuf};

use modelrt_core::bundle::BufferKind;
use modelrt_core::Bundle;
use modelrt_hal::target::{KernelMeta, Target};
use modelrt_targets::inspect::check_kernels;
use modelrt_tests::{python, root};
use xtask::exporter::{ExportArgs, Source};

fn data() -> PathBuf {
    root().join("qcom/testdata/qcom-cl")
}

/// Decompress `STEM.pkl.gz` into `dir` (system gzip; the workspace has no inflate crate outside test support).
fn pickle(stem: &str, dir: &Path) -> PathBuf {
    let out = dir.join(format!("{stem}.pkl"));
    let st = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(data().join(format!("{stem}.pkl.gz")))
        .stdout(std::fs::File::create(&out).unwrap())
        .status()
        .unwrap();
    assert!(st.success(), "gzip -dc failed");
    out
}

fn convert(py: &Path, stem: &str) -> Vec<u8> {
    let dir = root().join("target/convert_qcom_cl").join(stem);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pkl = pickle(stem, &dir);
    let mut args = ExportArgs::pickle(&pkl, "");
    args.source = Source::Pickle(pkl.clone());
    let out = dir.join("out.mrt");
    xtask::compile::compile(py, args, &out).unwrap();
    std::fs::read(out).unwrap()
}

fn check(py: &Path, stem: &str, kernels: &[&str], launches: usize, copies: usize) {
    let bytes = convert(py, stem);
    let b = Bundle::parse(&bytes).unwrap();
    let body = b.body();
    assert!(matches!(body.target, Target::Adreno { chip: 630, .. }));
    let mut names = Vec::new();
    for k in body.kernels.iter() {
        let k = k.unwrap();
        assert_eq!(k.meta, KernelMeta::QcomCl, "{}", k.name);
        let want = std::fs::read(data().join(format!("{stem}.{}.adreno.bin", k.name))).unwrap();
        assert!(
            k.binary == want.as_slice(),
            "{}: container kept byte for byte",
            k.name
        );
        let src = std::fs::read_to_string(data().join(format!("{stem}.{}.cl", k.name))).unwrap();
        assert_eq!(k.source, Some(src.as_str()));
        names.push(k.name.to_string());
    }
    names.sort();
    assert_eq!(names, kernels);
    let steps: Vec<_> = body.run.iter().map(|s| s.unwrap()).collect();
    let n_launch = steps
        .iter()
        .filter(|s| matches!(s, modelrt_core::bundle::Step::Launch { .. }))
        .count();
    assert_eq!((n_launch, steps.len() - n_launch), (launches, copies));
    assert!(body
        .buffers
        .iter()
        .any(|d| d.unwrap().kind == BufferKind::Input));
    let c = check_kernels(&b).unwrap();
    assert_eq!(c.kernels, kernels.len());
    // `modelrt disasm` lists every kernel exactly as Mesa's own disassembler prints its image
    // (qcom/testdata/qcom-cl/mesa-disasm.txt, written by qcom/golden/cl_mesa_disasm.py).
    let mesa = std::fs::read_to_string(data().join("mesa-disasm.txt")).unwrap();
    let (_, listing) = modelrt_targets::disasm::bundle_listing(&b, None).unwrap();
    assert_eq!(listing.len(), kernels.len());
    for k in &listing {
        let head = format!("=== {stem}.{}", k.name);
        let want: Vec<&str> = mesa
            .split("\n=== ")
            .map(|s| s.trim_start_matches("=== "))
            .find(|s| s.lines().next() == Some(&head[4..]))
            .unwrap_or_else(|| panic!("{head} missing from mesa-disasm.txt"))
            .lines()
            .skip(1)
            .collect();
        let got: Vec<&str> = k.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(got.len(), want.len(), "{}: instruction count", k.name);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{} instruction {i}", k.name);
        }
    }
    // Loads on the Adreno backend over the KGSL model: containers parsed, CL-mode stream recorded.
    let dev = modelrt_qcom::adreno::AdrenoDevice::open(
        modelrt_qcom::emu::kgsl::KgslModel::new(Default::default()),
        Default::default(),
    )
    .unwrap();
    modelrt_core::Executor::load(b, dev).expect("QcomCl bundle loads on the Adreno backend");
}

#[test]
fn openpilot_qcom_cl_warp_pickles_convert_and_load() {
    let Some(py) = python() else { return };
    check(
        &py,
        "v0.10.4_warp_1928x1208_tinygrad",
        &[
            "E_10_32768_3",
            "E_128_64_4",
            "E_128_64_4n1",
            "E_131072_3",
            "E_256_128_4",
        ],
        10,
        2,
    );
    check(
        &py,
        "v0.10.4_dm_warp_1928x1208_tinygrad",
        &["E_960_480_3"],
        1,
        1,
    );
}
