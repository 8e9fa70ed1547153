//! Graphics/compute init (GC 11, docs/hw/amd-driver.md §4 step 6) and the compute queue (ME1 pipe 0
//! queue 0, §4 step 9):
//! the GC hub, MEC RS64 start address and pipe reset, RLC/SPM/S2A doorbell setup, per-VMID shader
//! memory apertures, the MEC doorbell range and unhalt; then the MQD built in VRAM and loaded into
//! the HQD registers. [`fini`] dequeues the HQD.
use super::{gmc, soc, Am};
use crate::bus::{GpuBus, DEFAULT_TIMEOUT};
use crate::error::AmdError;
use crate::mem::Alloc;
use crate::regs;
use core::time::Duration;
use modelrt_hal::usb::UsbTransport;

/// `CP_MEC_RS64_CNTL` bits.
const MEC_PIPE0_RESET: u32 = 1 << 16;
const MEC_PIPE0_ACTIVE: u32 = 1 << 26;
const MEC_HALT: u32 = 1 << 30;
/// `SH_MEM_CONFIG`: 64-bit addressing, unaligned mode 3, initial instruction prefetch 3.
pub const SH_MEM_CONFIG: u32 = (3 << 2) | (3 << 14);
/// `SH_MEM_BASES`: shared aperture 1, private aperture 2 (bits 63:48 of 0x1000… / 0x2000…).
pub const SH_MEM_BASES: u32 = (1 << 16) | 2;
/// Last MEC doorbell index (`CP_MEC_DOORBELL_RANGE_UPPER`).
pub const MEC_DOORBELL_UPPER: u32 = 0xF8;
/// S2A doorbell entry: enable | awid << 1 | (addr[31:28] = 3) << 28.
pub const fn s2a_entry(awid: u32) -> u32 {
    1 | (awid << 1) | (3 << 28)
}

/// Select ME/pipe/queue/VMID for banked registers.
pub fn grbm_select<T: UsbTransport>(
    bus: &mut GpuBus<T>,
    step: &'static str,
    me: u32,
    pipe: u32,
    queue: u32,
    vmid: u32,
) -> Result<(), AmdError> {
    bus.wreg(
        step,
        regs::GRBM_GFX_CNTL,
        pipe | (me << 2) | (vmid << 4) | (queue << 8),
    )
}

fn reset_mec<T: UsbTransport>(am: &mut Am<T>, step: &'static str) -> Result<(), AmdError> {
    am.bus
        .rmw(step, regs::CP_MEC_RS64_CNTL, 0, MEC_PIPE0_RESET)?;
    am.bus
        .rmw(step, regs::CP_MEC_RS64_CNTL, MEC_PIPE0_RESET, 0)?;
    am.bus
        .rmw(step, regs::CP_MEC_RS64_CNTL, MEC_HALT, MEC_PIPE0_ACTIVE)?;
    am.sleep(Duration::from_millis(50));
    Ok(())
}

/// GFX init_hw. On a partial boot only the hub is reprogrammed and the MEC reset.
pub fn init<T: UsbTransport>(am: &mut Am<T>, partial: bool) -> Result<(), AmdError> {
    let step = "GFX init";
    am.bus.poll(step, regs::CP_STAT, !0, 0, DEFAULT_TIMEOUT)?;
    gmc::init_hub(am, gmc::Hub::GC)?;
    gmc::flush_tlb(am, &gmc::Hub::GC)?;
    if partial {
        return reset_mec(am, step);
    }
    let start = am.fw.mec_ucode_start >> 2;
    let b = &mut am.bus;
    grbm_select(b, step, 1, 0, 0, 0)?;
    b.wreg(step, regs::CP_MEC_RS64_PRGRM_CNTR_START, start as u32)?;
    b.wreg(
        step,
        regs::CP_MEC_RS64_PRGRM_CNTR_START_HI,
        (start >> 32) as u32,
    )?;
    b.rmw(step, regs::CP_MEC_RS64_CNTL, 0, MEC_PIPE0_RESET)?;
    b.rmw(step, regs::CP_MEC_RS64_CNTL, MEC_PIPE0_RESET, 0)?;
    grbm_select(b, step, 0, 0, 0, 0)?;
    b.rmw(step, regs::TCP_CNTL, 0, 0x2000_0000)?;
    b.wreg(step, regs::RLC_CNTL, 1)?;
    b.rmw(step, regs::RLC_SRM_CNTL, 0, 0b11)?;
    b.wreg(step, regs::RLC_SPM_MC_CNTL, 0xF)?;
    b.wreg(step, regs::S2A_DOORBELL_ENTRY_0_CTRL, s2a_entry(3))?;
    b.wreg(step, regs::S2A_DOORBELL_ENTRY_3_CTRL, s2a_entry(6))?;
    b.rmw(step, regs::GRBM_CNTL, 0xFF, 0xFF)?;
    for vmid in 0..16 {
        grbm_select(b, step, 0, 0, 0, vmid)?;
        b.wreg(step, regs::SH_MEM_CONFIG, SH_MEM_CONFIG)?;
        b.wreg(step, regs::SH_MEM_BASES, SH_MEM_BASES)?;
    }
    grbm_select(b, step, 0, 0, 0, 0)?;
    b.wreg(step, regs::CP_MEC_DOORBELL_RANGE_LOWER, 0)?;
    b.wreg(step, regs::CP_MEC_DOORBELL_RANGE_UPPER, MEC_DOORBELL_UPPER)?;
    b.rmw(step, regs::CP_MEC_RS64_CNTL, MEC_HALT, MEC_PIPE0_ACTIVE)?;
    am.sleep(Duration::from_millis(50));
    Ok(())
}

/// Compute ring bytes over USB (docs/hw/amd-driver.md §6).
pub const RING_BYTES: u64 = 0x2000;
/// EOP buffer bytes.
pub const EOP_BYTES: u64 = 0x1000;
/// Compute doorbell: index 3, BAR2 byte 0x18.
pub const DOORBELL: u64 = 0x18;
/// Control-block offsets (HSA `amd_queue_t`).
pub const CTRL_WPTR: u64 = 0x38;
/// Read pointer offset.
pub const CTRL_RPTR: u64 = 0x80;
/// MQD header dword.
pub const MQD_HEADER: u32 = 0xC031_0800;
/// First MQD dword holding register values.
pub const MQD_REGS: usize = 0x80;
/// Registers loaded from the MQD: `CP_MQD_BASE_ADDR` .. `CP_HQD_PQ_WPTR_HI`.
pub const HQD_REGS: usize =
    (regs::CP_HQD_PQ_WPTR_HI.offset - regs::CP_MQD_BASE_ADDR.offset + 1) as usize;

/// The compute queue.
#[derive(Clone, Copy, Debug)]
pub struct ComputeQueue {
    /// Ring.
    pub ring: Alloc,
    /// Control block (read/write pointers).
    pub ctrl: Alloc,
    /// End-of-pipe buffer.
    pub eop: Alloc,
    /// Memory queue descriptor.
    pub mqd: Alloc,
    /// Dwords submitted so far.
    pub put: u64,
}

fn idx(reg: regs::Reg) -> usize {
    MQD_REGS + (reg.offset - regs::CP_MQD_BASE_ADDR.offset) as usize
}

impl ComputeQueue {
    /// The MQD for this queue (dwords), `mqd_mc` = its MC address.
    pub fn mqd_dwords(&self, mqd_mc: u64) -> Vec<u32> {
        let mut m = vec![0u32; MQD_REGS + HQD_REGS];
        m[0] = MQD_HEADER;
        let ring = self.ring.va();
        let eop = self.eop.va();
        let rptr = self.ctrl.va() + CTRL_RPTR;
        let wptr = self.ctrl.va() + CTRL_WPTR;
        let ring_dw = RING_BYTES / 4;
        let eop_dw = EOP_BYTES / 4;
        let set = |m: &mut Vec<u32>, r: regs::Reg, v: u32| m[idx(r)] = v;
        set(&mut m, regs::CP_MQD_BASE_ADDR, mqd_mc as u32);
        set(&mut m, regs::CP_MQD_BASE_ADDR_HI, (mqd_mc >> 32) as u32);
        set(&mut m, regs::CP_HQD_PERSISTENT_STATE, (0x55 << 8) | 1); // preload size + req
        set(&mut m, regs::CP_HQD_PIPE_PRIORITY, 2);
        set(&mut m, regs::CP_HQD_QUEUE_PRIORITY, 0xF);
        set(&mut m, regs::CP_HQD_QUANTUM, 0x111);
        set(&mut m, regs::CP_HQD_PQ_BASE, (ring >> 8) as u32);
        set(&mut m, regs::CP_HQD_PQ_BASE_HI, (ring >> 40) as u32);
        set(&mut m, regs::CP_HQD_PQ_RPTR_REPORT_ADDR, rptr as u32);
        set(
            &mut m,
            regs::CP_HQD_PQ_RPTR_REPORT_ADDR_HI,
            (rptr >> 32) as u32,
        );
        set(&mut m, regs::CP_HQD_PQ_WPTR_POLL_ADDR, wptr as u32);
        set(
            &mut m,
            regs::CP_HQD_PQ_WPTR_POLL_ADDR_HI,
            (wptr >> 32) as u32,
        );
        set(
            &mut m,
            regs::CP_HQD_PQ_DOORBELL_CONTROL,
            ((DOORBELL as u32 / 4) << 2) | (1 << 30),
        );
        set(
            &mut m,
            regs::CP_HQD_PQ_CONTROL,
            (ring_dw.trailing_zeros() - 1) | (5 << 8),
        );
        set(&mut m, regs::CP_HQD_IB_CONTROL, 3 << 20); // min_ib_avail_size
        set(&mut m, regs::CP_HQD_HQ_STATUS0, 0x2000_4000);
        set(&mut m, regs::CP_MQD_CONTROL, 1 << 8); // priv_state
        set(&mut m, regs::CP_HQD_EOP_BASE_ADDR, (eop >> 8) as u32);
        set(&mut m, regs::CP_HQD_EOP_BASE_ADDR_HI, (eop >> 40) as u32);
        set(
            &mut m,
            regs::CP_HQD_EOP_CONTROL,
            eop_dw.trailing_zeros() - 1,
        );
        m
    }

    /// Allocate the queue's memory, write the MQD and load it into the HQD (docs/hw/amd-driver.md
    /// §4 step 9).
    pub fn create<T: UsbTransport>(am: &mut Am<T>) -> Result<ComputeQueue, AmdError> {
        let step = "compute queue";
        let mut q = ComputeQueue {
            ring: am.alloc.alloc("compute ring", RING_BYTES, 4096)?,
            ctrl: am.alloc.alloc("compute queue control", 0x100, 4096)?,
            eop: am.alloc.alloc("EOP buffer", EOP_BYTES, 4096)?,
            mqd: am.alloc.alloc("MQD", 4096, 4096)?,
            put: 0,
        };
        am.bus
            .vram_write(step, q.ring.paddr, &vec![0u8; RING_BYTES as usize])?;
        am.bus.vram_write(step, q.ctrl.paddr, &[0u8; 0x100])?;
        let mqd = q.mqd_dwords(am.mc(q.mqd.paddr));
        am.bus.vram_write_dwords(step, q.mqd.paddr, &mqd)?;
        grbm_select(&mut am.bus, step, 1, 0, 0, 0)?;
        am.bus
            .wregs(step, regs::CP_MQD_BASE_ADDR, &mqd[MQD_REGS..])?;
        am.bus.wreg(step, regs::CP_HQD_ACTIVE, 1)?;
        soc::hdp_flush(&mut am.bus, step)?;
        grbm_select(&mut am.bus, step, 0, 0, 0, 0)?;
        q.put = 0;
        Ok(q)
    }

    /// Append `dwords` to the ring (wrapping), publish the write pointer and ring the doorbell.
    /// Transfers: 1–2 ring streams + 1 write-pointer stream + the doorbell.
    pub fn submit<T: UsbTransport>(
        &mut self,
        bus: &mut GpuBus<T>,
        dwords: &[u32],
    ) -> Result<(), AmdError> {
        let step = "compute submit";
        let ring_dw = RING_BYTES / 4;
        if dwords.len() as u64 >= ring_dw {
            return Err(AmdError::Invalid {
                step,
                what: format!(
                    "{} dwords do not fit the {ring_dw}-dword compute ring",
                    dwords.len()
                ),
            });
        }
        let start = self.put % ring_dw;
        let first = ((ring_dw - start) as usize).min(dwords.len());
        bus.vram_write_dwords(step, self.ring.paddr + start * 4, &dwords[..first])?;
        if first < dwords.len() {
            bus.vram_write_dwords(step, self.ring.paddr, &dwords[first..])?;
        }
        self.put += dwords.len() as u64;
        bus.vram_write(step, self.ctrl.paddr + CTRL_WPTR, &self.put.to_le_bytes())?;
        bus.doorbell64(step, DOORBELL, self.put)
    }
}

/// Dequeue the HQD and wait for it to go inactive.
pub fn fini<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    let step = "GFX fini (HQD dequeue)";
    if am.compute.is_none() {
        return Ok(());
    }
    grbm_select(&mut am.bus, step, 1, 0, 0, 0)?;
    am.bus.wreg(step, regs::CP_HQD_DEQUEUE_REQUEST, 2)?;
    am.bus.wreg(step, regs::SPI_COMPUTE_QUEUE_RESET, 1)?;
    let r = am
        .bus
        .poll(step, regs::CP_HQD_ACTIVE, 1, 0, DEFAULT_TIMEOUT);
    grbm_select(&mut am.bus, step, 0, 0, 0, 0)?;
    r.map(|_| ())
}
