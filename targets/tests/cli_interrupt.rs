//! Ctrl-C on long runs: SIGINT sent to a running `modelrt bench`, `modelrt verify` on an emulator
//! or `modelrt run --steps` stops it at the next step boundary; it prints (and writes) what it
//! measured or computed so far, labelled partial, and exits with status 130. No progress bar is
//! drawn when standard error is not a terminal, and one is when it is.
mod cli_common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use cli_common::*;
use modelrt_hal::target::DType;

/// Start `modelrt args` with piped output.
fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_modelrt"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("modelrt starts")
}

/// Whether process `pid` catches SIGINT (`SigCgt` in /proc/PID/status has bit 1 set).
fn catches_sigint(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & 0x2 != 0)
}

/// Wait until `child` has installed its Ctrl-C handler, let it work for `work`, send it SIGINT and
/// collect its output.
fn interrupt_after(child: Child, work: Duration) -> Output {
    let pid = child.id();
    let start = Instant::now();
    while !catches_sigint(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "modelrt never installed its SIGINT handler"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(work);
    let killed = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    child.wait_with_output().expect("modelrt ends")
}

#[test]
fn bench_interrupted_prints_partial_statistics_and_exits_130() {
    let dir = scratch("interrupt-bench");
    let bundle = write(&dir, "copy.mrt", &copy_bundle(host_cpu(), ["y", "w"], &[]));
    let planned = "50000000";
    let child = spawn(&[
        "bench",
        &bundle,
        "--iters",
        planned,
        "--warmup",
        "0",
        "--threads",
        "1",
    ]);
    let o = interrupt_after(child, Duration::from_millis(300));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}{err}");
    let partial = out
        .lines()
        .find(|l| l.starts_with("partial     interrupted after "))
        .unwrap_or_else(|| panic!("no partial line: {out}"));
    // `partial     interrupted after K iterations of 50000000: ...`, 0 < K < planned.
    let done: u64 = partial
        .trim_start_matches("partial     interrupted after ")
        .split(' ')
        .next()
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("{partial}"));
    assert!((1..50_000_000).contains(&done), "{partial}");
    assert!(partial.contains(&format!(" of {planned}")), "{partial}");
    // The statistics cover exactly the completed iterations.
    assert!(out.contains(&format!("({done} iter")), "{out}");
    assert!(out.contains("step        min "), "{out}");
    // No progress bar without a terminal: stderr is just the one closing line.
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("interrupted: after "), "{err}");
    assert!(err.contains("partial"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_steps_interrupted_writes_the_completed_steps_and_exits_130() {
    let dir = scratch("interrupt-run");
    let bundle = write(&dir, "copy.mrt", &copy_bundle(host_cpu(), ["y", "w"], &[]));
    let steps = 1_000_000usize;
    // Step k's input is [k, -k, 0.5, 8]: each written output row says which step produced it.
    let xs: Vec<f32> = (0..steps)
        .flat_map(|k| [k as f32, -(k as f32), 0.5, 8.0])
        .collect();
    let x = write(
        &dir,
        "x.npy",
        &modelrt_targets::npy::encode(DType::F32, &[steps as u64, N as u64], &f32_bytes(&xs)),
    );
    let out_dir = dir.join("out");
    let child = spawn(&[
        "run",
        &bundle,
        "-i",
        &format!("x={x}"),
        "--steps",
        &steps.to_string(),
        "-o",
        out_dir.to_str().unwrap(),
        "--threads",
        "1",
    ]);
    let o = interrupt_after(child, Duration::from_millis(300));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}{err}");
    assert!(out.starts_with("partial     interrupted after "), "{out}");
    let (shape, y) = read_npy(&Path::new(&out_dir).join("y.npy"));
    let done = shape[0] as usize;
    assert!((1..steps).contains(&done), "{shape:?}");
    assert_eq!(shape, [done as u64, N as u64]);
    // The rows are exactly the inputs of the steps that completed, in order.
    assert_eq!(y, xs[..done * N]);
    assert!(
        out.contains(&format!("steps       {done} of {steps} (partial)")),
        "{out}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("interrupted: after {done} of {steps} steps")),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_terminal_gets_a_progress_bar() {
    // `script` (util-linux) gives modelrt a pseudo-terminal; what it drew is in script's output.
    let dir = scratch("interrupt-tty");
    let bundle = write(&dir, "copy.mrt", &copy_bundle(host_cpu(), ["y", "w"], &[]));
    let cmd = format!(
        "{} bench {bundle} --iters 2000 --warmup 0 --threads 1",
        env!("CARGO_BIN_EXE_modelrt")
    );
    let o = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .expect("script (util-linux) runs: install util-linux");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        out.contains("bench [") && out.contains("/2,000"),
        "no bar: {out}"
    );
    // The statistics follow the cleared bar as without a terminal.
    assert!(out.contains("(2000 iters, 0 warm-up)"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verify_on_an_emulator_interrupted_reports_the_reference_run_and_exits_130() {
    // The dsp-emu reference run takes a few hundred milliseconds under qemu-hexagon: SIGINT sent
    // during it ends verify after that run, before the warm timing run.
    let bundle = dsp_selftest();
    let child = spawn(&["verify", bundle.to_str().unwrap(), "--device", "dsp-emu"]);
    let o = interrupt_after(child, Duration::from_millis(20));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}{err}");
    assert!(out.contains("verify logits: ok"), "{out}");
    assert!(
        out.contains("(partial: interrupted before the warm run)"),
        "{out}"
    );
    assert!(!out.contains("warm run "), "{out}");
    assert_eq!(
        err.trim_end(),
        "interrupted: after the reference run, which matched the embedded reference; the warm timing run was skipped"
    );
}

#[test]
fn usb_copy_bench_bridge_only_interrupted_reports_the_bytes_copied_and_exits_130() {
    // 128 MB each way on the emulated bridge takes over a second even in the test build (making the pattern alone
    // is a few hundred milliseconds): SIGINT 100 ms after the handler is in stops it at a chunk boundary of the
    // host→device copy (the first one if it arrives while the pattern is made).
    let size = 128_000_000u64;
    let child = spawn(&[
        "usb",
        "copy-bench",
        "--bridge-only",
        "--transport",
        "emu",
        "--size",
        &size.to_string(),
    ]);
    let o = interrupt_after(child, Duration::from_millis(100));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}{err}");
    let up = out
        .lines()
        .find_map(|l| l.strip_prefix(&format!("host→device (partial: of {size}): ")))
        .unwrap_or_else(|| panic!("no partial host→device line: {out}"));
    // Stopped before the first window (while the pattern was made) there is no rate to print, and no NaN.
    assert!(!out.contains("NaN"), "{out}");
    let bytes: u64 = if up == "nothing copied" {
        0
    } else {
        up.split(' ').next().unwrap().parse().unwrap()
    };
    // Whole 256 KiB windows only, fewer than asked for.
    assert!(bytes < size && bytes.is_multiple_of(256 << 10), "{out}");
    assert!(
        out.contains("device→host: skipped: interrupted during host→device"),
        "{out}"
    );
    assert!(out.contains("verification: "), "{out}");
    assert_eq!(
        err.trim_end(),
        format!(
            "interrupted: after {bytes} of {size} bytes host→device and 0 device→host; the rates above are partial"
        )
    );
}
