//! The `modelrt` binary's model commands, driven as a user would: `demo`, `info`, `verify`, `run` with
//! `.npy` files, `bench`, and every kind of bad input giving one clear line and a non-zero exit.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use modelrt_core::bundle::Bundle;
use modelrt_core::verify::compare;
use modelrt_targets::npy;

fn modelrt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_modelrt"))
        .args(args)
        .output()
        .expect("modelrt runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn host_demo() -> PathBuf {
    let arch = if cfg!(target_arch = "aarch64") {
        "aarch64"
    } else {
        "x86_64"
    };
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("assets/demo-{arch}.mrt"))
}

fn other_demo() -> PathBuf {
    let arch = if cfg!(target_arch = "aarch64") {
        "x86_64"
    } else {
        "aarch64"
    };
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("assets/demo-{arch}.mrt"))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("modelrt-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A failing command prints exactly one `error:` line and exits non-zero.
fn assert_one_line_error(o: &Output, needle: &str) {
    assert!(
        !o.status.success(),
        "expected failure, got success: {}",
        stdout(o)
    );
    let err = stderr(o);
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("error: ") && err.contains(needle), "{err}");
}

#[test]
fn demo_runs_and_verifies() {
    let o = modelrt(&["demo"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("verify features: ok"), "{out}");
    assert!(
        out.contains("verified    outputs match the embedded reference"),
        "{out}"
    );
}

#[test]
fn info_describes_the_bundle() {
    let o = modelrt(&["info", host_demo().to_str().unwrap(), "--verbose"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for needle in [
        "format 2.1",
        "tinygrad 0.14.0",
        "input       img [1x12x128x256] float32",
        "reference   yes",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in {out}");
    }
}

#[test]
fn run_reads_and_writes_npy() {
    let bytes = std::fs::read(host_demo()).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let r = b.body().reference.unwrap();
    let input = b.body().inputs.get(0).unwrap();
    let dir = scratch("run");
    let in_path = dir.join("img.npy");
    std::fs::write(
        &in_path,
        npy::encode(input.dtype, &input.shape, r.inputs.get(0).unwrap().data),
    )
    .unwrap();
    let out_dir = dir.join("out");
    let o = modelrt(&[
        "run",
        host_demo().to_str().unwrap(),
        "--input",
        &format!("img={}", in_path.display()),
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = npy::parse(&std::fs::read(out_dir.join("features.npy")).unwrap()).unwrap();
    let want = b.body().outputs.get(0).unwrap();
    assert_eq!(out.shape.as_slice(), want.shape.as_slice());
    let c = compare(
        out.dtype,
        &out.data,
        r.outputs.get(0).unwrap().data,
        1e-4,
        1e-4,
    );
    assert!(c.ok(), "{c:?}");
}

#[test]
fn bad_inputs_give_one_clear_line() {
    let demo = host_demo();
    let demo = demo.to_str().unwrap();
    let dir = scratch("bad");

    assert_one_line_error(&modelrt(&["run", demo]), "missing input 'img'");
    assert_one_line_error(
        &modelrt(&["run", demo, "-i", "nope=x.npy"]),
        "unknown input 'nope'",
    );
    assert_one_line_error(
        &modelrt(&["run", demo, "-i", "img"]),
        "is not NAME=FILE.npy",
    );

    let wrong_shape = dir.join("shape.npy");
    std::fs::write(
        &wrong_shape,
        npy::encode(
            modelrt_hal::target::DType::F32,
            &[1, 12, 128, 255],
            &vec![0u8; 12 * 128 * 255 * 4],
        ),
    )
    .unwrap();
    assert_one_line_error(
        &modelrt(&["run", demo, "-i", &format!("img={}", wrong_shape.display())]),
        "has shape [1x12x128x255], the model expects [1x12x128x256]",
    );

    let wrong_dtype = dir.join("dtype.npy");
    std::fs::write(
        &wrong_dtype,
        npy::encode(
            modelrt_hal::target::DType::U8,
            &[1, 12, 128, 256],
            &vec![0u8; 12 * 128 * 256],
        ),
    )
    .unwrap();
    assert_one_line_error(
        &modelrt(&["run", demo, "-i", &format!("img={}", wrong_dtype.display())]),
        "has dtype uint8, the model expects float32",
    );

    let not_npy = dir.join("text.npy");
    std::fs::write(&not_npy, b"hello").unwrap();
    assert_one_line_error(
        &modelrt(&["run", demo, "-i", &format!("img={}", not_npy.display())]),
        "not a .npy file",
    );

    assert_one_line_error(
        &modelrt(&["info", "/nonexistent/model.mrt"]),
        "cannot read /nonexistent/model.mrt",
    );

    let bytes = std::fs::read(host_demo()).unwrap();
    let truncated = dir.join("truncated.mrt");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    assert_one_line_error(
        &modelrt(&["verify", truncated.to_str().unwrap()]),
        "truncated bundle",
    );

    let mut flipped = bytes.clone();
    let n = flipped.len();
    flipped[n - 100] ^= 0x40;
    let corrupt = dir.join("corrupt.mrt");
    std::fs::write(&corrupt, &flipped).unwrap();
    assert_one_line_error(
        &modelrt(&["verify", corrupt.to_str().unwrap()]),
        "checksum mismatch",
    );

    // A flipped bit in the header's file-length field is corruption, not a short download.
    let mut header = bytes.clone();
    header[24] ^= 0x01;
    let damaged = dir.join("damaged-header.mrt");
    std::fs::write(&damaged, &header).unwrap();
    assert_one_line_error(
        &modelrt(&["info", damaged.to_str().unwrap()]),
        "bundle header is corrupt (checksum mismatch)",
    );

    assert_one_line_error(
        &modelrt(&["verify", not_npy.to_str().unwrap()]),
        "not a modelrt bundle",
    );
}

#[test]
fn bundle_for_another_cpu_is_refused_at_load() {
    let (other, host) = if cfg!(target_arch = "aarch64") {
        ("x86_64", "aarch64")
    } else {
        ("aarch64", "x86_64")
    };
    let demo = other_demo();
    // Every device choice says what does work: recompile for this host, or the other
    // architecture's build under qemu user emulation — not `--device cpu`, which fails too.
    for device in ["auto", "cpu", "qcom-emu"] {
        let o = modelrt(&["verify", demo.to_str().unwrap(), "--device", device]);
        assert_one_line_error(&o, &format!("compiled for {other} but this host is {host}"));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("--target cpu`, i.e. cpu-{host}")),
            "{device}: {err}"
        );
        assert!(
            err.contains(&format!("under qemu-{other}")),
            "{device}: {err}"
        );
        assert!(!err.contains("use --device cpu"), "{device}: {err}");
    }
}

#[test]
fn bench_reports_step_statistics() {
    let o = modelrt(&[
        "bench",
        host_demo().to_str().unwrap(),
        "--iters",
        "5",
        "--warmup",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("step        min") && out.contains("(5 iters, 1 warm-up)"),
        "{out}"
    );
    assert_one_line_error(
        &modelrt(&["bench", host_demo().to_str().unwrap(), "--iters", "0"]),
        "--iters must be at least 1",
    );
}

/// The host demo with the ELF magic of its first kernel broken and the checksum resealed, so the
/// bundle parses and validates but its kernel binaries do not decode.
fn demo_with_undecodable_kernel() -> PathBuf {
    let mut bytes = std::fs::read(host_demo()).unwrap();
    let at = {
        let b = Bundle::parse(&bytes).unwrap();
        let k = b.body().kernels.get(0).unwrap();
        assert_eq!(&k.binary[..4], b"\x7fELF");
        k.binary.as_ptr() as usize - bytes.as_ptr() as usize
    };
    bytes[at..at + 4].copy_from_slice(b"NOPE");
    modelrt_core::bundle::writer::reseal(&mut bytes);
    let path = scratch("undecodable").join("bad-kernel.mrt");
    std::fs::write(&path, &bytes).unwrap();
    path
}

#[test]
fn info_on_undecodable_kernels_describes_then_exits_1() {
    let bad = demo_with_undecodable_kernel();
    let o = modelrt(&["info", bad.to_str().unwrap()]);
    let out = stdout(&o);
    assert!(
        out.contains("binaries    DOES NOT DECODE: kernel 0"),
        "{out}"
    );
    assert!(out.contains("input       img"), "still describes it: {out}");
    assert_one_line_error(&o, "kernel binaries do not decode for cpu");
}

/// `device` of `modelrt bench --json` with the given extra arguments.
fn bench_device(extra: &[&str]) -> String {
    let demo = host_demo();
    let mut args = vec![
        "bench",
        demo.to_str().unwrap(),
        "--json",
        "--iters",
        "1",
        "--warmup",
        "0",
    ];
    args.extend_from_slice(extra);
    let o = modelrt(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    v["device"]
        .as_str()
        .expect("device is a string")
        .to_string()
}

#[test]
fn threads_0_means_the_kernel_split_capped_by_the_cores() {
    let help = stdout(&modelrt(&["run", "--help"]));
    assert!(
        help.contains("0 = as many as the kernels were split into, capped by this machine's cores"),
        "{help}"
    );
    let bytes = std::fs::read(host_demo()).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let split = b
        .body()
        .kernels
        .iter()
        .map(|k| match k.unwrap().meta {
            modelrt_hal::target::KernelMeta::Cpu(m) => m.threads as usize,
            _ => unreachable!("a CPU bundle"),
        })
        .max()
        .unwrap();
    assert!(split > 1, "the demo is compiled with a thread split");
    // The policy, on machines with more and with fewer cores than the split.
    use modelrt_targets::runner::cpu_threads_for;
    assert_eq!(cpu_threads_for(&b, 0, 64), split, "no more than the split");
    assert_eq!(
        cpu_threads_for(&b, 0, split - 1),
        split - 1,
        "capped by the cores"
    );
    assert_eq!(cpu_threads_for(&b, 3, 64), 3, "an explicit count wins");
    let cores = std::thread::available_parallelism().unwrap().get();
    let want = match split.min(cores) {
        1 => "1 thread".to_string(),
        n => format!("{n} threads"),
    };
    assert_eq!(bench_device(&[]), format!("cpu ({want})"));
    assert_eq!(bench_device(&["--threads", "0"]), format!("cpu ({want})"));
    assert_eq!(bench_device(&["--threads", "3"]), "cpu (3 threads)");
    assert_eq!(bench_device(&["--threads", "1"]), "cpu (1 thread)");
}
