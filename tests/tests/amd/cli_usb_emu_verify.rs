//! AMD GPU execution end to end, driven through the `modelrt` binary: the vision-, policy- and
//! dmonitor-like models compiled for amd-gfx1100 with `--reference` pass `modelrt verify --device
//! usb-emu` (AM driver → ASM24 bridge emulator → Navi31 GPU model → RDNA3 interpreter; the
//! reference is onnxruntime's, embedded at compile time), `modelrt bench --device usb-emu` reports a
//! step time and USB transfers per step and labels them as emulated, and `modelrt run --device
//! usb-emu` gives the same outputs (within 1e-5) as the same graph compiled for the host CPU
//! (cpu-x86_64 here).
//!
//! Needs the exporter Python (tinygrad, onnxruntime, libLLVM for gfx1100) and the firmware files
//! from `cargo xtask firmware`; without them it is a reported skip, a failure under CI. Bundles are
//! compiled once per test process (`modelrt_tests::compile`) and shared by the tests.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use modelrt_core::bundle::Bundle;
use modelrt_core::verify::compare;
use modelrt_targets::npy;

const MODELS: [&str; 3] = ["vision", "policy", "dmonitor"];

/// `target/amdgpu-firmware`, or `None` after a reported skip (a failure under CI).
fn firmware() -> Option<PathBuf> {
    let dir = modelrt_tests::root().join("target/amdgpu-firmware");
    modelrt_tests::skip::require(
        dir.join("psp_13_0_0_sos.bin").exists().then_some(dir),
        "no AMD firmware in target/amdgpu-firmware (run `cargo xtask firmware`)",
    )
}

/// The firmware directory and the exporter Python.
fn setup() -> Option<(PathBuf, PathBuf)> {
    let fw = firmware()?;
    let py = modelrt_tests::python()?;
    Some((fw, py))
}

/// `model`'s bundle for `target` (compiled once per process); AMD bundles embed onnxruntime's
/// reference, the cpu ones (only run on the AMD bundle's reference inputs) need none.
fn bundle(py: &Path, model: &str, target: &str) -> PathBuf {
    let onnx = modelrt_tests::root().join(format!("xtask/models/{model}.onnx"));
    let reference = target.starts_with("amd");
    modelrt_tests::compile(py, &onnx, target, reference, "-usb-emu-cli")
}

/// The `modelrt` binary (debug), built once per test process: it belongs to `modelrt-targets`, so
/// cargo does not build it for this crate's tests.
fn modelrt_bin() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        xtask::bench::build_modelrt(&modelrt_tests::root(), false)
            .unwrap_or_else(|e| panic!("building the modelrt binary: {e:#}"))
    })
}

fn modelrt(args: &[&str], fw: &Path) -> Output {
    Command::new(modelrt_bin())
        .args(args)
        .env("MODELRT_AMD_FIRMWARE_DIR", fw)
        .output()
        .expect("modelrt runs")
}

/// Run and require success; returns stdout.
fn ok(args: &[&str], fw: &Path) -> String {
    let o = modelrt(args, fw);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "modelrt {args:?}:\n{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("modelrt-usb-emu-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn verify_through_usb_emu_passes_for_vision_policy_dmonitor() {
    let Some((fw, py)) = setup() else {
        return;
    };
    for model in MODELS {
        let b = bundle(&py, model, "amd-gfx1100");
        // Each model has a kernel using LDS (tinygrad's reductions, group segment 64 or 512 B): the
        // interpreter sizes LDS from COMPUTE_PGM_RSRC2.LDS_SIZE only, so this verify fails (LDS
        // reads give 0) unless the AM driver ORs the group segment size into RSRC2.
        let bytes = std::fs::read(&b).unwrap();
        let lds = Bundle::parse(&bytes)
            .unwrap()
            .body()
            .kernels
            .iter()
            .filter(|k| {
                matches!(&k.as_ref().unwrap().meta,
                    modelrt_hal::target::KernelMeta::Amd(m) if m.group_segment_fixed_size > 0)
            })
            .count();
        assert!(lds > 0, "{model}: no kernel uses LDS");
        let out = ok(&["verify", b.to_str().unwrap(), "--device", "usb-emu"], &fw);
        assert!(
            out.contains("usb-emu (AM driver → bridge emulator → Navi31 GPU model"),
            "{model}: {out}"
        );
        assert!(
            out.contains("verified    outputs match the embedded reference"),
            "{model}: {out}"
        );
        assert!(!out.contains("mismatch"), "{model}: {out}");
    }
}

#[test]
fn bench_through_usb_emu_reports_emulated_step_time_and_usb_transfers() {
    let Some((fw, py)) = setup() else {
        return;
    };
    for model in MODELS {
        let b = bundle(&py, model, "amd-gfx1100");
        let args = [
            "bench",
            b.to_str().unwrap(),
            "--device",
            "usb-emu",
            "--iters",
            "2",
            "--warmup",
            "0",
        ];
        let out = ok(&args, &fw);
        let line = |prefix: &str| {
            out.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("{model}: no {prefix:?} line in:\n{out}"))
                .to_string()
        };
        assert!(line("device").contains("usb-emu"), "{model}: {out}");
        assert!(
            line("step").contains("median") && line("step").contains(" (2 iters, 0 warm-up)"),
            "{model}: {out}"
        );
        assert!(line("note").contains("emulated"), "{model}: {out}");
        let usb = line("usb ");
        assert!(usb.contains("— emulated bridge"), "{model}: {usb}");
        let per_step: u64 = usb
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{model}: no transfer count in {usb:?}"));
        // Each step uploads the inputs, rings the doorbell, waits and reads the outputs back: at
        // least a handful of transfers, and not one per kernel launch per byte.
        assert!(
            (4..10_000).contains(&per_step),
            "{model}: {per_step} transfers per step: {usb}"
        );
        assert!(
            usb.contains("transfers per step") && usb.contains("KiB out"),
            "{model}: {usb}"
        );
        if model != "policy" {
            continue; // the JSON form once, on the cheapest model (CI time)
        }
        // The JSON form carries the same counts and the emulated flag.
        let mut json_args = args.to_vec();
        json_args.push("--json");
        let doc: serde_json::Value = serde_json::from_str(ok(&json_args, &fw).trim()).unwrap();
        assert_eq!(doc["emulated"], true, "{model}: {doc}");
        assert!(
            doc["usb_transfers_per_step"].as_u64().unwrap_or(0) >= 4,
            "{model}: {doc}"
        );
    }
}

#[test]
fn usb_emu_outputs_agree_with_the_cpu_bundle_of_the_same_graph() {
    let Some((fw, py)) = setup() else {
        return;
    };
    for model in MODELS {
        let amd = bundle(&py, model, "amd-gfx1100");
        let cpu = bundle(&py, model, &format!("cpu-{}", std::env::consts::ARCH));
        let bytes = std::fs::read(&amd).unwrap();
        let b = Bundle::parse(&bytes).unwrap();
        let (inputs, _, _, _) = modelrt_tests::reference(&bytes);
        let dir = scratch(model);
        let mut args_in = Vec::new();
        for (t, data) in b.body().inputs.iter().zip(&inputs) {
            let t = t.unwrap();
            let f = dir.join(format!("in-{}.npy", t.name));
            std::fs::write(&f, npy::encode(t.dtype, &t.shape, data)).unwrap();
            args_in.push(format!("{}={}", t.name, f.display()));
        }
        let run = |bundle: &Path, device: &str, out: &Path| {
            let mut args = vec![
                "run".to_string(),
                bundle.display().to_string(),
                "--device".into(),
                device.into(),
                "--output-dir".into(),
                out.display().to_string(),
            ];
            for a in &args_in {
                args.push("--input".into());
                args.push(a.clone());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            ok(&args, &fw);
        };
        let (out_amd, out_cpu) = (dir.join("usb-emu"), dir.join("cpu"));
        run(&amd, "usb-emu", &out_amd);
        run(&cpu, "cpu", &out_cpu);
        for t in b.body().outputs.iter() {
            let t = t.unwrap();
            let read = |d: &Path| {
                npy::parse(&std::fs::read(d.join(format!("{}.npy", t.name))).unwrap()).unwrap()
            };
            let (got, want) = (read(&out_amd), read(&out_cpu));
            assert_eq!(got.shape, want.shape, "{model} {}", t.name);
            let c = compare(t.dtype, &got.data, &want.data, 1e-5, 1e-5);
            eprintln!(
                "{model} {}: usb-emu vs cpu max abs {:.3e}",
                t.name, c.max_abs
            );
            assert!(
                c.count > 0 && c.mismatches == 0,
                "{model} {}: {c:?}",
                t.name
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
