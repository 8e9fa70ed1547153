//! `modelrt usb boot`, the SDMA `usb copy-bench` and `--device usb-emu` against the Navi31 GPU model
//! behind the bridge emulator, with the real firmware files from `cargo xtask firmware`.
use std::path::PathBuf;
use std::process::{Command, Output};

fn modelrt(args: &[&str], fw: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_modelrt"))
        .args(args)
        .env("MODELRT_AMD_FIRMWARE_DIR", fw)
        .output()
        .unwrap()
}

/// `target/amdgpu-firmware`; missing is a failure under CI, else a visible skip.
fn firmware(test: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/amdgpu-firmware");
    if dir.join("psp_13_0_0_sos.bin").exists() {
        return Some(dir);
    }
    let msg = format!(
        "{test}: no firmware in {} (run `cargo xtask firmware`)",
        dir.display()
    );
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false") {
        panic!("{msg}; skips are failures in CI");
    }
    eprintln!("SKIPPED {msg}");
    None
}

/// Run and require success; returns stdout.
fn ok(args: &[&str], fw: &std::path::Path) -> String {
    let o = modelrt(args, fw);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Run and require failure; returns stderr.
fn fails(args: &[&str], fw: &std::path::Path) -> String {
    let o = modelrt(args, fw);
    assert!(!o.status.success());
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn usb_boot_on_the_emulator_reports_versions_firmware_and_transfers() {
    let Some(fw) = firmware("usb_boot") else {
        return;
    };
    let dir = fw.to_str().unwrap();
    let out = ok(
        &["usb", "boot", "--transport", "emu", "--firmware-dir", dir],
        &fw,
    );
    assert!(out.contains("[emulated bridge + Navi31 GPU model"), "{out}");
    for want in [
        "GC      11.0.0",
        "SDMA0   6.0.0",
        "MP0     13.0.0",
        "psp_13_0_0_sos.bin",
        "gc_11_0_0_mec.bin",
        "s emulated,", // ms or s, by magnitude
        "full boot",
        "fini:",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
}

#[test]
fn usb_boot_with_a_missing_firmware_dir_is_one_error_line() {
    let Some(fw) = firmware("usb_boot_missing") else {
        return;
    };
    let args = [
        "usb",
        "boot",
        "--transport",
        "emu",
        "--firmware-dir",
        "/nonexistent-fw",
    ];
    let err = fails(&args, &fw);
    assert!(
        err.contains("--firmware-dir /nonexistent-fw (no such directory)"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn sdma_copy_bench_round_trips_and_labels_emulated_rates() {
    let Some(fw) = firmware("copy_bench") else {
        return;
    };
    let dir = fw.to_str().unwrap();
    let args = [
        "usb",
        "copy-bench",
        "--transport",
        "emu",
        "--size",
        "3000000",
        "--firmware-dir",
        dir,
    ];
    let out = ok(&args, &fw);
    assert!(
        out.contains("host→VRAM: 3000000 bytes") && out.contains("VRAM→host: 3000000 bytes"),
        "{out}"
    );
    assert!(
        out.contains("MB/s (emulated)") && out.contains("per MiB"),
        "{out}"
    );
    assert!(
        out.contains("verification: 3000000 bytes read back identical"),
        "{out}"
    );
}

#[test]
fn usb_devices_refuse_a_cpu_bundle_and_name_the_hardware_path() {
    let Some(fw) = firmware("usb_emu_cpu_bundle") else {
        return;
    };
    let demo = format!(
        "{}/assets/demo-{}.mrt",
        env!("CARGO_MANIFEST_DIR"),
        std::env::consts::ARCH
    );
    for device in ["usb-emu", "usb"] {
        let err = fails(&["verify", &demo, "--device", device], &fw);
        assert!(
            err.contains("this is a cpu bundle") && err.contains("--device cpu"),
            "{err}"
        );
    }
    // Real hardware absent (no bridge on this machine): cli_devices.rs checks that the message
    // names the emulator, with a gfx1100 bundle.
}

/// Whether process `pid` catches SIGINT (`SigCgt` in /proc/PID/status has bit 1 set).
fn catches_sigint(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))
                .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        })
        .is_some_and(|m| m & 0x2 != 0)
}

#[test]
fn sdma_copy_bench_interrupted_reports_the_bytes_copied_as_partial() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let Some(fw) = firmware("copy_bench_interrupt") else {
        return;
    };
    let child = Command::new(env!("CARGO_BIN_EXE_modelrt"))
        .args([
            "usb",
            "copy-bench",
            "--transport",
            "emu",
            "--size",
            "200000000",
        ])
        .env("MODELRT_AMD_FIRMWARE_DIR", &fw)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    while !catches_sigint(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no SIGINT handler"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // Sent as soon as the handler is in place: whether it lands before the first 4 MiB piece or
    // between two, the copy stops at a piece boundary and reports what it moved as partial.
    let killed = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(130), "{out}{err}");
    assert!(out.contains(" (partial: of 200000000) in "), "{out}");
    // What was copied was read back and compared.
    assert!(out.contains("read back identical (partial)"), "{out}");
    assert!(err.starts_with("interrupted: after "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
