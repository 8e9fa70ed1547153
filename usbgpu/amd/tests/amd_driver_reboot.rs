//! Opening a GPU that an earlier session already (partly) booted (docs/hw/amd-driver.md §4 steps 3,
//! 4 and 10), on the SAME Navi31 model instance, with `BootOptions::force_reset = false` (the
//! library's choice; the CLI forces a full boot):
//! * a session dropped without `fini` leaves `SCRATCH_REG6 = 1`: the next open must not reuse the
//!   firmware, it mode-1 resets the running sOS/SMU and boots fully;
//! * a boot that failed mid-way (firmware load rejected after the sOS came up) leaves no "booted"
//!   marker but a live sOS: the next open resets and boots fully;
//! * a session ended with `fini` (`SCRATCH_REG6 = 0`): the next open reuses the running firmware
//!   (partial boot: no PSP/SMU steps, no reset).
//!
//! Each open ends in a working GPU: a copy larger than the BAR0 limit round-trips over SDMA and is
//! checked in the model's own VRAM.
mod amd_driver_support;
use amd_driver_support::*;
use modelrt_amd::assembly::with_model_errors;
use modelrt_amd::boot::{Am, BootOptions, BOOTED_MAGIC};
use modelrt_amd::bus::AccessKind;
use modelrt_amd::device::AmdDevice;
use modelrt_amd::emu::navi31_gpu::Navi31Model;
use modelrt_amd::error::AmdError;
use modelrt_asm24::counting::Counting;
use modelrt_asm24::Bridge;
use modelrt_hal::device::Device;
use std::path::Path;

/// Open and boot over a fresh bridge emulator in front of `gpu`, tracing every register access.
fn open(gpu: &Navi31Model, dir: &Path) -> Result<Am<T>, AmdError> {
    let opts = BootOptions {
        force_reset: false,
        trace: true,
    };
    Am::open(
        Bridge::new(Counting::new(gpu.bridge_emulator())),
        dir,
        &opts,
        |bus| bus.bridge().transport().counts(),
    )
    .map_err(|e| with_model_errors(e, Some(gpu)))
}

/// What the open did, from the driver's register trace and its report.
struct Seen {
    partial: bool,
    mode1_reset: bool,
    psp_bootloader: bool,
    steps: Vec<&'static str>,
    booted_marker: bool,
}

fn seen(am: &mut Am<T>) -> Seen {
    let trace = am.bus.take_trace();
    let wrote = |reg: &str, value: Option<u32>| {
        trace.iter().any(|a| {
            a.kind == AccessKind::Write && a.reg == reg && value.is_none_or(|v| a.value == v)
        })
    };
    Seen {
        partial: am.report.partial,
        // The mode-1 reset is debug message 2 on the SMU's debug mailbox.
        mode1_reset: wrote("MP1_SMN_C2PMSG_75", Some(2)),
        // The sOS components are handed to the bootloader through C2PMSG_35.
        psp_bootloader: wrote("MP0_SMN_C2PMSG_35", None),
        steps: am.report.steps.iter().map(|(s, _)| *s).collect(),
        booted_marker: wrote("SCRATCH_REG7", Some(BOOTED_MAGIC)),
    }
}

/// The opened GPU works: an SDMA copy (> 4 MiB, BAR_COPY_MAX) round-trips and lands in the model's VRAM.
fn assert_works(gpu: &Navi31Model, am: Am<T>, seed: u64) {
    let mut dev = AmdDevice::new(am, Box::new(|| 0)).expect("device");
    dev.alloc_arena(8 << 20).unwrap();
    let data = pattern((4 << 20) + 4097, seed);
    dev.upload(0, &data).unwrap();
    let pa = dev.arena_va().unwrap() - modelrt_amd::mem::VA_BASE;
    let mut model = vec![0u8; data.len()];
    gpu.vram_read(pa, &mut model);
    assert!(model == data, "VRAM differs after upload");
    let mut back = vec![0u8; data.len()];
    dev.download(0, &mut back).unwrap();
    assert!(back == data, "download differs");
    assert!(gpu.take_errors().is_empty(), "{:?}", gpu.take_errors());
}

fn assert_full_boot_with_reset(s: &Seen, what: &str) {
    assert!(!s.partial, "{what}: partial boot taken");
    assert!(
        s.mode1_reset,
        "{what}: no mode-1 reset of the running firmware"
    );
    assert!(s.psp_bootloader, "{what}: the sOS was not reloaded");
    for step in ["SOC", "PSP", "SMU", "GFX", "SDMA", "queues"] {
        assert!(
            s.steps.contains(&step),
            "{what}: no {step} step in {:?}",
            s.steps
        );
    }
    assert!(s.booted_marker, "{what}: booted marker not written");
}

#[test]
fn reopen_after_drop_without_fini_resets_and_boots_fully() {
    let Some(dir) = firmware_dir("reopen_after_drop_without_fini") else {
        return;
    };
    let gpu = Navi31Model::new(Default::default());
    let mut first = open(&gpu, &dir).unwrap_or_else(|e| panic!("first boot: {e}"));
    let s = seen(&mut first);
    // A cold GPU: nothing to reset.
    assert!(
        !s.partial && !s.mode1_reset && s.psp_bootloader,
        "cold boot"
    );
    drop(first); // the process "dies": no fini, SCRATCH_REG6 stays 1
    let mut second = open(&gpu, &dir).unwrap_or_else(|e| panic!("second boot: {e}"));
    let s = seen(&mut second);
    assert_full_boot_with_reset(&s, "re-open after drop");
    assert_works(&gpu, second, 11);
}

#[test]
fn reopen_after_a_boot_that_failed_midway_resets_and_recovers() {
    let Some(dir) = firmware_dir("reopen_after_failed_boot") else {
        return;
    };
    let gpu = Navi31Model::new(Default::default());
    // The PSP rejects the SDMA image: the sOS and the SMU are already up, the boot stops there.
    gpu.faults(|f| f.reject_fw_type = Some(71));
    let e = match open(&gpu, &dir) {
        Ok(_) => panic!("boot succeeded despite the rejected firmware"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("PSP firmware load"), "{e}");
    gpu.faults(|f| f.reject_fw_type = None);
    let _ = gpu.take_errors();
    let mut am = open(&gpu, &dir).unwrap_or_else(|e| panic!("boot after the fault: {e}"));
    let s = seen(&mut am);
    assert_full_boot_with_reset(&s, "re-open after failed boot");
    assert_works(&gpu, am, 12);
}

#[test]
fn reopen_after_fini_reuses_the_running_firmware() {
    let Some(dir) = firmware_dir("reopen_after_fini") else {
        return;
    };
    let gpu = Navi31Model::new(Default::default());
    let mut first = open(&gpu, &dir).unwrap_or_else(|e| panic!("first boot: {e}"));
    first.fini().unwrap();
    drop(first);
    let mut second = open(&gpu, &dir).unwrap_or_else(|e| panic!("boot after fini: {e}"));
    let s = seen(&mut second);
    assert!(s.partial, "partial boot not taken after a clean fini");
    assert!(
        !s.mode1_reset,
        "firmware reset although the session was finalised"
    );
    assert!(!s.psp_bootloader, "sOS reloaded although it was running");
    for step in ["SOC", "PSP", "SMU"] {
        assert!(!s.steps.contains(&step), "{step} step ran: {:?}", s.steps);
    }
    assert!(s.steps.contains(&"GFX") && s.steps.contains(&"queues"));
    assert!(s.booted_marker);
    assert_works(&gpu, second, 13);
    // And a forced reset (the CLI's default) still boots fully from that state.
    let mut third = Am::open(
        Bridge::new(Counting::new(gpu.bridge_emulator())),
        &dir,
        &BootOptions {
            force_reset: true,
            trace: true,
        },
        |bus| bus.bridge().transport().counts(),
    )
    .unwrap_or_else(|e| panic!("forced boot: {}", with_model_errors(e, Some(&gpu))));
    let s = seen(&mut third);
    assert_full_boot_with_reset(&s, "forced re-open");
    assert_works(&gpu, third, 14);
}
