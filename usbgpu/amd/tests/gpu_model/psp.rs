//! The model's PSP and SMU driven through their mailboxes with the sequences of docs/hw/amd-gpu.md
//! §5 and §6:
//! the bootloader handshake, ring creation, GFX commands that are parsed and checked (TMR size from
//! LOAD_TOC, firmware images, order), and SMU answers that are DPM data, not echoes.
use super::support::*;
use modelrt_amd::emu::navi31_gpu::{GpuConfig, GpuError};

// docs/hw/amd-gpu.md §2.
const C2PMSG_35: u64 = 0x5818C;
const C2PMSG_36: u64 = 0x58190;
const C2PMSG_64: u64 = 0x58200;
const C2PMSG_67: u64 = 0x5820C;
const C2PMSG_69: u64 = 0x58214;
const C2PMSG_70: u64 = 0x58218;
const C2PMSG_71: u64 = 0x5821C;
const C2PMSG_81: u64 = 0x58244;
const SMU_MSG: u64 = 0x58A08;
const SMU_ARG: u64 = 0x58A48;
const SMU_RESP: u64 = 0x58A68;
const RLC_RLCS_BOOTLOAD_STATUS: u64 = 0x3BA08;

/// MC address of VRAM byte 0 (MMMC_VM_FB_LOCATION_BASE << 24).
fn fb_base(r: &Rig) -> u64 {
    ((r.gpu.reg_read(0x6A3B0) & 0xFF_FFFF) as u64) << 24
}

const MSG1: u64 = 0x400_0000; // 1 MiB staging buffer (VRAM physical)
const RING: u64 = 0x500_0000;
const CMD: u64 = 0x501_0000;
const FENCE: u64 = 0x502_0000;

fn bootload(r: &Rig) {
    let msg1 = fb_base(r) + MSG1;
    for cmd in [
        0x80000u32,
        0x1000_0000,
        0x10000,
        0xB0000,
        0xD0000,
        0xC0000,
        0xE0000,
        0x20000,
    ] {
        assert_ne!(
            r.gpu.reg_read(C2PMSG_35) & 0x8000_0000,
            0,
            "bootloader ready before {cmd:#x}"
        );
        r.gpu.reg_write(C2PMSG_36, (msg1 >> 20) as u32);
        r.gpu.reg_write(C2PMSG_35, cmd);
    }
    assert_ne!(r.gpu.reg_read(C2PMSG_81), 0, "sOS alive");
}

fn create_ring(r: &Rig) {
    let ring = fb_base(r) + RING;
    r.gpu.reg_write(C2PMSG_69, ring as u32);
    r.gpu.reg_write(C2PMSG_70, (ring >> 32) as u32);
    r.gpu.reg_write(C2PMSG_71, 0x10000);
    r.gpu.reg_write(C2PMSG_64, 0x20000);
    assert_eq!(
        r.gpu.reg_read(C2PMSG_64) & 0x8000_FFFF,
        0x8000_0000,
        "ring created"
    );
}

/// Submit one command (id + payload at +28) as frame `n` and return (status, tmr_size, fence).
fn command(r: &mut Rig, n: u32, id: u32, payload: &[u32]) -> (u32, u32, u32) {
    let fb = fb_base(r);
    let cmd = CMD + 0x1000 * n as u64;
    r.gpu.vram_write(cmd, &[0u8; 1024]);
    r.put(cmd + 8, &[id]);
    r.put(cmd + 28, payload);
    let (c, f) = (fb + cmd, fb + FENCE);
    let frame = [
        c as u32,
        (c >> 32) as u32,
        0,
        f as u32,
        (f >> 32) as u32,
        n + 1,
    ];
    r.put(RING + 64 * n as u64, &frame);
    r.gpu.reg_write(C2PMSG_67, 16 * (n + 1));
    r.service();
    (r.get32(cmd + 864), r.get32(cmd + 880), r.get32(FENCE))
}

/// LOAD_IP_FW payload for an image of `bytes` placed at msg1.
fn load_fw(r: &mut Rig, n: u32, fw_type: u32, image: &[u8]) -> u32 {
    r.gpu.vram_write(MSG1, image);
    let a = fb_base(r) + MSG1;
    command(
        r,
        n,
        6,
        &[a as u32, (a >> 32) as u32, image.len() as u32, fw_type],
    )
    .0
}

fn booted() -> Rig {
    let r = Rig::new();
    bootload(&r);
    create_ring(&r);
    r
}

#[test]
fn psp_commands_are_parsed_and_checked_in_order() {
    let mut r = booted();
    let ucode = vec![0x5Au8; 4096];
    let a = fb_base(&r) + MSG1;
    r.gpu.vram_write(MSG1, &[1u8; 0x400]);
    // LOAD_TOC → realistic TMR size, fence = frame's value.
    let (status, tmr, fence) = command(&mut r, 0, 0x20, &[a as u32, (a >> 32) as u32, 0x400]);
    assert_eq!((status, fence), (0, 1));
    assert!(
        tmr > 0 && tmr <= 0x130_0000 && tmr.is_multiple_of(0x10_0000),
        "tmr_size {tmr:#x}"
    );
    // SMU firmware may load before the TMR; other IPs may not.
    assert_eq!(load_fw(&mut r, 1, 18, &ucode), 0);
    assert_eq!(load_fw(&mut r, 2, 89, &ucode), 3, "MEC before SETUP_TMR");
    // SETUP_TMR smaller than LOAD_TOC asked → rejected; the right size at a 1 MiB MC address → ok.
    let t = fb_base(&r) + 0x1000_0000;
    let small = command(
        &mut r,
        3,
        5,
        &[t as u32, (t >> 32) as u32, tmr - 0x10_0000, 2],
    )
    .0;
    assert_eq!(small, 1);
    assert_eq!(
        command(&mut r, 4, 5, &[t as u32, (t >> 32) as u32, tmr, 2]).0,
        0
    );
    assert_eq!(load_fw(&mut r, 5, 89, &ucode), 0);
    // AUTOLOAD_RLC needs RLC_G first.
    assert_eq!(command(&mut r, 6, 0x21, &[]).0, 3);
    assert_eq!(r.gpu.reg_read(RLC_RLCS_BOOTLOAD_STATUS) >> 31, 0);
    assert_eq!(load_fw(&mut r, 7, 8, &ucode), 0);
    assert_eq!(command(&mut r, 8, 0x21, &[]).0, 0);
    assert_eq!(
        r.gpu.reg_read(RLC_RLCS_BOOTLOAD_STATUS) >> 31,
        1,
        "bootload complete"
    );
    assert_eq!(command(&mut r, 9, 0x77, &[]).0, 0xFFFF, "unknown command");
    let errors = r.gpu.take_errors();
    assert_eq!(errors.len(), 4, "{errors:?}");
}

#[test]
fn psp_rejects_bad_firmware_images() {
    let mut r = booted();
    let t = fb_base(&r) + 0x1000_0000;
    assert_eq!(
        command(&mut r, 0, 5, &[t as u32, (t >> 32) as u32, 0x130_0000, 2]).0,
        0
    );
    // A whole firmware file (common header: size_bytes, header_size 256, v2.0, ucode at 256).
    let mut file = vec![0u8; 0x2000];
    file[0..4].copy_from_slice(&(0x2000u32).to_le_bytes());
    file[4..8].copy_from_slice(&256u32.to_le_bytes());
    file[8..10].copy_from_slice(&2u16.to_le_bytes());
    file[20..24].copy_from_slice(&(0x2000u32 - 256).to_le_bytes());
    file[24..28].copy_from_slice(&256u32.to_le_bytes());
    assert_eq!(load_fw(&mut r, 1, 71, &file), 2, "file header not stripped");
    assert_eq!(load_fw(&mut r, 2, 71, &file[256..]), 0, "its payload loads");
    assert_eq!(
        load_fw(&mut r, 3, 999, &file[256..]),
        2,
        "not a Navi31 firmware type"
    );
    r.gpu.faults(|f| f.reject_fw_type = Some(72));
    assert_eq!(
        load_fw(&mut r, 4, 72, &file[256..]),
        2,
        "injected rejection"
    );
    let e = r.gpu.take_errors();
    assert!(
        e.iter().all(|x| matches!(
            x,
            GpuError::PspCommand {
                id: 6,
                status: 2,
                ..
            }
        )),
        "{e:?}"
    );
}

#[test]
fn silent_psp_never_becomes_ready() {
    let r = Rig::with(GpuConfig::default());
    r.gpu.faults(|f| f.psp_silent = true);
    r.gpu.reg_write(C2PMSG_36, 0x40);
    r.gpu.reg_write(C2PMSG_35, 0x20000);
    assert_eq!(r.gpu.reg_read(C2PMSG_35) & 0x8000_0000, 0);
    assert_eq!(r.gpu.reg_read(C2PMSG_81), 0);
}

fn smu(r: &Rig, msg: u32, arg: u32) -> (u32, u32) {
    r.gpu.reg_write(SMU_RESP, 0);
    r.gpu.reg_write(SMU_ARG, arg);
    r.gpu.reg_write(SMU_MSG, msg);
    (r.gpu.reg_read(SMU_RESP), r.gpu.reg_read(SMU_ARG))
}

#[test]
fn smu_answers_with_dpm_tables_not_echoes() {
    let r = Rig::new();
    assert_eq!(
        smu(&r, 0x1F, 2 << 16 | 0xFF).0,
        0xFD,
        "DPM query before features are enabled"
    );
    assert_eq!(smu(&r, 0xE, 0).0, 1);
    assert_eq!(smu(&r, 0xF, 0x10_0000).0, 1);
    assert_eq!(smu(&r, 0x6, 0).0, 1);
    for clk in 0..4u32 {
        let (resp, count) = smu(&r, 0x1F, clk << 16 | 0xFF);
        assert_eq!(resp, 1);
        let count = count & 0x7FFF_FFFF;
        assert!((2..=16).contains(&count), "clock {clk}: {count} levels");
        let freqs: Vec<u32> = (0..count).map(|i| smu(&r, 0x1F, clk << 16 | i).1).collect();
        assert!(
            freqs.windows(2).all(|w| w[0] < w[1]),
            "ascending MHz {freqs:?}"
        );
        assert!(freqs.iter().all(|&f| (50..=4000).contains(&f)), "{freqs:?}");
        assert_eq!(
            smu(&r, 0x1F, clk << 16 | count).0,
            0xFF,
            "index past the table"
        );
    }
    let (resp, version) = smu(&r, 0x2, 0x1234);
    assert_eq!(resp, 1);
    assert_ne!(version, 0x1234, "not an echo");
    assert_eq!(smu(&r, 0x99, 0).0, 0xFE, "unknown message");
    r.gpu.faults(|f| f.smu_silent = true);
    assert_eq!(smu(&r, 0x2, 0).0, 0, "silent SMU never responds");
}

#[test]
fn smu_mode1_reset_returns_the_psp_to_its_bootloader() {
    let r = booted();
    // Debug channel: message 2 on C2PMSG_75, response on 54 (docs/hw/amd-gpu.md §6.1).
    r.gpu.reg_write(0x589D8, 0);
    r.gpu.reg_write(0x58A2C, 2);
    assert_eq!(r.gpu.reg_read(0x589D8), 1);
    assert_eq!(r.gpu.reg_read(C2PMSG_81), 0, "sOS gone after the reset");
    assert_ne!(
        r.gpu.reg_read(C2PMSG_35) & 0x8000_0000,
        0,
        "bootloader ready again"
    );
}

#[test]
fn psp_reads_firmware_staged_in_sram_through_the_mm_hub() {
    // USB mode (docs/hw/amd-gpu.md §3.2, §5.1): msg1 is the GPU VA of the SRAM mapping (SYSTEM
    // pages at bus 0x200000).
    use modelrt_asm24::emu::SystemBus;
    let mut r = booted();
    let staging = VA_BASE + 0x100_0000;
    r.map(staging, 0x20_0000, 128, true);
    r.enable_mm_vm();
    let t = fb_base(&r) + 0x1000_0000;
    assert_eq!(
        command(&mut r, 0, 5, &[t as u32, (t >> 32) as u32, 0x130_0000, 2]).0,
        0
    );
    assert!(r.sys.write(0x20_0000, &[0x33u8; 0x3000]));
    let payload = [staging as u32, (staging >> 32) as u32, 0x3000, 71];
    assert_eq!(command(&mut r, 1, 6, &payload).0, 0);
    // 0x3000 bytes past the staging mapping's end: the PSP's read faults (status 4) and the MM
    // hub reports it.
    let beyond = staging + 0x7F000;
    let payload = [beyond as u32, (beyond >> 32) as u32, 0x3000, 71];
    assert_eq!(command(&mut r, 2, 6, &payload).0, 4);
    assert_ne!(
        r.gpu.reg_read(0x69C30),
        0,
        "MMVM_L2_PROTECTION_FAULT_STATUS"
    );
}
