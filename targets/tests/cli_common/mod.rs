//! Helpers shared by the `modelrt` binary tests (`cli_files`, `cli_devices`, `cli_pipe`): running the
//! binary, scratch directories, and small bundles written with the core bundle writer — a copy-only
//! bundle for any target whose outputs are its input and its weight byte for byte (so the expected
//! files are known without running anything), with output and state names chosen by the test.
#![allow(dead_code)] // each test crate uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use modelrt_core::bundle::writer::{write_bundle, BufferSpec, BundleSpec, ReferenceSpec};
use modelrt_core::bundle::{BufRef, BufferKind, Producer, Step, TensorDesc};
use modelrt_hal::target::{CpuArch, DType, Target};

/// Run `modelrt` with `args` (and `env` set), collecting its output.
pub fn modelrt_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_modelrt"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("modelrt runs")
}

/// Run `modelrt` with `args`.
pub fn modelrt(args: &[&str]) -> Output {
    modelrt_env(args, &[])
}

/// (stdout, stderr) as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Require success; returns stdout.
pub fn ok(o: &Output) -> String {
    let (out, err) = text(o);
    assert!(o.status.success(), "failed: {out}{err}");
    out
}

/// Require exactly one `error:` line and exit status 1; returns it.
pub fn one_line_error(o: &Output) -> String {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(1), "expected exit 1: {out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("error: "), "{err}");
    err
}

/// A fresh, empty scratch directory for test `name`.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("modelrt-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `targets/assets/NAME`.
pub fn asset(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets")
        .join(name)
}

/// The hexagon selftest bundle, `qcom/hexagon/assets/dsp-selftest.mrt` (its family's asset).
pub fn dsp_selftest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../qcom/hexagon/assets/dsp-selftest.mrt")
}

/// The host CPU target.
pub fn host_cpu() -> Target<'static> {
    Target::Cpu {
        arch: if cfg!(target_arch = "aarch64") {
            CpuArch::Aarch64
        } else {
            CpuArch::X86_64
        },
        baseline: "generic",
        features: 0,
    }
}

/// Elements of every tensor of [`copy_bundle`].
pub const N: usize = 4;

/// The input the tests feed ([`copy_bundle`]'s reference input).
pub const X: [f32; N] = [1.5, -2.0, 0.25, 8.0];
/// The weight of [`copy_bundle`].
pub const W: [f32; N] = [10.0, 20.0, 30.0, 40.0];
/// Initial contents of [`copy_bundle`]'s two state buffers.
pub const S0: [f32; N] = [-1.0, -2.0, -3.0, -4.0];
pub const S1: [f32; N] = [7.0, 7.5, 8.0, 8.5];

pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn bytes_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn leak(v: &[f32]) -> &'static [u8] {
    Box::leak(f32_bytes(v).into_boxed_slice())
}

/// A bundle for `target` with no kernels: input `x` (f32 [4]); output `outputs[0]` is a copy of `x`,
/// output `outputs[1]` a copy of the weight [`W`]; `states` (zero to two labels) are state buffers
/// holding [`S0`], [`S1`] that no step changes. With a reference ([`X`] in, `X` and `W` out) so
/// `modelrt verify` runs it.
pub fn copy_bundle(
    target: Target<'static>,
    outputs: [&'static str; 2],
    states: &[&'static str],
) -> Vec<u8> {
    copy_bundle_with(target, outputs, states, true)
}

/// [`copy_bundle`], with or without its embedded reference.
pub fn copy_bundle_with(
    target: Target<'static>,
    outputs: [&'static str; 2],
    states: &[&'static str],
    with_reference: bool,
) -> Vec<u8> {
    let bytes = (N * 4) as u64;
    let buf = |label, kind, init| BufferSpec {
        label,
        size: bytes,
        dtype: DType::F32,
        kind,
        init,
    };
    let copy = |dst: u32, src: u32| Step::Copy {
        dst: BufRef {
            buffer: dst,
            offset: 0,
        },
        src: BufRef {
            buffer: src,
            offset: 0,
        },
        size: bytes,
    };
    let io = |name, buffer| TensorDesc {
        name,
        buffer,
        offset: 0,
        dtype: DType::F32,
        shape: [N as u64].into_iter().collect(),
    };
    let mut buffers = vec![
        buf("input:x", BufferKind::Input, None),
        buf("w", BufferKind::Weight, Some(leak(&W))),
        buf("output:0", BufferKind::Output, None),
        buf("output:1", BufferKind::Output, None),
    ];
    for (label, init) in states.iter().zip([S0, S1]) {
        buffers.push(buf(label, BufferKind::State, Some(leak(&init))));
    }
    let spec = BundleSpec {
        target,
        producer: Producer {
            tinygrad: "0.14.0",
            tinymesa: None,
            source_sha256: [5; 32],
            dev: "TEST",
            flags: "",
        },
        buffers,
        kernels: vec![],
        init: vec![],
        run: vec![copy(2, 0), copy(3, 1)],
        inputs: vec![io("x", 0)],
        outputs: vec![io(outputs[0], 2), io(outputs[1], 3)],
        reference: with_reference.then(|| ReferenceSpec {
            seed: 0,
            atol: 1e-4,
            rtol: 1e-4,
            inputs: vec![leak(&X)],
            outputs: vec![leak(&X), leak(&W)],
        }),
        index_checks: vec![],
        output_slices: vec![],
        checkpoint: "",
    };
    write_bundle(&spec).expect("copy test bundle is valid")
}

/// Write `bytes` as `dir/name` and return the path as a string.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

/// Write the input `.npy` for [`copy_bundle`] into `dir`; returns the `x=FILE` argument.
pub fn input_arg(dir: &Path) -> String {
    let p = write(
        dir,
        "x.npy",
        &modelrt_targets::npy::encode(DType::F32, &[N as u64], &f32_bytes(&X)),
    );
    format!("x={p}")
}

/// The f32 values of an `.npy` file (and its shape).
pub fn read_npy(path: &Path) -> (Vec<u64>, Vec<f32>) {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let a = modelrt_targets::npy::parse(&raw).unwrap();
    assert_eq!(a.dtype, DType::F32);
    (a.shape, bytes_f32(&a.data))
}
