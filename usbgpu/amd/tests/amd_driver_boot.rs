//! The AM driver boots the Navi31 GPU model through the bridge emulator with the real firmware
//! files, in the fact sheet's order, and the model agrees it is booted.
mod amd_driver_support;
use amd_driver_support::*;
use modelrt_amd::ip::{Ip, IpVersion};

#[test]
fn boots_the_model_with_real_firmware() {
    let Some(dir) = firmware_dir("boots_the_model_with_real_firmware") else {
        return;
    };
    let (gpu, emu) = gpu();
    let (am, handle) = match boot(emu, &dir) {
        Ok(x) => x,
        Err(e) => panic!("boot failed: {e}; model errors: {:?}", gpu.take_errors()),
    };
    assert!(gpu.take_errors().is_empty());
    // Discovered versions are Navi31's.
    assert_eq!(am.bus.ips().version(Ip::Gc), Some(IpVersion(11, 0, 0)));
    assert_eq!(am.bus.ips().version(Ip::Mp0), Some(IpVersion(13, 0, 0)));
    assert_eq!(am.vram_size, 24 << 30);
    // Every LOAD_IP_FW plus LOAD_TOC, SETUP_TMR and AUTOLOAD_RLC went through the ring.
    assert_eq!(am.psp.commands as usize, am.fw.ip.len() + 1 + 3);
    assert!(!am.report.dpm_levels.is_empty());
    let total: u64 = am.report.steps.iter().map(|(_, c)| c.transfers()).sum();
    eprintln!(
        "boot: {total} USB transfers, {} ms emulated",
        handle.clock_ns() / 1_000_000
    );
    for (s, c) in &am.report.steps {
        eprintln!("  {s}: {}", c.transfers());
    }
}
