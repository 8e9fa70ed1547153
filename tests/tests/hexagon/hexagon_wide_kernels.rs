//! Regression: a graph whose fused kernel reads more buffers than one FastRPC launch carries (at most 15,
//! docs/hw/fastrpc.md §3) compiles for `hexagon-v65` and runs on dsp-emu. The graph is twelve small Gemm heads on one
//! input concatenated into one output (`xtask/exporter/tools/dsp_models.py --heads 12`, a driver-monitoring head in
//! miniature): for `cpu-x86_64` tinygrad fuses it into one kernel of more than 15 buffers (tinygrad's CPU limit is
//! 31), for `hexagon-v65` the exporter pins tinygrad's own `MAX_KERNEL_BUFFERS=15` so the schedule splits it.
//! Checked: the compile's pre-write check ran on dsp-emu against onnxruntime, every hexagon kernel has at most 15
//! buffers, the cpu bundle matches onnxruntime, dsp-emu and cpu agree; the same graph compiled for `adreno-a630`
//! (run on qcom-emu, the KGSL model with the IR3 interpreter) and `amd-gfx1100` (run on usb-emu, the Navi31 model
//! with the RDNA3 interpreter) matches onnxruntime too, so all four targets agree; and the QDQ (uint8) version of the
//! same heads passes the pre-write check within the quantised tolerance.
//!
//! Needs the exporter's Python, clang-19 and qemu-hexagon-static >= 8 (`cargo xtask setup`) and, for usb-emu, the
//! Navi31 firmware; a missing one is a visible skip, and a failure under CI. Shared helpers: `modelrt_tests::hexagon`;
//! the adreno and amd bundles go through the per-process compile cache (`modelrt_tests::compile_args`) without
//! their own pre-write check, since the test runs them on the same device models itself.
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use modelrt_amd::platform::{firmware_dir, set_fallback_firmware_dir, FIRMWARE_ENV};
use modelrt_core::bundle::Bundle;
use modelrt_hexagon::device::MODEL_LIBRARY;
use modelrt_targets::runner::{load, DeviceChoice, LoadOptions};
use modelrt_tests::hexagon::{dir, f32s, max_abs, tools};
use modelrt_tests::{compile_args, reference, root, skip};
use xtask::exporter::ExportArgs;

/// Buffers one FastRPC launch carries: a 4-bit count in the scalars word (docs/hw/fastrpc.md §3).
const LAUNCH_MAX_BUFFERS: usize = 15;

/// `dsp_models.py --heads 12` into `target/e2e/hexagon/heads`, once per test process: (float.onnx, qdq.onnx).
fn heads(py: &Path) -> &'static (PathBuf, PathBuf) {
    static M: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    M.get_or_init(|| {
        let out = dir().join("heads");
        let ok = xtask::exporter_python::command(py)
            .arg(xtask::exporter_python::tool("dsp_models.py"))
            .arg("--out")
            .arg(&out)
            .args(["--heads", "12"])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tools/dsp_models.py --heads failed");
        (out.join("float.onnx"), out.join("qdq.onnx"))
    })
}

/// `cargo xtask compile` of `onnx` for `target` with the reference embedded: the bundle bytes and the check that ran.
fn compile(
    py: &Path,
    onnx: &Path,
    target: &str,
    tag: &str,
) -> (Vec<u8>, Option<xtask::emu_check::EmuCheck>) {
    let mut args = ExportArgs::onnx(onnx, target.parse().expect("a target name"), PathBuf::new());
    args.reference = true;
    let out = dir().join(format!("heads-{tag}.mrt"));
    let report = xtask::compile::compile(py, args, &out)
        .unwrap_or_else(|e| panic!("compile of {} for {target}: {e:#}", onnx.display()));
    (std::fs::read(&out).unwrap(), report.emu_check)
}

/// The widest kernel of a bundle (parameters = buffers; these kernels take no scalars), the model library excluded.
fn widest_kernel(b: &Bundle) -> usize {
    b.body()
        .kernels
        .iter()
        .map(Result::unwrap)
        .filter(|k| k.name != MODEL_LIBRARY)
        .map(|k| k.params.len())
        .max()
        .unwrap()
}

/// The Navi31 firmware usb-emu boots with, or `None` after a recorded skip (a failure under CI).
fn amd_firmware() -> Option<()> {
    const PROBE: &str = "psp_13_0_0_sos.bin";
    if !firmware_dir().join(PROBE).exists() && std::env::var_os(FIRMWARE_ENV).is_none() {
        let ours = root().join("target/amdgpu-firmware");
        if ours.join(PROBE).exists() {
            set_fallback_firmware_dir(ours);
        }
    }
    skip::require(
        firmware_dir().join(PROBE).exists().then_some(()),
        "no Navi31 firmware (set MODELRT_AMD_FIRMWARE_DIR or run `cargo xtask firmware`)",
    )
}

/// The heads graph for a GPU `target`, with the reference embedded, through the tests' compile cache; the
/// pre-write check is off because the caller runs the bundle on the same device model.
fn compile_gpu(py: &Path, onnx: &Path, target: &str) -> Vec<u8> {
    let mut args = ExportArgs::onnx(onnx, target.parse().expect("a target name"), PathBuf::new());
    args.reference = true;
    args.emu_check = false;
    std::fs::read(compile_args(py, args, "-heads")).unwrap()
}

fn run_on(bytes: &[u8], device: DeviceChoice, x: &[u8], out_len: usize) -> Vec<f32> {
    let mut m = load(
        Bundle::parse(bytes).unwrap(),
        LoadOptions {
            device,
            threads: 0,
            ..Default::default()
        },
    )
    .expect("the bundle loads");
    let mut y = vec![0u8; out_len];
    m.run(&[x], &mut [y.as_mut_slice()]).expect("one step runs");
    f32s(&y)
}

#[test]
fn concat_of_twelve_gemm_heads_runs_on_dsp_emu_like_cpu_and_onnxruntime() {
    let Some(py) = tools() else { return };
    let float = &heads(&py).0;
    // cpu: the graph really makes a kernel wider than a FastRPC launch
    let (cpu, cpu_check) = compile(&py, float, "cpu-x86_64", "cpu");
    assert!(cpu_check.is_none(), "cpu has no emulated pre-write check");
    let cb = Bundle::parse(&cpu).unwrap();
    let wide = widest_kernel(&cb);
    assert!(
        wide > LAUNCH_MAX_BUFFERS,
        "the heads graph must fuse into a kernel of more than {LAUNCH_MAX_BUFFERS} buffers on cpu (widest {wide})"
    );
    let (ins, ort, _, _) = reference(&cpu);
    let ort = f32s(&ort[0]);
    assert_eq!(ort.len(), 24);
    let on_cpu = run_on(
        &cpu,
        modelrt_targets::runner::device("cpu").unwrap(),
        &ins[0],
        ort.len() * 4,
    );
    let err = max_abs(&on_cpu, &ort);
    assert!(err <= 1e-5, "cpu vs onnxruntime: max abs {err}");
    assert!(
        ort.iter().any(|&v| v > 0.0) && ort.contains(&0.0),
        "the heads' ReLU is exercised"
    );

    // hexagon: split by tinygrad under the launch limit, checked on dsp-emu before the bundle is written
    let (dsp, check) = compile(&py, float, "hexagon-v65", "dsp");
    let check = check.expect("the pre-write check ran");
    assert_eq!(check.device, "dsp-emu");
    assert!(
        check.max_abs <= 1e-5,
        "pre-write check: max abs {:e}",
        check.max_abs
    );
    let db = Bundle::parse(&dsp).unwrap();
    let wide = widest_kernel(&db);
    assert!(
        wide <= LAUNCH_MAX_BUFFERS,
        "a hexagon kernel has {wide} buffers"
    );
    assert!(
        db.body()
            .producer
            .flags
            .split(' ')
            .any(|f| f == format!("MAX_KERNEL_BUFFERS={LAUNCH_MAX_BUFFERS}")),
        "the limit is recorded in the producer flags: {}",
        db.body().producer.flags
    );
    let (dins, _, _, _) = reference(&dsp);
    assert_eq!(dins, ins, "same seeded inputs for both targets");
    let on_dsp = run_on(
        &dsp,
        modelrt_targets::runner::device("dsp-emu").unwrap(),
        &ins[0],
        ort.len() * 4,
    );
    let err = max_abs(&on_dsp, &ort);
    assert!(err <= 1e-5, "dsp-emu vs onnxruntime: max abs {err}");
    let err = max_abs(&on_dsp, &on_cpu);
    assert!(err <= 1e-5, "dsp-emu vs cpu: max abs {err}");
}

#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn the_heads_graph_matches_onnxruntime_on_qcom_emu_and_usb_emu_too() {
    let Some(py) = tools() else { return };
    let Some(()) = amd_firmware() else { return };
    let float = &heads(&py).0;
    let mut first_inputs: Option<Vec<Vec<u8>>> = None;
    for (target, device) in [
        (
            "adreno-a630",
            modelrt_targets::runner::device("qcom-emu").unwrap(),
        ),
        (
            "amd-gfx1100",
            modelrt_targets::runner::device("usb-emu").unwrap(),
        ),
    ] {
        let bytes = compile_gpu(&py, float, target);
        // the exporter's seeded inputs and onnxruntime's outputs for them, embedded by --reference
        let (ins, ort, _, _) = reference(&bytes);
        assert_eq!(
            first_inputs.get_or_insert_with(|| ins.clone()),
            &ins,
            "{target}: same seeded inputs for every target"
        );
        let ort = f32s(&ort[0]);
        assert_eq!(ort.len(), 24, "{target}: one 24-wide output");
        let got = run_on(&bytes, device, &ins[0], ort.len() * 4);
        let err = max_abs(&got, &ort);
        assert!(
            err <= 1e-5,
            "{target} on {}: max abs {err} vs onnxruntime",
            device.name()
        );
        eprintln!(
            "heads graph, {target} on {}: max abs {err:e} vs onnxruntime",
            device.name()
        );
    }
}

#[test]
fn quantised_heads_pass_the_dsp_emu_check() {
    let Some(py) = tools() else { return };
    let qdq = &heads(&py).1;
    let (dsp, check) = compile(&py, qdq, "hexagon-v65", "qdq");
    let check = check.expect("the pre-write check ran");
    assert_eq!(check.device, "dsp-emu");
    let b = Bundle::parse(&dsp).unwrap();
    assert!(widest_kernel(&b) <= LAUNCH_MAX_BUFFERS);
    // the check compares with onnxruntime within the quantised tolerance the bundle records
    let (ins, ort, atol, _) = reference(&dsp);
    let ort = f32s(&ort[0]);
    let got = run_on(
        &dsp,
        modelrt_targets::runner::device("dsp-emu").unwrap(),
        &ins[0],
        ort.len() * 4,
    );
    let err = max_abs(&got, &ort);
    assert!(
        err <= atol,
        "dsp-emu vs onnxruntime: max abs {err} (atol {atol})"
    );
    eprintln!(
        "QDQ heads on dsp-emu: max abs {err} vs onnxruntime (atol {atol}), check {:.3} s",
        check.seconds
    );
}
