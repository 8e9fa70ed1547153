//! Device choice, driven as a user would: a bundle is checked against `--device` before any device is
//! opened; `--device auto` (and the real devices) name the emulated device that runs a bundle when the
//! hardware is absent; every emulated device's times are labelled as modelled (`bench` text and
//! `--json`); the AMD firmware is found the same way by every command (`--firmware-dir`, then
//! `$MODELRT_AMD_FIRMWARE_DIR`, then `/lib/firmware/amdgpu`), and a miss lists what was tried.
mod cli_common;

use std::path::PathBuf;

use cli_common::*;
use modelrt_hal::target::Target;

const A630: Target<'static> = Target::Adreno {
    chip: 630,
    image: false,
    half: false,
};
const GFX1100: Target<'static> = Target::Amd { gfx: 0x1100 };

/// `target/amdgpu-firmware` from `cargo xtask firmware`; missing is a failure under CI, else a
/// visible skip.
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

#[test]
fn auto_names_the_emulated_device_when_the_hardware_is_absent() {
    let dir = scratch("auto");
    let adreno = write(&dir, "a630.mrt", &copy_bundle(A630, ["y", "w"], &[]));
    let amd = write(&dir, "gfx1100.mrt", &copy_bundle(GFX1100, ["y", "w"], &[]));
    let hexagon = dsp_selftest();
    // No comma device, USB bridge or DSP here.
    for (bundle, emu) in [
        (adreno.as_str(), "--device qcom-emu"),
        (amd.as_str(), "--device usb-emu"),
        (hexagon.to_str().unwrap(), "--device dsp-emu"),
    ] {
        let err = one_line_error(&modelrt(&["verify", bundle]));
        assert!(err.contains(emu), "{bundle}: {err}");
        assert!(
            !err.contains("--transport") && !err.contains("no runtime backend"),
            "{bundle}: {err}"
        );
    }
    // ... and the emulated device it names runs the bundle.
    let out = ok(&modelrt(&["verify", &adreno, "--device", "qcom-emu"]));
    assert!(out.contains("verified"), "{out}");
    // Its times are labelled as modelled.
    let timing = out.lines().find(|l| l.starts_with("timing")).unwrap();
    assert!(
        timing.ends_with("emulated: modelled times, not hardware measurements"),
        "{timing}"
    );
}

#[test]
fn the_bundle_target_is_checked_before_the_device() {
    let dir = scratch("mismatch");
    let cpu = write(&dir, "cpu.mrt", &copy_bundle(host_cpu(), ["y", "w"], &[]));
    let input = input_arg(&dir);
    // No firmware anywhere: the target mismatch is what is reported, not the firmware.
    for device in ["usb-emu", "usb", "qcom-emu", "dsp-emu"] {
        let o = modelrt_env(
            &["run", &cpu, "-i", &input, "--device", device],
            &[("MODELRT_AMD_FIRMWARE_DIR", "/nonexistent-fw")],
        );
        let err = one_line_error(&o);
        assert!(
            err.contains("this is a cpu bundle") && err.contains("--device cpu"),
            "{device}: {err}"
        );
        assert!(!err.contains("firmware"), "{device}: {err}");
    }
}

#[test]
fn bench_labels_every_emulated_device() {
    let dir = scratch("emulated");
    let adreno = write(&dir, "a630.mrt", &copy_bundle(A630, ["y", "w"], &[]));
    let hexagon = dsp_selftest();
    let cases = [
        (adreno.as_str(), "qcom-emu"),
        (hexagon.to_str().unwrap(), "dsp-emu"),
    ];
    for (bundle, device) in cases {
        let args = [
            "bench", bundle, "--device", device, "--iters", "1", "--warmup", "0",
        ];
        let json = ok(&modelrt(&[&args[..], &["--json"]].concat()));
        let doc: serde_json::Value = serde_json::from_str(json.trim()).expect("one JSON object");
        assert_eq!(
            doc["emulated"],
            serde_json::Value::Bool(true),
            "{device}: {json}"
        );
        let out = ok(&modelrt(&args));
        assert!(
            out.lines().any(|l| l.starts_with("note        emulated:")
                && l.contains("not hardware measurements")),
            "{device}: {out}"
        );
    }
    // The selftest on the KGSL model labels its times too.
    let out = ok(&modelrt(&[
        "qcom", "selftest", "--kgsl", "emu", "--iters", "1",
    ]));
    assert!(
        out.contains("note: emulated: the times above are the KGSL model's"),
        "{out}"
    );
    // The CPU is measured, not modelled.
    let cpu = write(&dir, "cpu.mrt", &copy_bundle(host_cpu(), ["y", "w"], &[]));
    let json = ok(&modelrt(&["bench", &cpu, "--iters", "1", "--json"]));
    let doc: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(doc["emulated"], serde_json::Value::Bool(false), "{json}");
}

#[test]
fn a_missing_firmware_lists_what_was_tried() {
    let Some(fw) = firmware("missing_firmware") else {
        return;
    };
    let dir = scratch("fw-missing");
    let amd = write(&dir, "gfx1100.mrt", &copy_bundle(GFX1100, ["y", "w"], &[]));
    // $MODELRT_AMD_FIRMWARE_DIR names an empty directory; run from a directory with no target/.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_modelrt"))
        .args(["verify", &amd, "--device", "usb-emu"])
        .env("MODELRT_AMD_FIRMWARE_DIR", &dir)
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = one_line_error(&o);
    for want in [
        "--firmware-dir (not given)",
        &format!(
            "$MODELRT_AMD_FIRMWARE_DIR {} (no psp_13_0_0_sos.bin)",
            dir.display()
        ),
        // This checkout has `cargo xtask firmware`'s copy: the error points at it.
        "a copy from `cargo xtask firmware` is in",
        "pass --firmware-dir",
    ] {
        assert!(err.contains(want), "missing {want:?} in {err}");
    }
    // The flag wins over the environment, for every command that boots the GPU.
    let fw = fw.to_str().unwrap();
    let env = [("MODELRT_AMD_FIRMWARE_DIR", "/nonexistent-fw")];
    let out = ok(&modelrt_env(
        &["verify", &amd, "--device", "usb-emu", "--firmware-dir", fw],
        &env,
    ));
    assert!(out.contains("verified"), "{out}");
    let out = ok(&modelrt_env(
        &["usb", "boot", "--transport", "emu", "--firmware-dir", fw],
        &env,
    ));
    assert!(out.contains("full boot"), "{out}");
    let err = one_line_error(&modelrt_env(&["usb", "boot", "--transport", "emu"], &env));
    assert!(
        err.contains("$MODELRT_AMD_FIRMWARE_DIR /nonexistent-fw (no such directory)"),
        "{err}"
    );
}

#[test]
fn usb_commands_honour_the_firmware_environment() {
    let Some(fw) = firmware("usb_boot_env") else {
        return;
    };
    let env = [("MODELRT_AMD_FIRMWARE_DIR", fw.to_str().unwrap())];
    let out = ok(&modelrt_env(&["usb", "boot", "--transport", "emu"], &env));
    assert!(out.contains("full boot"), "{out}");
    let out = ok(&modelrt_env(
        &["usb", "copy-bench", "--transport", "emu", "--size", "65536"],
        &env,
    ));
    assert!(
        out.contains("verification: 65536 bytes read back identical"),
        "{out}"
    );
}
