//! Hints and wording a new user meets: the selftests accept `--emu` alike and point to it without
//! hardware, `--threads` warns when it cannot do what it says, `bench -i` keeps the defaults of the
//! other inputs, the USB commands report what is really missing, an all-NaN output says so, and
//! counts of one are singular.
mod cli_common;

use cli_common::*;

#[test]
fn qcom_selftest_takes_emu_like_the_dsp_selftest() {
    let out = ok(&modelrt(&["qcom", "selftest", "--emu", "--iters", "1"]));
    assert!(out.contains("KGSL: built-in model"), "{out}");
    assert!(out.contains("PASSED"), "{out}");
}

#[test]
fn dsp_selftest_without_hardware_points_to_emu() {
    let dir = scratch("hint-dsp");
    let root = dir.to_str().unwrap();
    let o = modelrt(&["dsp", "selftest", "--root", root]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.starts_with("error: no cDSP shell found"), "{err}");
    assert!(err.contains("use --emu"), "{err}");
}

#[test]
fn threads_beyond_the_cores_or_on_a_device_without_threads_warn() {
    let dir = scratch("hint-threads");
    let bundle = write(&dir, "copy.mrt", &copy_bundle(host_cpu(), ["y", "w"], &[]));
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let many = (cores + 98).to_string();
    let o = modelrt(&["verify", &bundle, "--threads", &many]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        err.contains(&format!(
            "warning: --threads {many} is more than this machine's {cores} core"
        )),
        "{err}"
    );
    // Within the cores: no warning.
    let o = modelrt(&["verify", &bundle, "--threads", "1"]);
    assert_eq!(text(&o).1, "", "no warning for --threads 1");
    // A device that ignores it says so.
    let hexagon = dsp_selftest();
    let o = modelrt(&[
        "verify",
        hexagon.to_str().unwrap(),
        "--device",
        "dsp-emu",
        "--threads",
        "2",
    ]);
    let (out, err) = text(&o);
    assert!(
        err.contains("warning: --threads sets the cpu device's worker threads; --device dsp-emu does not use it"),
        "{out}{err}"
    );
}

/// A bundle with inputs `a` and `b` (f32 [4]) whose outputs are copies of them, no reference.
fn two_input_bundle() -> Vec<u8> {
    io_bundle(2)
}

/// [`two_input_bundle`] whose run schedule holds only the first `copies` copies.
fn io_bundle(copies: usize) -> Vec<u8> {
    use modelrt_core::bundle::writer::{write_bundle, BufferSpec, BundleSpec};
    use modelrt_core::bundle::{BufRef, BufferKind, Producer, Step, TensorDesc};
    use modelrt_hal::target::DType;
    let bytes = (N * 4) as u64;
    let buf = |label, kind| BufferSpec {
        label,
        size: bytes,
        dtype: DType::F32,
        kind,
        init: None,
    };
    let at = |buffer| BufRef { buffer, offset: 0 };
    let io = |name, buffer| TensorDesc {
        name,
        buffer,
        offset: 0,
        dtype: DType::F32,
        shape: [N as u64].into_iter().collect(),
    };
    write_bundle(&BundleSpec {
        target: host_cpu(),
        producer: Producer {
            tinygrad: "0.14.0",
            tinymesa: None,
            source_sha256: [5; 32],
            dev: "TEST",
            flags: "",
        },
        buffers: vec![
            buf("input:a", BufferKind::Input),
            buf("input:b", BufferKind::Input),
            buf("output:0", BufferKind::Output),
            buf("output:1", BufferKind::Output),
        ],
        kernels: vec![],
        init: vec![],
        run: [
            Step::Copy {
                dst: at(2),
                src: at(0),
                size: bytes,
            },
            Step::Copy {
                dst: at(3),
                src: at(1),
                size: bytes,
            },
        ][..copies]
            .to_vec(),
        inputs: vec![io("a", 0), io("b", 1)],
        outputs: vec![io("ya", 2), io("yb", 3)],
        reference: None,
        index_checks: vec![],
        output_slices: vec![],
        checkpoint: "",
    })
    .unwrap()
}

#[test]
fn bench_with_one_input_keeps_the_default_of_the_others() {
    let dir = scratch("hint-bench-input");
    let bundle = write(&dir, "two.mrt", &two_input_bundle());
    let a = write(
        &dir,
        "a.npy",
        &modelrt_targets::npy::encode(modelrt_hal::target::DType::F32, &[N as u64], &f32_bytes(&X)),
    );
    // Without --steps: the file has the model's shape, `b` stays zeros.
    let out = ok(&modelrt(&[
        "bench",
        &bundle,
        "-i",
        &format!("a={a}"),
        "--iters",
        "2",
        "--warmup",
        "0",
    ]));
    assert!(out.contains("(2 iters, 0 warm-up)"), "{out}");
    // With --steps N the file holds N frames; `b` keeps its default every frame.
    let frames: Vec<f32> = X.iter().chain(X.iter()).copied().collect();
    let a2 = write(
        &dir,
        "a2.npy",
        &modelrt_targets::npy::encode(
            modelrt_hal::target::DType::F32,
            &[2, N as u64],
            &f32_bytes(&frames),
        ),
    );
    let out = ok(&modelrt(&[
        "bench",
        &bundle,
        "-i",
        &format!("a={a2}"),
        "--steps",
        "2",
        "--warmup",
        "0",
    ]));
    assert!(out.contains("2 consecutive frames"), "{out}");
    // The help says so.
    let help = ok(&modelrt(&["bench", "--help"]));
    assert!(help.contains("Inputs not given keep the default"), "{help}");
}

#[test]
fn usb_commands_report_the_missing_bridge_or_directory_first() {
    // No bridge on this machine: auto transport reports the bridge, not the firmware.
    for args in [
        vec!["usb", "boot", "--firmware-dir", "/no-such-firmware"],
        vec!["usb", "copy-bench", "--firmware-dir", "/no-such-firmware"],
    ] {
        let e = one_line_error(&modelrt(&args));
        assert!(e.contains("no ASM24 bridge found"), "{args:?}: {e}");
        assert!(e.contains("--transport emu"), "{args:?}: {e}");
    }
    // A firmware directory that does not exist is called that.
    let e = one_line_error(&modelrt(&[
        "usb",
        "boot",
        "--transport",
        "emu",
        "--firmware-dir",
        "/no-such-firmware",
    ]));
    assert!(
        e.contains("--firmware-dir /no-such-firmware (no such directory)"),
        "{e}"
    );
}

#[test]
fn counts_of_one_are_singular() {
    let dir = scratch("hint-plurals");
    let one = write(&dir, "one.mrt", &io_bundle(1));
    let out = ok(&modelrt(&["info", &one]));
    assert!(
        out.contains("schedule    init: 0 launches, 0 copies; run: 0 launches, 1 copy\n"),
        "{out}"
    );
    assert!(
        out.contains("binaries    no kernel binaries to decode"),
        "{out}"
    );
    let out = ok(&modelrt(&[
        "usb",
        "copy-bench",
        "--bridge-only",
        "--transport",
        "emu",
        "--size",
        "1",
    ]));
    assert!(out.contains("host→device: 1 byte in "), "{out}");
}

#[test]
fn an_all_nan_output_is_summarised_as_all_nan() {
    let dir = scratch("hint-nan");
    let bundle = write(&dir, "copy.mrt", &copy_bundle(host_cpu(), ["y", "w"], &[]));
    let x = write(
        &dir,
        "x.npy",
        &modelrt_targets::npy::encode(
            modelrt_hal::target::DType::F32,
            &[N as u64],
            &f32_bytes(&[f32::NAN; N]),
        ),
    );
    let out = ok(&modelrt(&["run", &bundle, "-i", &format!("x={x}")]));
    assert!(
        out.contains("output y [4] float32: all NaN (4 of 4)  [NaN, NaN, NaN, NaN]"),
        "{out}"
    );
    assert!(!out.contains("min inf"), "{out}");
}
