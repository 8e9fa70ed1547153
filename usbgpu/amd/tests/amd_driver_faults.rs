//! Faults injected into the GPU model, the bridge emulator and the firmware directory end in one
//! clear error naming the step and the register (or file), within the bounded poll limits — never a
//! hang, never outputs presented as computed.
mod amd_driver_support;
use amd_driver_support::*;
use modelrt_amd::assembly::with_model_errors;
use modelrt_amd::emu::navi31_gpu::Engine;
use modelrt_hal::device::{Device, Queue};
use std::time::Instant;

fn boot_error(
    dir: &std::path::Path,
    fault: impl FnOnce(&mut modelrt_amd::emu::navi31_gpu::GpuFaults),
) -> String {
    let mut config = modelrt_amd::emu::navi31_gpu::GpuConfig::default();
    fault(&mut config.faults);
    let (gpu, emu) = gpu_with(config);
    let t = Instant::now();
    let e = match boot(emu, dir) {
        Ok(_) => panic!("boot succeeded despite the fault"),
        Err(e) => with_model_errors(e, Some(&gpu)).to_string(),
    };
    assert!(
        t.elapsed().as_secs() < 60,
        "fault took {:?} of wall time",
        t.elapsed()
    );
    e
}

#[test]
fn psp_that_never_answers_times_out_naming_the_mailbox() {
    let Some(dir) = firmware_dir("psp_timeout") else {
        return;
    };
    let e = boot_error(&dir, |f| f.psp_silent = true);
    assert!(
        e.contains("PSP bootloader")
            && e.contains("MP0_SMN_C2PMSG_35")
            && e.contains("timed out after 10000 ms"),
        "{e}"
    );
}

#[test]
fn rejected_firmware_names_the_command_and_type() {
    let Some(dir) = firmware_dir("fw_rejected") else {
        return;
    };
    let e = boot_error(&dir, |f| f.reject_fw_type = Some(71));
    assert!(
        e.contains("PSP firmware load")
            && e.contains("failed with status 0x2")
            && e.contains("firmware type 71 rejected"),
        "{e}"
    );
}

#[test]
fn silent_smu_times_out_on_its_response_register() {
    let Some(dir) = firmware_dir("smu_timeout") else {
        return;
    };
    let e = boot_error(&dir, |f| f.smu_silent = true);
    assert!(
        e.contains("SMU init") && e.contains("MP1_SMN_C2PMSG_90"),
        "{e}"
    );
}

#[test]
fn corrupt_discovery_table_is_refused() {
    let Some(dir) = firmware_dir("corrupt_discovery") else {
        return;
    };
    let e = boot_error(&dir, |f| f.corrupt_discovery = true);
    assert!(e.contains("IP discovery") && e.contains("signature"), "{e}");
}

#[test]
fn missing_and_malformed_firmware_files_are_named() {
    let Some(dir) = firmware_dir("firmware_files") else {
        return;
    };
    let tmp = std::env::temp_dir().join(format!("amd_driver_fw_{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    // Missing: an empty directory.
    let (_gpu, emu) = gpu();
    let e = boot(emu, &tmp).err().unwrap().to_string();
    assert!(
        e.contains("psp_13_0_0_sos.bin") && e.contains("No such file"),
        "{e}"
    );
    // Malformed: every file present, the SMU image truncated to its first 100 bytes.
    for f in std::fs::read_dir(&dir).unwrap() {
        let p = f.unwrap().path();
        if !p.is_file() {
            continue;
        }
        std::fs::copy(&p, tmp.join(p.file_name().unwrap())).unwrap();
    }
    let smu = std::fs::read(dir.join("smu_13_0_0.bin")).unwrap();
    std::fs::write(tmp.join("smu_13_0_0.bin"), &smu[..100]).unwrap();
    let (_gpu, emu) = gpu();
    let e = boot(emu, &tmp).err().unwrap().to_string();
    assert!(e.contains("smu_13_0_0.bin") && !e.contains('\n'), "{e}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn hung_compute_queue_is_an_error_not_a_result() {
    let Some(dir) = firmware_dir("queue_hang") else {
        return;
    };
    let (gpu, mut dev, _) = device(&dir);
    dev.alloc_arena(1 << 20).unwrap();
    let mut q = dev.create_queue().unwrap();
    q.timestamp().unwrap();
    q.timestamp().unwrap();
    q.signal(1).unwrap();
    dev.submit(&mut q).expect("a healthy queue completes");
    gpu.faults(|f| f.hang_queue = Some(Engine::Compute));
    let t = Instant::now();
    let e = dev.submit(&mut q).unwrap_err().to_string();
    assert!(
        e.contains("no RELEASE_MEM signal") && e.contains("outputs were not computed"),
        "{e}"
    );
    assert!(t.elapsed().as_secs() < 60);
}

#[test]
fn page_fault_during_an_sdma_copy_is_reported() {
    let Some(dir) = firmware_dir("page_fault") else {
        return;
    };
    let (gpu, mut dev, _) = device(&dir);
    dev.alloc_arena(6 << 20).unwrap();
    let va = dev.arena_va().unwrap();
    gpu.faults(|f| f.poisoned_page = Some(va + (2 << 20)));
    let mut out = vec![0u8; 5 << 20]; // > BAR_COPY_MAX: SDMA copy-out through the poisoned page
    let e = dev.download(0, &mut out).unwrap_err().to_string();
    assert!(e.contains("copy-out") && e.contains("PageFault"), "{e}");
    assert!(e.contains(&format!("va: {}", va + (2 << 20))), "{e}");
}

#[test]
fn usb_errors_surface_as_bridge_errors() {
    let Some(dir) = firmware_dir("usb_errors") else {
        return;
    };
    let (_gpu, mut dev, handle) = device(&dir);
    dev.alloc_arena(1 << 20).unwrap();
    handle.faults(|f| f.bulk_in_timeouts = 1);
    let mut out = [0u8; 64];
    let e = dev.download(0, &mut out).unwrap_err().to_string();
    assert!(e.contains("download") && e.contains("bulk IN"), "{e}");
    handle.disconnect();
    let e = dev.upload(0, &[1; 64]).unwrap_err().to_string();
    assert!(e.contains("upload"), "{e}");
}
