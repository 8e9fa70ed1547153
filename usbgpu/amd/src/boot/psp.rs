//! The platform security processor (MP0, docs/hw/amd-driver.md §4 step 5): bootloader hand-off of
//! the sOS components,
//! the KM ring, and the ring commands that load the TOC, the SMU and every IP firmware, set up the
//! TMR and start the RLC autoload. Over USB every blob is staged in the bridge SRAM, which the GPU
//! reaches through the SYSTEM mapping at [`sys_va`]`(BUS_SRAM)` ("msg1").
use super::{soc, Am};
use crate::bus::{GpuBus, DEFAULT_TIMEOUT};
use crate::error::{bridge, AmdError};
use crate::mem::{sys_va, Alloc, VramAlloc};
use crate::regs;
use core::time::Duration;
use modelrt_asm24::proto::sector_padded;
use modelrt_asm24::BUS_SRAM;
use modelrt_hal::usb::UsbTransport;

/// Ring bytes.
pub const RING_BYTES: u64 = 64 << 10;
/// Largest TMR (docs/hw/amd-driver.md §3).
pub const TMR_MAX: u64 = 0x130_0000;
/// Ring frame bytes.
pub const FRAME_BYTES: u64 = 64;
/// Command buffer bytes the driver writes.
pub const CMD_BYTES: usize = 1024;
/// Offsets in the command buffer.
pub const CMD_ID: usize = 8;
/// Command payload.
pub const CMD_PAYLOAD: usize = 28;
/// Response status.
pub const RESP_STATUS: usize = 864;
/// Response TMR size (LOAD_TOC).
pub const RESP_TMR_SIZE: usize = 880;
/// Ring control commands.
pub const RING_KM: u32 = 2 << 16;
/// Destroy all rings.
pub const DESTROY_RINGS: u32 = 0x30000;

/// GFX command ids.
pub mod cmd {
    /// Set up the trusted memory region.
    pub const SETUP_TMR: u32 = 5;
    /// Load one IP firmware.
    pub const LOAD_IP_FW: u32 = 6;
    /// Load the table of contents.
    pub const LOAD_TOC: u32 = 0x20;
    /// Start the RLC autoload.
    pub const AUTOLOAD_RLC: u32 = 0x21;
}

/// PSP buffers and ring position.
#[derive(Clone, Copy, Debug)]
pub struct PspState {
    /// KM ring.
    pub ring: Alloc,
    /// Command buffer.
    pub cmd: Alloc,
    /// Fence word page.
    pub fence: Alloc,
    /// Trusted memory region.
    pub tmr: Alloc,
    /// Ring write pointer in dwords.
    pub wptr: u32,
    /// TMR size the PSP asked for (LOAD_TOC).
    pub tmr_size: u32,
    /// Ring commands submitted.
    pub commands: u32,
}

impl PspState {
    /// Allocate the ring, command, fence and TMR buffers.
    pub fn alloc(a: &mut VramAlloc) -> Result<PspState, AmdError> {
        Ok(PspState {
            ring: a.alloc("PSP ring", RING_BYTES, 4096)?,
            cmd: a.alloc("PSP command buffer", 4096, 4096)?,
            fence: a.alloc("PSP fence", 4096, 4096)?,
            tmr: a.alloc("PSP TMR", TMR_MAX, 1 << 20)?,
            wptr: 0,
            tmr_size: 0,
            commands: 0,
        })
    }
}

/// The GPU address of the staging area ("msg1"): the SRAM mapping, 1 MiB aligned.
pub fn msg1() -> u64 {
    sys_va(BUS_SRAM)
}

/// Whether the sOS is running (`C2PMSG_81 ≠ 0`).
pub fn sos_alive<T: UsbTransport>(bus: &mut GpuBus<T>) -> Result<bool, AmdError> {
    Ok(bus.rreg("PSP probe", regs::MP0_SMN_C2PMSG_81)? != 0)
}

/// Copy `blob` into the bridge SRAM (padded with 4 zero bytes, then to 16 bytes, then to sectors).
fn stage<T: UsbTransport>(am: &mut Am<T>, step: &'static str, blob: &[u8]) -> Result<(), AmdError> {
    let padded = (blob.len() + 4).next_multiple_of(16);
    let mut wire = vec![0u8; sector_padded(padded)];
    wire[..blob.len()].copy_from_slice(blob);
    am.bus.bridge().sram_write(0, &wire).map_err(bridge(step))?;
    soc::hdp_flush(&mut am.bus, step)
}

/// Hand every sOS component to the bootloader, then wait for the sOS.
pub fn bootloader<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    let step = "PSP bootloader";
    let comps = core::mem::take(&mut am.fw.bootloader);
    let r = (|| {
        for (command, blob) in &comps {
            am.bus.poll(
                step,
                regs::MP0_SMN_C2PMSG_35,
                1 << 31,
                1 << 31,
                DEFAULT_TIMEOUT,
            )?;
            stage(am, step, blob)?;
            am.bus
                .wreg(step, regs::MP0_SMN_C2PMSG_36, (msg1() >> 20) as u32)?;
            am.bus.wreg(step, regs::MP0_SMN_C2PMSG_35, *command)?;
            if *command != super::firmware::bl_cmd::SOS {
                am.bus.poll(
                    step,
                    regs::MP0_SMN_C2PMSG_35,
                    1 << 31,
                    1 << 31,
                    DEFAULT_TIMEOUT,
                )?;
            }
        }
        am.bus
            .poll_with(
                "PSP sOS start",
                regs::MP0_SMN_C2PMSG_81,
                DEFAULT_TIMEOUT,
                |v| v != 0,
            )
            .map(|_| ())
    })();
    am.fw.bootloader = comps;
    r
}

/// Create the KM ring.
pub fn ring_create<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    let step = "PSP ring create";
    if am.bus.rreg(step, regs::MP0_SMN_C2PMSG_71)? != 0 {
        am.bus.wreg(step, regs::MP0_SMN_C2PMSG_64, DESTROY_RINGS)?;
        am.sleep(Duration::from_millis(20));
    }
    am.bus.poll(
        step,
        regs::MP0_SMN_C2PMSG_64,
        1 << 31,
        1 << 31,
        DEFAULT_TIMEOUT,
    )?;
    let ring = am.mc(am.psp.ring.paddr);
    am.bus.wreg(step, regs::MP0_SMN_C2PMSG_69, ring as u32)?;
    am.bus
        .wreg(step, regs::MP0_SMN_C2PMSG_70, (ring >> 32) as u32)?;
    am.bus
        .wreg(step, regs::MP0_SMN_C2PMSG_71, RING_BYTES as u32)?;
    am.bus.wreg(step, regs::MP0_SMN_C2PMSG_64, RING_KM)?;
    am.sleep(Duration::from_millis(20));
    am.bus.poll(
        step,
        regs::MP0_SMN_C2PMSG_64,
        0x8000_FFFF,
        0x8000_0000,
        DEFAULT_TIMEOUT,
    )?;
    am.psp.wptr = 0;
    Ok(())
}

/// Submit one ring command; returns the response's TMR-size field.
pub fn submit<T: UsbTransport>(
    am: &mut Am<T>,
    step: &'static str,
    id: u32,
    payload: &[u32],
) -> Result<u32, AmdError> {
    let mut buf = [0u8; CMD_BYTES];
    buf[CMD_ID..CMD_ID + 4].copy_from_slice(&id.to_le_bytes());
    for (i, w) in payload.iter().enumerate() {
        let o = CMD_PAYLOAD + 4 * i;
        buf[o..o + 4].copy_from_slice(&w.to_le_bytes());
    }
    am.bus.vram_write(step, am.psp.cmd.paddr, &buf)?;
    am.bus.vram_write(step, am.psp.fence.paddr, &[0; 4])?;
    let prev = am.psp.wptr;
    let fence_value = prev + 1;
    let cmd_mc = am.mc(am.psp.cmd.paddr);
    let fence_mc = am.mc(am.psp.fence.paddr);
    let mut frame = [0u32; (FRAME_BYTES / 4) as usize];
    frame[0] = cmd_mc as u32;
    frame[1] = (cmd_mc >> 32) as u32;
    frame[3] = fence_mc as u32;
    frame[4] = (fence_mc >> 32) as u32;
    frame[5] = fence_value;
    let slot = (prev as u64 * 4) % RING_BYTES;
    am.bus
        .vram_write_dwords(step, am.psp.ring.paddr + slot, &frame)?;
    let next = prev + (FRAME_BYTES / 4) as u32;
    am.bus.wreg(step, regs::MP0_SMN_C2PMSG_67, next)?;
    am.psp.wptr = next;
    am.psp.commands += 1;
    am.bus.poll_vram32(
        step,
        "PSP fence",
        am.psp.fence.paddr,
        DEFAULT_TIMEOUT,
        |v| v == fence_value,
    )?;
    let mut resp = [0u8; 20];
    am.bus
        .vram_read(step, am.psp.cmd.paddr + RESP_STATUS as u64, &mut resp)?;
    let status = u32::from_le_bytes([resp[0], resp[1], resp[2], resp[3]]);
    if status != 0 {
        return Err(AmdError::Device {
            step,
            what: format!("PSP command {id:#x} failed with status {status:#x}"),
        });
    }
    Ok(u32::from_le_bytes([resp[16], resp[17], resp[18], resp[19]]))
}

fn load_fw<T: UsbTransport>(am: &mut Am<T>, fw_type: u32, data: &[u8]) -> Result<(), AmdError> {
    let step = "PSP firmware load";
    stage(am, step, data)?;
    let m = msg1();
    submit(
        am,
        step,
        cmd::LOAD_IP_FW,
        &[m as u32, (m >> 32) as u32, data.len() as u32, fw_type],
    )
    .map_err(|e| match e {
        AmdError::Device { what, .. } => AmdError::Device {
            step,
            what: format!("{what} (firmware type {fw_type} rejected)"),
        },
        other => other,
    })
    .map(|_| ())
}

/// PSP init_hw (docs/hw/amd-driver.md §4 step 5 order).
pub fn init<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    if !sos_alive(&mut am.bus)? {
        bootloader(am)?;
    }
    ring_create(am)?;
    if let Some(toc) = am.fw.toc.take() {
        let step = "PSP LOAD_TOC";
        stage(am, step, &toc)?;
        let m = msg1();
        let r = submit(
            am,
            step,
            cmd::LOAD_TOC,
            &[m as u32, (m >> 32) as u32, toc.len() as u32],
        );
        am.fw.toc = Some(toc);
        let tmr = r?;
        if tmr as u64 > TMR_MAX {
            return Err(AmdError::Device {
                step,
                what: format!("PSP asks for a {tmr:#x}-byte TMR, more than {TMR_MAX:#x}"),
            });
        }
        am.psp.tmr_size = tmr;
    }
    let smu = am.fw.smu.clone();
    load_fw(am, smu.fw_type, &smu.data)?;
    let tmr_size = if am.psp.tmr_size != 0 {
        am.psp.tmr_size
    } else {
        TMR_MAX as u32
    };
    let tmr_mc = am.mc(am.psp.tmr.paddr);
    let tmr_pa = am.psp.tmr.paddr;
    submit(
        am,
        "PSP SETUP_TMR",
        cmd::SETUP_TMR,
        &[
            tmr_mc as u32,
            (tmr_mc >> 32) as u32,
            tmr_size,
            1 << 1,
            tmr_pa as u32,
            (tmr_pa >> 32) as u32,
        ],
    )?;
    let images = core::mem::take(&mut am.fw.ip);
    let r = images
        .iter()
        .try_for_each(|img| load_fw(am, img.fw_type, &img.data));
    am.fw.ip = images;
    r?;
    submit(am, "PSP AUTOLOAD_RLC", cmd::AUTOLOAD_RLC, &[])?;
    Ok(())
}
