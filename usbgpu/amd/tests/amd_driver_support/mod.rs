//! Shared setup of the AM driver tests: the Navi31 GPU model behind the bridge emulator, the real
//! firmware files from `cargo xtask firmware`, and a booted driver.
#![allow(dead_code)]
use modelrt_amd::boot::{Am, BootOptions};
use modelrt_amd::emu::navi31_gpu::{GpuConfig, Navi31Model};
use modelrt_asm24::counting::Counting;
use modelrt_asm24::emu::bridge::{BridgeEmulator, EmuHandle};
use modelrt_asm24::Bridge;
use std::path::PathBuf;

/// The transport the tests drive: the emulator behind a transfer counter.
pub type T = Counting<BridgeEmulator>;

/// `target/amdgpu-firmware` (filled by `cargo xtask firmware`). Missing: a loud failure when `CI`
/// is set, else a visible skip (`None`).
pub fn firmware_dir(test: &str) -> Option<PathBuf> {
    // The workspace root is the ancestor holding Cargo.lock: this file is built into
    // usbgpu/amd's tests and into tests/'s `amd` binary.
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = manifest
        .ancestors()
        .find(|d| d.join("Cargo.lock").exists())
        .unwrap_or(&manifest);
    let dir = root.join("target/amdgpu-firmware");
    if dir.join("psp_13_0_0_sos.bin").exists() {
        return Some(dir);
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    let msg = format!(
        "{test}: firmware blobs missing in {} (run `cargo xtask firmware`)",
        dir.display()
    );
    if ci {
        panic!("{msg}; skips are failures in CI");
    }
    eprintln!("SKIPPED {msg}");
    None
}

/// A fresh GPU model and an emulator with it behind the bridge.
pub fn gpu() -> (Navi31Model, BridgeEmulator) {
    gpu_with(GpuConfig::default())
}

/// As [`gpu`] with a configuration (faults that act at power-on go here).
pub fn gpu_with(config: GpuConfig) -> (Navi31Model, BridgeEmulator) {
    let gpu = Navi31Model::new(config);
    let emu = gpu.bridge_emulator();
    (gpu, emu)
}

/// Boot the driver against `emu`.
pub fn boot(
    emu: BridgeEmulator,
    dir: &std::path::Path,
) -> Result<(Am<T>, EmuHandle), modelrt_amd::error::AmdError> {
    let handle = emu.handle();
    let am = Am::open(
        Bridge::new(Counting::new(emu)),
        dir,
        &BootOptions::default(),
        |bus| bus.bridge().transport().counts(),
    )?;
    Ok((am, handle))
}

/// A booted device over the model, with the emulated clock as its clock.
pub fn device(
    dir: &std::path::Path,
) -> (Navi31Model, modelrt_amd::device::AmdDevice<T>, EmuHandle) {
    let (gpu, emu) = gpu();
    let (am, handle) = match boot(emu, dir) {
        Ok(x) => x,
        Err(e) => panic!("boot failed: {e}; model errors: {:?}", gpu.take_errors()),
    };
    let h = handle.clone();
    let mut dev =
        modelrt_amd::device::AmdDevice::new(am, Box::new(move || h.clock_ns())).expect("device");
    let m = gpu.clone();
    dev.set_diagnosis(Box::new(move || {
        let seen = m.take_errors();
        (!seen.is_empty()).then(|| format!("{seen:?}"))
    }));
    (gpu, dev, handle)
}

/// Deterministic pseudo-random bytes (xorshift), independent of the code under test.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
