//! Every device target from the same ONNX: `cpu-aarch64`, `adreno-a630` (fp32, and openpilot's
//! IMAGE=1 FLOAT16=1) and AMD `gfx1100`/`gfx1201`. These cannot run on this machine, so the bundles
//! are checked to be well formed and every kernel binary to decode for its target
//! (`modelrt_targets::inspect`); the Adreno bundles also go through the Adreno backend against the
//! KGSL model, which validates every PM4 stream they submit (shader execution: tests/tests/adreno/adreno_ir3.rs).
use modelrt_hal::target::TargetName;
use std::path::Path;

use modelrt_core::Bundle;
use modelrt_hal::target::Target;
use modelrt_targets::inspect::check_kernels;
use modelrt_tests::{compile_args, count_launches, python, root, run_on_kgsl_model};
use xtask::exporter::ExportArgs;

fn build(py: &Path, model: &str, target: &str, image: bool) -> Vec<u8> {
    let mut args = ExportArgs::onnx(
        root().join(format!("xtask/models/{model}.onnx")),
        target.parse().expect("a target name"),
        "",
    );
    args.image = image;
    args.float16 = image;
    let path = compile_args(py, args, if image { "-image" } else { "" });
    std::fs::read(path).unwrap()
}

fn check<'a>(bytes: &'a [u8], family: &str) -> Bundle<'a> {
    let b = Bundle::parse(bytes).expect("bundle parses and validates");
    assert_eq!(b.body().target.family(), family);
    let c = check_kernels(&b).unwrap_or_else(|e| panic!("kernel binaries: {e}"));
    assert!(c.kernels > 0 && c.code_bytes > 0);
    b
}

#[test]
fn aarch64_cpu_bundles_decode() {
    let Some(py) = python() else { return };
    for model in ["vision", "policy", "dmonitor"] {
        let bytes = build(&py, model, "cpu-aarch64", false);
        let b = check(&bytes, "cpu");
        assert!(matches!(
            b.body().target,
            Target::Cpu {
                arch: modelrt_hal::target::CpuArch::Aarch64,
                baseline: "cortex-a76",
                ..
            }
        ));
    }
}

#[test]
fn amd_bundles_decode() {
    let Some(py) = python() else { return };
    for (target, gfx) in [("amd-gfx1100", 0x1100), ("amd-gfx1201", 0x1201)] {
        for model in ["vision", "policy"] {
            let bytes = build(&py, model, target, false);
            let b = check(&bytes, "amd");
            assert_eq!(b.body().target, Target::Amd { gfx });
            for k in b.body().kernels.iter() {
                link_hsa_code_object(&k.unwrap());
            }
        }
    }
}

/// Load and run twice on the KGSL model; returns (dispatches, submissions) the model saw.
/// The stored AMD objects are what tinygrad's own AMD runtime loads (ET_REL + its ELF loader); for
/// HIP/HSA-style loaders they must also link into a code object: `ld.lld-19 -shared` must accept each
/// one and export the kernel and its `.kd` descriptor (docs/hw/tinygrad-export.md §8).
fn link_hsa_code_object(k: &modelrt_core::bundle::KernelDesc<'_>) {
    let dir = root().join("target/e2e/amd-link");
    std::fs::create_dir_all(&dir).unwrap();
    let obj = dir.join(format!("{}.o", k.entry));
    let so = dir.join(format!("{}.hsaco", k.entry));
    std::fs::write(&obj, k.binary).unwrap();
    let out = std::process::Command::new("ld.lld-19")
        .args(["-shared", "--no-undefined", "-o"])
        .arg(&so)
        .arg(&obj)
        .output()
        .expect("ld.lld-19 runs (Debian package lld-19; `cargo xtask setup` installs it)");
    assert!(
        out.status.success(),
        "{}: {}",
        k.entry,
        String::from_utf8_lossy(&out.stderr)
    );
    let linked = std::fs::read(&so).unwrap();
    assert_eq!(&linked[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([linked[16], linked[17]]), 3, "ET_DYN");
    let has = |needle: &str| linked.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(
        has(&format!("{}.kd", k.entry)) && has(k.entry),
        "{} symbols exported",
        k.entry
    );
}

#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn adreno_bundles_decode_and_their_streams_validate() {
    let Some(py) = python() else { return };
    for (model, image) in [
        ("vision", false),
        ("vision", true),
        ("policy", false),
        ("dmonitor", true),
    ] {
        let bytes = build(&py, model, "adreno-a630", image);
        let b = check(&bytes, "adreno");
        assert_eq!(
            b.body().target,
            Target::Adreno {
                chip: 630,
                image,
                half: image
            }
        );
        let launches = count_launches(&b);
        let (dispatches, submits) = run_on_kgsl_model(b);
        // init once + two runs, every launch decoded and validated by the model.
        assert!(
            dispatches >= 2 * launches,
            "{model}: {dispatches} dispatches for {launches} launches"
        );
        assert!(submits >= 2);
    }
}

#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn adreno_compiles_are_deterministic() {
    let Some(py) = python() else { return };
    let a = build(&py, "policy", "adreno-a630", true);
    let mut args = ExportArgs::onnx(
        root().join("xtask/models/policy.onnx"),
        TargetName::AdrenoA630,
        "",
    );
    args.image = true;
    args.float16 = true;
    let b = std::fs::read(compile_args(&py, args, "-image-again")).unwrap();
    assert!(a == b, "two IR3 compiles of policy.onnx differ (IR3 blobs embed heap pointers; the exporter must decode them)");
}
