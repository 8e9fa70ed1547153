//! Shared rig for the GPU-model tests: drives `emu::navi31_gpu::Navi31Model` at register/packet level
//! with sequences written from docs/hw/amd-gpu.md (§2, §3, §7, §8), never via the driver.
//! Register offsets are docs/hw/amd-gpu.md §2's, or (where §2 is silent) tinygrad's GC 11 / MMHUB 3
//! register tables at the default Navi31 bases.

use modelrt_amd::emu::navi31_gpu::sysmem::WindowMemory;
use modelrt_amd::emu::navi31_gpu::{GpuConfig, Navi31Model};

/// GPU VA base of the global allocator (docs/hw/amd-gpu.md §3.1).
pub const VA_BASE: u64 = 0x2000_0000_0000;
/// Where the rig puts page tables and buffers in VRAM.
pub const PT_AREA: u64 = 0x10_0000;
pub const DATA_AREA: u64 = 0x100_0000;

// docs/hw/amd-gpu.md §2 registers.
pub const GRBM_GFX_CNTL: u64 = 0x2A400;
pub const CP_STAT: u64 = 0x8680;
pub const GCVM_INVALIDATE_ENG17_REQ: u64 = 0xA470;
pub const GCVM_INVALIDATE_ENG17_ACK: u64 = 0xA4B8;
pub const GCVM_CONTEXT0_BASE_LO32: u64 = 0xA54C;
pub const CP_HQD_ACTIVE: u64 = 0xC82C;
pub const CP_HQD_DEQUEUE_REQUEST: u64 = 0xC884;
pub const SDMA0_QUEUE0_RB_CNTL: u64 = 0x4B80;
pub const SDMA0_QUEUE0_RB_BASE: u64 = 0x4B84;
pub const SDMA0_QUEUE0_DOORBELL: u64 = 0x4BC8;
pub const SDMA0_QUEUE0_DOORBELL_OFFSET: u64 = 0x4C2C;
pub const COMPUTE_PGM_LO: u64 = 0xB830;
// tinygrad register tables (GC 11.0.0 at bases 0x1260/0xA000/0x1C000).
pub const GCVM_CONTEXT0_CNTL: u64 = 0xA3A0;
pub const GCVM_CONTEXT0_START_LO32: u64 = 0xA5CC;
pub const GCVM_CONTEXT0_END_LO32: u64 = 0xA64C;
pub const GCVM_L2_PROTECTION_FAULT_STATUS: u64 = 0xA0A0;
pub const GCVM_L2_PROTECTION_FAULT_ADDR_LO32: u64 = 0xA0A4;
pub const CP_HQD_PQ_BASE: u64 = 0xC844;
pub const CP_HQD_PQ_BASE_HI: u64 = 0xC848;
pub const CP_HQD_PQ_RPTR: u64 = 0xC84C;
pub const CP_HQD_PQ_DOORBELL_CONTROL: u64 = 0xC860;
pub const CP_HQD_PQ_CONTROL: u64 = 0xC868;
pub const SDMA0_QUEUE0_RB_RPTR: u64 = 0x4B8C;

/// One hub's context-0 and invalidate-engine-17 registers.
pub struct Hub {
    pub cntl: u64,
    pub base: u64,
    pub start: u64,
    pub end: u64,
    pub req: u64,
    pub ack: u64,
}

pub const GC_HUB: Hub = Hub {
    cntl: GCVM_CONTEXT0_CNTL,
    base: GCVM_CONTEXT0_BASE_LO32,
    start: GCVM_CONTEXT0_START_LO32,
    end: GCVM_CONTEXT0_END_LO32,
    req: GCVM_INVALIDATE_ENG17_REQ,
    ack: GCVM_INVALIDATE_ENG17_ACK,
};

/// MMHUB 3.0.0 (docs/hw/amd-gpu.md §2 for REQ/ACK; tinygrad `mmhub_3_0_0` for the context
/// registers).
pub const MM_HUB: Hub = Hub {
    cntl: 0x69D00,
    base: 0x69EAC,
    start: 0x69F2C,
    end: 0x69FAC,
    req: 0x69DD0,
    ack: 0x69E18,
};

/// PTE bits (docs/hw/amd-gpu.md §3.1).
pub const VALID: u64 = 1;
pub const SYSTEM: u64 = 1 << 1;
pub const RWX: u64 = (1 << 4) | (1 << 5) | (1 << 6);
pub const PDE_AS_PTE: u64 = 1 << 54;

/// The compute doorbell (index 3, byte 0x18) and the SDMA one (byte 0x800), docs/hw/amd-gpu.md §7.1
/// and §8.
pub const COMPUTE_DOORBELL: u64 = 0x18;
pub const SDMA_DOORBELL: u64 = 0x800;

/// PM4 type-3 header (docs/hw/amd-gpu.md §7.1).
pub fn pm4(op: u32, payload: u32) -> u32 {
    (3 << 30) | ((payload - 1) << 16) | (op << 8)
}

pub struct Rig {
    pub gpu: Navi31Model,
    pub sys: WindowMemory,
    next_table: u64,
    root: u64,
}

impl Rig {
    pub fn new() -> Self {
        Self::with(GpuConfig::default())
    }

    pub fn with(config: GpuConfig) -> Self {
        let gpu = Navi31Model::new(config);
        let mut rig = Rig {
            gpu,
            sys: WindowMemory::default(),
            next_table: PT_AREA + 0x1000,
            root: PT_AREA,
        };
        rig.zero_table(PT_AREA);
        rig
    }

    fn zero_table(&mut self, at: u64) {
        self.gpu.vram_write(at, &[0u8; 4096]);
    }

    fn read64(&self, at: u64) -> u64 {
        let mut b = [0u8; 8];
        self.gpu.vram_read(at, &mut b);
        u64::from_le_bytes(b)
    }

    /// Map `pages` 4 KiB pages at `va` to `phys` (VRAM, or a bus address with `system`) by
    /// writing the 4-level tables (shifts 39/30/21/12, 512 × 8-byte entries) into VRAM.
    pub fn map(&mut self, va: u64, phys: u64, pages: u64, system: bool) {
        for p in 0..pages {
            let off = va + p * 4096 - VA_BASE;
            let mut table = self.root;
            for shift in [39u32, 30, 21] {
                let e = table + ((off >> shift) & 0x1FF) * 8;
                let mut entry = self.read64(e);
                if entry & VALID == 0 {
                    let t = self.next_table;
                    self.next_table += 4096;
                    self.zero_table(t);
                    entry = t | VALID;
                    self.gpu.vram_write(e, &entry.to_le_bytes());
                }
                table = entry & 0x0000_FFFF_FFFF_F000;
            }
            let pte = (phys + p * 4096) | VALID | RWX | if system { SYSTEM } else { 0 };
            let e = table + ((off >> 12) & 0x1FF) * 8;
            self.gpu.vram_write(e, &pte.to_le_bytes());
        }
    }

    /// Program GC context 0 (depth 3, root table, VA range) and flush the TLB (docs/hw/amd-gpu.md
    /// §3.1).
    pub fn enable_gc_vm(&mut self) {
        self.enable_vm(GC_HUB);
    }

    /// The same for the MM hub (the PSP's view).
    pub fn enable_mm_vm(&mut self) {
        self.enable_vm(MM_HUB);
    }

    fn enable_vm(&mut self, hub: Hub) {
        let g = &self.gpu;
        g.reg_write(hub.base, (self.root | 1) as u32);
        g.reg_write(hub.base + 4, (self.root >> 32) as u32);
        g.reg_write(hub.start, (VA_BASE >> 12) as u32);
        g.reg_write(hub.start + 4, (VA_BASE >> 44) as u32);
        let end = (VA_BASE + (1u64 << 44) - 1) >> 12;
        g.reg_write(hub.end, end as u32);
        g.reg_write(hub.end + 4, (end >> 32) as u32);
        g.reg_write(hub.cntl, 0x180_0000 | (3 << 1) | 1);
        g.reg_write(hub.req, 0xF8_0001);
        assert_eq!(g.reg_read(hub.ack) & 1, 1, "invalidate ACK for VMID 0");
    }

    /// Activate the compute HQD (me 1, pipe 0, queue 0) on a ring at `ring_va` of `dwords` dwords
    /// with the doorbell at index 3 (docs/hw/amd-gpu.md §7.1).
    pub fn compute_queue(&mut self, ring_va: u64, dwords: u64) {
        let g = &self.gpu;
        g.reg_write(GRBM_GFX_CNTL, 1 << 2);
        g.reg_write(CP_HQD_PQ_BASE, (ring_va >> 8) as u32);
        g.reg_write(CP_HQD_PQ_BASE_HI, (ring_va >> 40) as u32);
        g.reg_write(CP_HQD_PQ_CONTROL, (5 << 8) | (dwords.trailing_zeros() - 1));
        g.reg_write(CP_HQD_PQ_DOORBELL_CONTROL, (1 << 30) | (6 << 2));
        g.reg_write(CP_HQD_ACTIVE, 1);
        assert_eq!(g.reg_read(CP_HQD_ACTIVE), 1);
        g.reg_write(GRBM_GFX_CNTL, 0);
    }

    /// Activate SDMA queue 0 on a ring at `ring_va` of `bytes` bytes, doorbell at byte 0x800.
    pub fn sdma_queue(&mut self, ring_va: u64, bytes: u64) {
        let g = &self.gpu;
        g.reg_write(SDMA0_QUEUE0_RB_BASE, (ring_va >> 8) as u32);
        g.reg_write(SDMA0_QUEUE0_RB_BASE + 4, (ring_va >> 40) as u32);
        g.reg_write(SDMA0_QUEUE0_DOORBELL_OFFSET, 512 << 2);
        g.reg_write(SDMA0_QUEUE0_DOORBELL, 1 << 28);
        let rb_size = (bytes / 4).trailing_zeros();
        g.reg_write(
            SDMA0_QUEUE0_RB_CNTL,
            (1 << 23) | (1 << 12) | (rb_size << 1) | 1,
        );
    }

    /// Write dwords into VRAM at physical `at`.
    pub fn put(&self, at: u64, dwords: &[u32]) {
        let bytes: Vec<u8> = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
        self.gpu.vram_write(at, &bytes);
    }

    pub fn get32(&self, at: u64) -> u32 {
        let mut b = [0u8; 4];
        self.gpu.vram_read(at, &mut b);
        u32::from_le_bytes(b)
    }

    pub fn get64(&self, at: u64) -> u64 {
        self.read64(at)
    }

    pub fn service(&mut self) {
        self.gpu.service(&mut self.sys);
    }
}
