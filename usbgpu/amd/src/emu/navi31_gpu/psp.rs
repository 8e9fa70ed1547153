//! PSP (MP0 13.0.0): the bootloader mailbox (C2PMSG_35/36/81), the KM ring (64/67/69/70/71) and
//! the GFX commands the ring frames carry, parsed and checked rather than echoed
//! (docs/hw/amd-gpu.md §5).
use super::mem::VmAccess;
use super::regs::*;
use super::state::{Engine, GpuError, GpuFaults, GpuState};
use modelrt_asm24::emu::SystemBus;
use modelrt_rdna3::shader::GpuMemory;

/// C2PMSG_35 / C2PMSG_64 "ready" bit.
const READY: u32 = 0x8000_0000;
/// Bootloader commands (docs/hw/amd-gpu.md §5.1), in load order.
pub const BL_COMMANDS: [u32; 8] = [
    0x80000,
    0x1000_0000,
    0x10000,
    0xB0000,
    0xD0000,
    0xC0000,
    0xE0000,
    LOAD_SOSDRV,
];
/// Bootloader command that starts the sOS.
pub const LOAD_SOSDRV: u32 = 0x20000;
/// Ring commands written to C2PMSG_64.
pub const RING_CREATE_KM: u32 = 2 << 16;
pub const RING_DESTROY: u32 = 0x30000;
/// sOS version C2PMSG_81 reports once alive (emulator choice; any non-zero value means alive).
pub const SOS_VERSION: u32 = 0x0032_0045;

/// GFX command ids (docs/hw/amd-gpu.md §5.3).
pub const CMD_SETUP_TMR: u32 = 5;
pub const CMD_LOAD_IP_FW: u32 = 6;
pub const CMD_LOAD_TOC: u32 = 0x20;
pub const CMD_AUTOLOAD_RLC: u32 = 0x21;

/// Command statuses (emulator choice: the sources give no PSP status codes).
pub const STATUS_OK: u32 = 0;
pub const STATUS_BAD_PARAM: u32 = 1;
pub const STATUS_FW_REJECTED: u32 = 2;
pub const STATUS_SEQUENCE: u32 = 3;
pub const STATUS_MEMORY: u32 = 4;
pub const STATUS_UNKNOWN_CMD: u32 = 0xFFFF;

/// Firmware types the Navi31 PSP accepts in LOAD_IP_FW (the GC 11 / SDMA 6 / SMU 13 set of
/// docs/hw/amd-gpu.md §5.3: SMU, SDMA TH0/TH1, RS64 MEC + stack, IMU I/D, RLC
/// G/P/V/IRAM/DRAM/restore lists,
/// legacy MEC + jump table).
pub const FW_TYPES: [u32; 17] = [
    18, 71, 72, 89, 94, 68, 69, 8, 25, 7, 26, 48, 20, 21, 22, 4, 5,
];
pub const FW_SMU: u32 = 18;
pub const FW_RLC_G: u32 = 8;
/// Largest image the model accepts (the 1 MiB msg1 buffer of the PCI path).
pub const MAX_IMAGE: u32 = 1 << 20;

/// Offsets inside the 1 KiB command buffer and the 64-byte ring frame.
const CMD_ID: u64 = 8;
const CMD_PAYLOAD: u64 = 28;
const RESP_STATUS: u64 = 864;
const RESP_TMR_SIZE: u64 = 880;
const FRAME_DWORDS: u32 = 16;

/// PSP state.
#[derive(Clone, Debug)]
pub struct Psp {
    bl_status: u32,
    msg1: u32,
    /// Bootloader commands accepted, in order.
    pub bl_loaded: Vec<u32>,
    pub sos_alive: bool,
    ring_status: u32,
    ring_lo: u32,
    ring_hi: u32,
    ring_size: u32,
    ring: Option<(u64, u32)>,
    /// Ring write pointer the driver wrote (dwords) and how far frames were consumed.
    wptr: u32,
    done: u32,
    /// TMR size answered to LOAD_TOC.
    pub toc_tmr_size: Option<u32>,
    /// SETUP_TMR (MC address, size).
    pub tmr: Option<(u64, u32)>,
    /// Firmware types loaded, in order.
    pub loaded: Vec<u32>,
    pub rlc_autoloaded: bool,
    /// Commands processed (ids, in order).
    pub commands: Vec<u32>,
}

impl Default for Psp {
    fn default() -> Self {
        Psp {
            bl_status: READY,
            msg1: 0,
            bl_loaded: Vec::new(),
            sos_alive: false,
            ring_status: 0,
            ring_lo: 0,
            ring_hi: 0,
            ring_size: 0,
            ring: None,
            wptr: 0,
            done: 0,
            toc_tmr_size: None,
            tmr: None,
            loaded: Vec::new(),
            rlc_autoloaded: false,
            commands: Vec::new(),
        }
    }
}

impl Psp {
    /// A PSP register read; `None` if `offset` is not one.
    pub fn read(&self, offset: u64) -> Option<u32> {
        Some(match offset {
            MP0_C2PMSG_35 => self.bl_status,
            MP0_C2PMSG_36 => self.msg1,
            MP0_C2PMSG_64 => self.ring_status,
            MP0_C2PMSG_67 => self.wptr,
            MP0_C2PMSG_69 => self.ring_lo,
            MP0_C2PMSG_70 => self.ring_hi,
            MP0_C2PMSG_71 => self.ring_size,
            MP0_C2PMSG_81 if self.sos_alive => SOS_VERSION,
            MP0_C2PMSG_81 => 0,
            _ => return None,
        })
    }

    /// A PSP register write; `false` if `offset` is not one.
    pub fn write(&mut self, offset: u64, value: u32, faults: &GpuFaults) -> bool {
        let silent = faults.psp_silent;
        match offset {
            MP0_C2PMSG_35 if silent => self.bl_status = 0,
            MP0_C2PMSG_35 => self.bootloader(value),
            MP0_C2PMSG_36 => self.msg1 = value,
            MP0_C2PMSG_64 if silent || !self.sos_alive => {}
            MP0_C2PMSG_64 => self.ring_command(value),
            MP0_C2PMSG_67 => self.wptr = value,
            MP0_C2PMSG_69 => self.ring_lo = value,
            MP0_C2PMSG_70 => self.ring_hi = value,
            MP0_C2PMSG_71 => self.ring_size = value,
            MP0_C2PMSG_81 => {}
            _ => return false,
        }
        true
    }

    fn bootloader(&mut self, cmd: u32) {
        if self.sos_alive || !BL_COMMANDS.contains(&cmd) || self.msg1 == 0 {
            // Not a bootloader command (or no staging buffer): ready with an error code.
            self.bl_status = READY | STATUS_BAD_PARAM;
            return;
        }
        self.bl_loaded.push(cmd);
        self.bl_status = READY;
        if cmd == LOAD_SOSDRV {
            self.sos_alive = true;
            self.ring_status = READY;
        }
    }

    fn ring_command(&mut self, cmd: u32) {
        match cmd {
            RING_CREATE_KM if self.ring_size != 0 && self.ring_lo & 0xFFF == 0 => {
                self.ring = Some((
                    (self.ring_hi as u64) << 32 | self.ring_lo as u64,
                    self.ring_size,
                ));
                self.wptr = 0;
                self.done = 0;
                self.ring_status = READY;
            }
            RING_DESTROY => {
                self.ring = None;
                self.ring_size = 0;
                self.ring_status = READY;
            }
            _ => self.ring_status = READY | STATUS_BAD_PARAM,
        }
    }
}

/// A command's outcome: status and the reason for a failure.
type Outcome = Result<(), (u32, String)>;

impl GpuState {
    /// Consume ring frames between the last processed write pointer and C2PMSG_67.
    pub fn psp_service(&mut self, bus: &mut dyn SystemBus) {
        if self.config.faults.psp_silent {
            return;
        }
        let Some((ring, size)) = self.psp.ring else {
            return;
        };
        let fb = (
            self.config.fb_base,
            self.config.fb_base + self.config.vram_bytes,
        );
        // Pointers count dwords and wrap at the ring size.
        let ring_dwords = (size / 4).max(FRAME_DWORDS);
        for _ in 0..ring_dwords / FRAME_DWORDS {
            if self.psp.done % ring_dwords == self.psp.wptr % ring_dwords {
                break;
            }
            let frame = ring + (self.psp.done % ring_dwords) as u64 * 4;
            self.psp.done = (self.psp.done + FRAME_DWORDS) % ring_dwords;
            let mut mem = VmAccess {
                vram: &mut self.vram,
                ctx: self.mm_ctx,
                bus: &mut *bus,
                fb: Some(fb),
                poisoned_page: self.config.faults.poisoned_page,
                fault: None,
            };
            let result = run_frame(&mut self.psp, &self.config, &mut mem, frame);
            let fault = mem.fault;
            if let Some(rec) = fault {
                self.record_fault(Engine::Psp, rec);
            }
            if let Err(e) = result {
                self.errors.push(e);
            }
        }
    }
}

/// Read the frame, run its command, write the response and the fence.
fn run_frame(
    psp: &mut Psp,
    config: &super::state::GpuConfig,
    mem: &mut VmAccess<'_>,
    frame: u64,
) -> Result<(), GpuError> {
    let mut f = [0u32; 6];
    for (i, d) in f.iter_mut().enumerate() {
        *d = mem
            .read32(frame + 4 * i as u64)
            .map_err(|_| frame_fault(frame))?;
    }
    let cmd = (f[1] as u64) << 32 | f[0] as u64;
    let fence = (f[4] as u64) << 32 | f[3] as u64;
    let id = mem.read32(cmd + CMD_ID).map_err(|_| frame_fault(cmd))?;
    psp.commands.push(id);
    let outcome = run_command(psp, config, mem, cmd, id);
    let status = match &outcome {
        Ok(()) => STATUS_OK,
        Err((s, _)) => *s,
    };
    let _ = mem.write32(cmd + RESP_STATUS, status);
    if id == CMD_LOAD_TOC && status == STATUS_OK {
        let _ = mem.write32(cmd + RESP_TMR_SIZE, psp.toc_tmr_size.unwrap_or(0));
    }
    mem.write32(fence, f[5]).map_err(|_| frame_fault(fence))?;
    outcome.map_err(|(status, why)| GpuError::PspCommand { id, status, why })
}

fn frame_fault(at: u64) -> GpuError {
    GpuError::PspCommand {
        id: 0,
        status: STATUS_MEMORY,
        why: format!("ring frame, command buffer or fence at {at:#x} is not reachable"),
    }
}

fn run_command(
    psp: &mut Psp,
    config: &super::state::GpuConfig,
    mem: &mut VmAccess<'_>,
    cmd: u64,
    id: u32,
) -> Outcome {
    let mut p = [0u32; 6];
    for (i, d) in p.iter_mut().enumerate() {
        *d = mem
            .read32(cmd + CMD_PAYLOAD + 4 * i as u64)
            .map_err(|_| (STATUS_MEMORY, "command payload unreachable".to_string()))?;
    }
    let addr = (p[1] as u64) << 32 | p[0] as u64;
    match id {
        CMD_LOAD_TOC => {
            if p[2] == 0 || p[2] > MAX_IMAGE {
                return Err((STATUS_BAD_PARAM, format!("TOC size {:#x}", p[2])));
            }
            read_image(mem, addr, p[2])?;
            psp.toc_tmr_size = Some(config.tmr_size);
            Ok(())
        }
        CMD_LOAD_IP_FW => load_ip_fw(psp, config, mem, addr, p[2], p[3]),
        CMD_SETUP_TMR => {
            let need = psp.toc_tmr_size.unwrap_or(0);
            if p[2] < need || p[2] == 0 {
                return Err((
                    STATUS_BAD_PARAM,
                    format!("TMR size {:#x} < {need:#x}", p[2]),
                ));
            }
            if addr & 0xF_FFFF != 0 {
                return Err((
                    STATUS_BAD_PARAM,
                    format!("TMR at {addr:#x} is not 1 MiB aligned"),
                ));
            }
            psp.tmr = Some((addr, p[2]));
            Ok(())
        }
        CMD_AUTOLOAD_RLC => {
            if psp.tmr.is_none() || !psp.loaded.contains(&FW_RLC_G) {
                return Err((
                    STATUS_SEQUENCE,
                    "AUTOLOAD_RLC before the TMR and RLC_G firmware".into(),
                ));
            }
            psp.rlc_autoloaded = true;
            Ok(())
        }
        _ => Err((STATUS_UNKNOWN_CMD, format!("unknown command id {id:#x}"))),
    }
}

fn read_image(mem: &mut VmAccess<'_>, addr: u64, size: u32) -> Result<Vec<u8>, (u32, String)> {
    let mut image = vec![0u8; size as usize];
    mem.read(addr, &mut image).map_err(|f| {
        (
            STATUS_MEMORY,
            format!("image byte at {:#x} is not mapped", f.va),
        )
    })?;
    Ok(image)
}

fn load_ip_fw(
    psp: &mut Psp,
    config: &super::state::GpuConfig,
    mem: &mut VmAccess<'_>,
    addr: u64,
    size: u32,
    fw_type: u32,
) -> Outcome {
    if !FW_TYPES.contains(&fw_type) {
        return Err((
            STATUS_FW_REJECTED,
            format!("firmware type {fw_type} is not a Navi31 type"),
        ));
    }
    if size == 0 || size > MAX_IMAGE {
        return Err((STATUS_BAD_PARAM, format!("image size {size:#x}")));
    }
    if fw_type != FW_SMU && psp.tmr.is_none() {
        return Err((
            STATUS_SEQUENCE,
            format!("firmware type {fw_type} before SETUP_TMR"),
        ));
    }
    let image = read_image(mem, addr, size)?;
    if let Some(why) = file_header(&image) {
        return Err((STATUS_FW_REJECTED, why));
    }
    if config.faults.reject_fw_type == Some(fw_type) {
        return Err((
            STATUS_FW_REJECTED,
            format!("firmware type {fw_type} rejected (injected)"),
        ));
    }
    psp.loaded.push(fw_type);
    Ok(())
}

/// The PSP loads bare microcode; an image that still starts with an amdgpu firmware *file*
/// header (`size_bytes` = the image size, a header size and a v1/v2 header version, docs/hw/
/// amd-gpu.md §5.3) means the driver sent the file instead of its payload.
fn file_header(image: &[u8]) -> Option<String> {
    if image.len() < 32 {
        return None;
    }
    let u32_at =
        |o: usize| u32::from_le_bytes([image[o], image[o + 1], image[o + 2], image[o + 3]]);
    let size_bytes = u32_at(0);
    let header_size = u32_at(4);
    let major = u16::from_le_bytes([image[8], image[9]]);
    let ucode_offset = u32_at(24);
    let looks_like_header = size_bytes as usize == image.len()
        && (32..=1024).contains(&header_size)
        && (1..=2).contains(&major)
        && ucode_offset >= header_size
        && (ucode_offset as usize) < image.len();
    looks_like_header.then(|| {
        format!(
            "image is a firmware file (header v{major}, {header_size} header bytes, microcode at {ucode_offset:#x}), not its microcode"
        )
    })
}
