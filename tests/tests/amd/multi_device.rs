//! Bundles spanning several devices (format 2.3; docs/pipeline.md, "Device roles"): openpilot's USB-GPU layout.
//!
//! - The modeld pipeline (`xtask/models/modeld_pipeline.py`) compiled with `--target warp=adreno-a630 --target
//!   model=amd-gfx1100` runs on `qcom-emu,usb-emu` (the KGSL model for the warp and its frame queue, the AM driver over
//!   the bridge emulator for the nets and their queues) and matches the same script's single-target cpu bundle
//!   frame by frame within the documented tolerances, outputs and every queue. The warp costs ~2 s a frame on the
//!   IR3 interpreter, so CI runs [`CI_FRAMES`] frames; `cargo xtask pipeline` runs all 20 (docs/pipeline.md).
//! - A second two-role script of the same shape (`xtask/models/two_roles.py`: two values cross per frame) does the
//!   same over 20 frames, and its split onto two CPU roles equals its single cpu bundle bit for bit (the plan moves
//!   the exact bytes the single program keeps in one arena).
//! - Each frame moves exactly the planned copies (bytes per crossing), and a wrong device list is refused by name.
use std::path::PathBuf;
use std::sync::OnceLock;

use modelrt_core::Bundle;
use modelrt_hal::target::{DType, TargetName};
use modelrt_targets::runner::{device, load, FrameReport, LoadOptions, LoadedModel, UsbCounts};
use modelrt_tests::{python, root};
use xtask::exporter::{ExportArgs, Source};
use xtask::pipeline::{self, split, steps};

/// Frames of the modeld pipeline in CI (all 20: `cargo xtask pipeline`).
const CI_FRAMES: usize = 3;
/// Frames of the small script.
const FRAMES: usize = 20;
/// The documented tolerances of the emulated devices against the CPU (docs/pipeline.md, "Device roles"): the
/// Adreno and RDNA3 kernels divide as `num * rcp(den)`, so float outputs and float state may differ by this much, and a
/// warp coordinate within rounding of a pixel boundary may pick the neighbouring pixel (uint8 state).
const FLOAT_ATOL: f64 = 5e-3;
const MAX_BYTES_DIFFERING: usize = 8;

struct Case {
    split: Vec<u8>,
    cpu: Vec<u8>,
    gold: PathBuf,
}

/// The transfers of several counters together.
fn sum(c: &[UsbCounts]) -> UsbCounts {
    c.iter().fold(UsbCounts::default(), |a, x| UsbCounts {
        control: a.control + x.control,
        bulk: a.bulk + x.bulk,
        bytes_out: a.bytes_out + x.bytes_out,
        bytes_in: a.bytes_in + x.bytes_in,
    })
}

fn spec(script: &str) -> String {
    format!(
        "{}:build",
        root().join("xtask/models").join(script).display()
    )
}

/// `checked`: run the pre-write checks (the parts' and the whole bundle's); the modeld pipeline's fp32 warp fails
/// them by design (a near-tie pixel; README, docs/pipeline.md), so its comparison is the test's own.
fn compile_case(
    name: &str,
    script: &str,
    frames: usize,
    roles: &[(&str, TargetName)],
    checked: bool,
) -> Case {
    let py = python().expect("the exporter's Python");
    xtask::emu_check::amd_firmware().expect("the Navi31 firmware usb-emu boots with");
    let dir = root().join("target/multi_device").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let gold = pipeline::golden_for(
        &py,
        &dir,
        &spec(script),
        frames,
        pipeline::SEED,
        pipeline::SEED + 1,
    )
    .expect("tinygrad's replay (the inputs of every frame)");
    let mut args = ExportArgs::onnx(PathBuf::new(), TargetName::CpuX86_64, PathBuf::new());
    args.source = Source::Tinygrad(spec(script));
    args.emu_check = checked;
    let roles: Vec<(String, TargetName)> = roles.iter().map(|(r, t)| (r.to_string(), *t)).collect();
    let split_out = dir.join("split.mrt");
    xtask::compile_multi::compile_multi(&py, args.clone(), &roles, &split_out, None)
        .expect("the split compile (its parts' and its own pre-write checks pass)");
    let cpu_out = dir.join("cpu.mrt");
    xtask::compile::compile(&py, args, &cpu_out).expect("the single-target cpu compile");
    Case {
        split: std::fs::read(split_out).unwrap(),
        cpu: std::fs::read(cpu_out).unwrap(),
        gold,
    }
}

fn modeld() -> Option<&'static Case> {
    static C: OnceLock<Option<Case>> = OnceLock::new();
    C.get_or_init(|| {
        python()?;
        Some(compile_case(
            "modeld",
            "modeld_pipeline.py",
            CI_FRAMES,
            &split::ROLES,
            false,
        ))
    })
    .as_ref()
}

fn two_roles() -> Option<&'static Case> {
    static C: OnceLock<Option<Case>> = OnceLock::new();
    C.get_or_init(|| {
        python()?;
        Some(compile_case(
            "two_roles",
            "two_roles.py",
            FRAMES,
            &[
                ("sensor", TargetName::AdrenoA630),
                ("gpu", TargetName::AmdGfx1100),
            ],
            true,
        ))
    })
    .as_ref()
}

fn emulated(names: &[&str]) -> LoadOptions {
    let roles: Vec<_> = names.iter().map(|n| device(n).unwrap()).collect();
    LoadOptions {
        device: roles[0],
        roles,
        ..LoadOptions::default()
    }
}

/// Every frame's outputs and the final state (label, dtype, bytes), plus each frame's report.
struct Run {
    outputs: Vec<Vec<Vec<u8>>>,
    dtypes: Vec<DType>,
    states: Vec<(String, DType, Vec<u8>)>,
    reports: Vec<FrameReport>,
}

fn run(bytes: &[u8], opts: LoadOptions, gold: &std::path::Path) -> Run {
    let bundle = Bundle::parse(bytes).expect("bundle parses");
    let inputs = steps::step_inputs(&bundle, gold, "").expect("frame inputs");
    let mut model: Box<dyn LoadedModel<'_>> = load(bundle.clone(), opts).expect("bundle loads");
    let mut outputs = Vec::new();
    let mut reports = Vec::new();
    for step in &inputs {
        outputs.extend(
            steps::run_steps(model.as_mut(), std::slice::from_ref(step)).expect("frame runs"),
        );
        reports.extend(model.frame_report());
    }
    let dtypes = bundle
        .body()
        .outputs
        .iter()
        .map(|t| t.unwrap().dtype)
        .collect();
    let states = model
        .states()
        .into_iter()
        .map(|s| {
            (
                s.label.to_string(),
                s.dtype,
                model.read_state(s.index).unwrap(),
            )
        })
        .collect();
    Run {
        outputs,
        dtypes,
        states,
        reports,
    }
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Largest |a - b| of f32 bytes (NaN anywhere is infinitely far).
fn max_abs(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len());
    f32s(a)
        .iter()
        .zip(f32s(b))
        .map(|(x, y)| {
            if x.is_nan() || y.is_nan() {
                f64::INFINITY
            } else {
                (*x as f64 - y as f64).abs()
            }
        })
        .fold(0.0, f64::max)
}

/// The split run against the cpu run within the documented tolerances; returns (worst float error, bytes differing).
fn within_tolerance(split: &Run, cpu: &Run) -> (f64, usize) {
    assert_eq!(split.outputs.len(), cpu.outputs.len());
    let mut worst = 0f64;
    for (i, (s, c)) in split.outputs.iter().zip(&cpu.outputs).enumerate() {
        for (k, (a, b)) in s.iter().zip(c).enumerate() {
            assert_eq!(split.dtypes[k], DType::F32, "output {k} is f32");
            let e = max_abs(a, b);
            assert!(
                e <= FLOAT_ATOL,
                "frame {i} output {k}: max abs error {e:.3e} > {FLOAT_ATOL:e}"
            );
            worst = worst.max(e);
        }
    }
    let mut sorted_s = split.states.clone();
    let mut sorted_c = cpu.states.clone();
    sorted_s.sort_by(|a, b| a.0.cmp(&b.0));
    sorted_c.sort_by(|a, b| a.0.cmp(&b.0));
    let labels = |v: &[(String, DType, Vec<u8>)]| v.iter().map(|s| s.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        labels(&sorted_s),
        labels(&sorted_c),
        "the split bundle keeps every state buffer"
    );
    let mut differing = 0;
    for ((label, dt, a), (_, _, b)) in sorted_s.iter().zip(&sorted_c) {
        assert!(
            b.iter().any(|&x| x != 0),
            "{label} of the cpu run is all zero: the comparison proves nothing"
        );
        match dt {
            DType::F32 => {
                let e = max_abs(a, b);
                assert!(
                    e <= FLOAT_ATOL,
                    "{label}: max abs error {e:.3e} > {FLOAT_ATOL:e}"
                );
                worst = worst.max(e);
            }
            _ => {
                let n = a.iter().zip(b).filter(|(x, y)| x != y).count();
                assert!(n <= MAX_BYTES_DIFFERING, "{label}: {n} bytes differ");
                differing += n;
            }
        }
    }
    (worst, differing)
}

#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn modeld_split_on_qcom_emu_and_usb_emu_matches_the_cpu_bundle() {
    let Some(c) = modeld() else { return };
    let b = Bundle::parse(&c.split).unwrap();
    let m = b.multi().expect("a multi-device bundle");
    assert_eq!(m.roles.len(), 2);
    let (warp, part) = b.part(0).unwrap();
    assert_eq!((warp.name, part.body().target.family()), ("warp", "adreno"));
    let (model, part) = b.part(1).unwrap();
    assert_eq!((model.name, part.body().target.family()), ("model", "amd"));
    let split = run(&c.split, emulated(&split::DEVICES), &c.gold);
    let cpu = run(&c.cpu, LoadOptions::on(device("cpu").unwrap()), &c.gold);
    let (worst, bytes) = within_tolerance(&split, &cpu);
    eprintln!("modeld split vs cpu over {CI_FRAMES} frames: max abs {worst:.3e}, {bytes} state bytes differ");
    // One planned crossing per frame: the two queued frames the vision net reads (2 x 6 x 32 x 64 uint8).
    for r in &split.reports {
        assert_eq!(r.copies.len(), 1, "{r:?}");
        let x = &r.copies[0];
        assert_eq!(
            (x.from.as_str(), x.to.as_str(), x.bytes),
            ("warp", "model", 2 * 6 * 32 * 64)
        );
        assert_eq!(r.roles.len(), 2);
        assert!(r.roles.iter().all(|role| role.emulated));
        assert!(r.roles[0].usb.is_none(), "the Adreno is not behind USB");
        let usb = r.roles[1]
            .usb
            .expect("the AMD GPU is behind the USB bridge");
        assert!(
            usb.bytes_out >= x.bytes,
            "the crossing's bytes reach VRAM over USB ({usb:?})"
        );
        // The crossing's own transfers: its upload in the model role's copy-in, counted apart from
        // the other inputs' uploads and from the launch.
        let phases = r.roles[1].phases.clone().expect("phases on the USB device");
        assert_eq!(phases.total(), usb, "the phases add up to the role's frame");
        assert_eq!(phases.per_input.len(), part.body().inputs.len());
        assert_eq!(
            sum(&phases.per_input),
            phases.copy_in,
            "the uploads are the copy-in"
        );
        assert!(
            x.usb_out.is_none(),
            "it leaves the Adreno, not a USB device"
        );
        let onto = x.usb_in.expect("it enters the AMD GPU over USB");
        assert_eq!(onto.tensors, 1, "counted on its own");
        assert!(phases.per_input.contains(&onto.usb));
        assert!(
            onto.usb.bytes_out >= x.bytes && onto.usb.transfers() > 0,
            "its upload carries the crossing ({onto:?})"
        );
        eprintln!(
            "modeld split: crossing {} B onto the model role: {:?}; whole copy-in {:?}; launch {:?}; copy-out {:?}",
            x.bytes, onto.usb, phases.copy_in, phases.launch, phases.copy_out
        );
    }
}

#[test]
fn two_role_script_split_matches_its_cpu_bundle_over_20_frames() {
    let Some(c) = two_roles() else { return };
    let split = run(&c.split, emulated(&["qcom-emu", "usb-emu"]), &c.gold);
    let cpu = run(&c.cpu, LoadOptions::on(device("cpu").unwrap()), &c.gold);
    assert_eq!(split.outputs.len(), FRAMES);
    within_tolerance(&split, &cpu);
    let r = &split.reports[0];
    let moved: Vec<(String, u64)> = r
        .copies
        .iter()
        .map(|x| (x.label.clone(), x.bytes))
        .collect();
    assert_eq!(
        moved,
        [
            ("cross:sensor.x:0".to_string(), 2 * 8 * 16),
            ("cross:sensor.x:1".to_string(), 4)
        ]
    );
    // Both crossings enter the USB role as uploads of its copy-in, each counted on its own.
    let phases = r.roles[1].phases.clone().expect("phases on the USB device");
    assert_eq!(sum(&phases.per_input), phases.copy_in);
    for x in &r.copies {
        let onto = x.usb_in.expect("onto the AMD GPU over USB");
        assert_eq!(onto.tensors, 1);
        assert!(phases.per_input.contains(&onto.usb), "{onto:?}");
        // Its upload carries it, or (a small tensor the driver holds) it issues no transfer and
        // goes out with the launch's commands.
        assert!(
            onto.usb.bytes_out >= x.bytes
                || (onto.usb.transfers() == 0 && phases.launch.bytes_out >= x.bytes),
            "{onto:?} carries {} B (launch {:?})",
            x.bytes,
            phases.launch
        );
        assert!(x.usb_out.is_none());
    }
    let crossing: u64 = r.copies.iter().map(|x| x.bytes).sum();
    assert!(
        phases.copy_in.bytes_out + phases.launch.bytes_out >= crossing,
        "{crossing} crossing bytes in the copy-in {:?} and launch {:?}",
        phases.copy_in,
        phases.launch
    );
    eprintln!(
        "two_roles split: {crossing} B cross onto the gpu role: {:?}; copy-in {:?}; launch {:?}; copy-out {:?}",
        r.copies.iter().map(|x| x.usb_in).collect::<Vec<_>>(), phases.copy_in, phases.launch, phases.copy_out
    );
}

#[test]
fn a_split_onto_two_cpu_roles_equals_the_single_cpu_bundle_bit_for_bit() {
    let Some(c) = two_roles() else { return };
    let py = python().unwrap();
    let dir = root().join("target/multi_device/two_roles_cpu");
    std::fs::create_dir_all(&dir).unwrap();
    let mut args = ExportArgs::onnx(PathBuf::new(), TargetName::CpuX86_64, PathBuf::new());
    args.source = Source::Tinygrad(spec("two_roles.py"));
    let roles = [
        ("sensor".to_string(), TargetName::CpuX86_64),
        ("gpu".to_string(), TargetName::CpuX86_64),
    ];
    let out = dir.join("split-cpu.mrt");
    xtask::compile_multi::compile_multi(&py, args, &roles, &out, None)
        .expect("split onto two CPU roles");
    let bytes = std::fs::read(&out).unwrap();
    let split = run(&bytes, emulated(&["cpu", "cpu"]), &c.gold);
    let cpu = run(&c.cpu, LoadOptions::on(device("cpu").unwrap()), &c.gold);
    assert_eq!(
        split.outputs, cpu.outputs,
        "every frame's outputs, bit for bit"
    );
    let mut s = split.states.clone();
    let mut w = cpu.states.clone();
    s.sort_by(|a, b| a.0.cmp(&b.0));
    w.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(s, w, "the final state, bit for bit");
}

#[test]
fn a_device_list_must_name_one_device_per_role() {
    let Some(c) = two_roles() else { return };
    let b = Bundle::parse(&c.split).unwrap();
    let one = format!(
        "{:#}",
        load(b.clone(), LoadOptions::on(device("qcom-emu").unwrap()))
            .err()
            .unwrap()
    );
    assert!(one.contains("role gpu") && one.contains("amd"), "{one}");
    let three = format!(
        "{:#}",
        load(b.clone(), emulated(&["qcom-emu", "usb-emu", "cpu"]))
            .err()
            .unwrap()
    );
    assert!(
        three.contains("3 devices given but this bundle has 2 device roles ("),
        "{three}"
    );
    let single = Bundle::parse(&c.cpu).unwrap();
    let two = format!(
        "{:#}",
        load(single, emulated(&["cpu", "cpu"])).err().unwrap()
    );
    assert!(two.contains("one target"), "{two}");
}
