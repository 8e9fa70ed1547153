//! BAR5 register reads and writes with the side effects the model gives them
//! (docs/hw/amd-gpu.md §2); everything else is plain storage.
use super::pm4::ComputeQueue;
use super::regs::*;
use super::sdma::SdmaQueue;
use super::smu::SmuAction;
use super::state::GpuState;
use super::vm::Context;

/// The HQD that runs PM4 (MEC 1, pipe 0, queue 0 as `GRBM_GFX_CNTL` selects it).
const COMPUTE_HQD: (u32, u32, u32) = (1, 0, 0);

impl GpuState {
    fn plain(&self, offset: u64) -> u32 {
        self.regs.get(&offset).copied().unwrap_or(0)
    }

    /// (me, pipe, queue) selected by `GRBM_GFX_CNTL`.
    fn selected(&self) -> (u32, u32, u32) {
        let v = self.plain(GRBM_GFX_CNTL);
        ((v >> 2) & 3, v & 3, (v >> 8) & 7)
    }

    fn hqd_reg(&self, offset: u64) -> u32 {
        let bank = self.hqd.get(&self.selected());
        bank.and_then(|b| b.get(&offset)).copied().unwrap_or(0)
    }

    /// VRAM byte address the `MM_INDEX`/`MM_INDEX_HI` pair points at.
    fn mm_index(&self) -> u64 {
        ((self.plain(MM_INDEX_HI) as u64) << 31) | (self.plain(MM_INDEX) & 0x7FFF_FFFF) as u64
    }

    /// `MC_VM_FB_LOCATION_BASE`/`TOP` values (16 MiB units).
    fn fb_location(&self) -> (u32, u32) {
        let base = (self.config.fb_base >> 24) as u32;
        let top = ((self.config.fb_base + self.config.vram_bytes - 1) >> 24) as u32;
        (base, top)
    }

    /// A register read as the bus sees it.
    pub fn reg_read(&mut self, offset: u64) -> u32 {
        let offset = offset & !3;
        if let Some(v) = self.psp.read(offset) {
            return v;
        }
        if let Some(v) = self.smu.read(offset) {
            return v;
        }
        match offset {
            MM_DATA => self.vram.read32(self.mm_index()),
            RSMU_DATA => {
                let at = self.plain(RSMU_INDEX) as u64;
                if at < super::BAR5_BYTES && at != RSMU_DATA {
                    self.reg_read(at)
                } else {
                    self.plain(at)
                }
            }
            RCC_CONFIG_MEMSIZE => (self.config.vram_bytes >> 20) as u32,
            REMAP_HDP_MEM_FLUSH_CNTL => HDP_REMAP_TARGET as u32,
            HDP_FLUSH_DONE => self.plain(HDP_FLUSH_REQ),
            CP_STAT => {
                // CP_BUSY (bit 31) stays set while the compute queue is hung.
                if self.compute.as_ref().is_some_and(|q| q.hung) {
                    0x8000_0000
                } else {
                    0
                }
            }
            GCMC_VM_FB_LOCATION_BASE | MMMC_VM_FB_LOCATION_BASE => self.fb_location().0,
            GCMC_VM_FB_LOCATION_TOP | MMMC_VM_FB_LOCATION_TOP => self.fb_location().1,
            GCVM_INVALIDATE_ENG17_SEM | MMVM_INVALIDATE_ENG17_SEM => 1,
            RLC_RLCS_BOOTLOAD_STATUS => {
                if self.psp.rlc_autoloaded {
                    0x8000_0001
                } else {
                    0
                }
            }
            CP_HQD_ACTIVE if self.selected() == COMPUTE_HQD => self.compute.is_some() as u32,
            CP_HQD_PQ_RPTR if self.selected() == COMPUTE_HQD && self.compute.is_some() => {
                self.compute.as_ref().map_or(0, |q| q.rptr as u32)
            }
            HQD_FIRST..=HQD_LAST => self.hqd_reg(offset),
            SDMA0_QUEUE0_RB_RPTR => self
                .sdma
                .as_ref()
                .map_or(self.plain(offset), |q| q.rptr as u32),
            SDMA0_QUEUE0_RB_RPTR_HI => self
                .sdma
                .as_ref()
                .map_or(self.plain(offset), |q| (q.rptr >> 32) as u32),
            _ => self.plain(offset),
        }
    }

    /// A register write as the bus delivers it.
    pub fn reg_write(&mut self, offset: u64, value: u32) {
        let offset = offset & !3;
        if self.psp.write(offset, value, &self.config.faults) {
            return;
        }
        match self.smu.write(offset, value, &self.config.faults) {
            Some(SmuAction::None) => return,
            Some(SmuAction::Mode1Reset) => {
                self.reset_asic();
                return;
            }
            None => {}
        }
        match offset {
            MM_DATA => {
                let at = self.mm_index();
                self.vram.write32(at, value);
            }
            RSMU_DATA => {
                let at = self.plain(RSMU_INDEX) as u64;
                if at < super::BAR5_BYTES && at != RSMU_DATA {
                    self.reg_write(at, value);
                } else {
                    self.regs.insert(at, value);
                }
            }
            HDP_REMAP_TARGET => self.hdp_flushes += 1,
            GCVM_INVALIDATE_ENG17_REQ | MMVM_INVALIDATE_ENG17_REQ => self.invalidate(offset, value),
            RLC_SAFE_MODE => {
                // The RLC acknowledges at once: CMD clears.
                self.regs.insert(offset, value & !1);
            }
            HQD_FIRST..=HQD_LAST => self.hqd_write(offset, value),
            SDMA0_QUEUE0_RB_CNTL => {
                self.regs.insert(offset, value);
                self.sdma = (value & 1 != 0).then(|| self.sdma_from_regs(value));
            }
            _ => {
                self.regs.insert(offset, value);
            }
        }
    }

    fn hqd_write(&mut self, offset: u64, value: u32) {
        let sel = self.selected();
        self.hqd.entry(sel).or_default().insert(offset, value);
        if sel != COMPUTE_HQD {
            return;
        }
        match offset {
            CP_HQD_ACTIVE if value & 1 != 0 => self.compute = Some(self.compute_from_regs()),
            CP_HQD_ACTIVE => self.compute = None,
            CP_HQD_DEQUEUE_REQUEST if value & 0xF != 0 => {
                // Dequeue completes at once: the queue goes inactive, the request clears.
                self.compute = None;
                if let Some(bank) = self.hqd.get_mut(&sel) {
                    bank.insert(CP_HQD_ACTIVE, 0);
                    bank.insert(CP_HQD_DEQUEUE_REQUEST, 0);
                }
            }
            _ => {}
        }
    }

    fn compute_from_regs(&self) -> ComputeQueue {
        let r = |o| self.hqd_reg(o) as u64;
        let control = r(CP_HQD_PQ_CONTROL);
        let doorbell = r(CP_HQD_PQ_DOORBELL_CONTROL);
        let rptr = r(CP_HQD_PQ_RPTR);
        ComputeQueue {
            ring_va: ((r(CP_HQD_PQ_BASE_HI) << 32) | r(CP_HQD_PQ_BASE)) << 8,
            ring_dwords: 2u64 << (control & 0x3F),
            rptr,
            wptr: r(CP_HQD_PQ_WPTR_LO).max(rptr),
            doorbell: (doorbell & (1 << 30) != 0).then_some(((doorbell >> 2) & 0x3FF_FFFF) * 4),
            rptr_report: (r(CP_HQD_PQ_RPTR_REPORT_ADDR_HI) << 32) | r(CP_HQD_PQ_RPTR_REPORT_ADDR),
            ib: None,
            hung: false,
            blocked_since: None,
        }
    }

    fn sdma_from_regs(&self, cntl: u32) -> SdmaQueue {
        let r = |o| self.plain(o) as u64;
        let doorbell = r(SDMA0_QUEUE0_DOORBELL_OFFSET);
        let rptr = (r(SDMA0_QUEUE0_RB_RPTR_HI) << 32) | r(SDMA0_QUEUE0_RB_RPTR);
        SdmaQueue {
            ring_va: ((r(SDMA0_QUEUE0_RB_BASE_HI) << 32) | r(SDMA0_QUEUE0_RB_BASE)) << 8,
            ring_bytes: 4u64 << ((cntl >> 1) & 0x1F),
            rptr,
            wptr: rptr,
            doorbell: (r(SDMA0_QUEUE0_DOORBELL) & (1 << 28) != 0)
                .then_some(((doorbell >> 2) & 0x3FF_FFFF) * 4),
            rptr_addr: (r(SDMA0_QUEUE0_RB_RPTR_ADDR_HI) << 32) | r(SDMA0_QUEUE0_RB_RPTR_ADDR_LO),
            hung: false,
            blocked_since: None,
        }
    }

    /// An invalidate request on engine 17: latch the hub's context-0 registers (the next walks use
    /// them), acknowledge the requested VMIDs, optionally clear the fault status.
    fn invalidate(&mut self, req_reg: u64, value: u32) {
        let gc = req_reg == GCVM_INVALIDATE_ENG17_REQ;
        let (cntl, base, start, end, ack, status) = if gc {
            (
                GCVM_CONTEXT0_CNTL,
                GCVM_CONTEXT0_BASE_LO32,
                GCVM_CONTEXT0_START_LO32,
                GCVM_CONTEXT0_END_LO32,
                GCVM_INVALIDATE_ENG17_ACK,
                GCVM_L2_PROTECTION_FAULT_STATUS,
            )
        } else {
            (
                MMVM_CONTEXT0_CNTL,
                MMVM_CONTEXT0_BASE_LO32,
                MMVM_CONTEXT0_START_LO32,
                MMVM_CONTEXT0_END_LO32,
                MMVM_INVALIDATE_ENG17_ACK,
                MMVM_L2_PROTECTION_FAULT_STATUS,
            )
        };
        let pair = |s: &Self, lo: u64| (s.plain(lo + 4) as u64) << 32 | s.plain(lo) as u64;
        let c = self.plain(cntl);
        let ctx = Context {
            enabled: c & 1 != 0,
            depth: (c >> 1) & 3,
            base: pair(self, base),
            start: pair(self, start),
            end: pair(self, end),
        };
        if gc {
            self.gc_ctx = ctx;
        } else {
            self.mm_ctx = ctx;
        }
        self.regs.insert(req_reg, value);
        self.regs.insert(ack, value & 0xFFFF);
        if value & (1 << 24) != 0 {
            for r in [status, status + 4, status + 8] {
                self.regs.insert(r, 0);
            }
        }
    }
}
