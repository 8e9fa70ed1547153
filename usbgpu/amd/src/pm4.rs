//! PM4 type-3 packet encoders for the compute ring and the indirect buffer (docs/hw/amd-driver.md
//! §9.1).
//!
//! A packet is a header `3<<30 | (body_dwords−1)<<16 | opcode<<8` followed by its body. Encoders
//! append to a caller-owned [`Pm4`] buffer (heap use only while recording, never per run); the two
//! packets the submit path writes to the ring on every run ([`write_indirect_buffer`],
//! [`write_release_mem`]) also write into a caller's fixed array, without allocating.
use super::regs::Reg;

/// Opcodes used by the driver.
pub mod op {
    /// No operation (body ignored).
    pub const NOP: u8 = 0x10;
    /// Start a compute grid.
    pub const DISPATCH_DIRECT: u8 = 0x15;
    /// Write inline dwords to memory or registers.
    pub const WRITE_DATA: u8 = 0x37;
    /// Wait on a memory or register value.
    pub const WAIT_REG_MEM: u8 = 0x3C;
    /// Execute another command buffer.
    pub const INDIRECT_BUFFER: u8 = 0x3F;
    /// Pipeline event.
    pub const EVENT_WRITE: u8 = 0x46;
    /// End-of-pipe write (signal, timestamp).
    pub const RELEASE_MEM: u8 = 0x49;
    /// Cache maintenance before a dispatch.
    pub const ACQUIRE_MEM: u8 = 0x58;
    /// Write shader (SH) registers.
    pub const SET_SH_REG: u8 = 0x76;
}

/// First SH register (dword address) addressable by `SET_SH_REG`.
pub const SH_REG_BASE: u32 = 0x2C00;
/// `INDIRECT_BUFFER` valid bit in the size dword.
pub const IB_VALID: u32 = 1 << 23;
/// `CACHE_FLUSH_AND_INV_TS_EVENT`.
pub const EVENT_CACHE_FLUSH_AND_INV_TS: u32 = 20;
/// `RELEASE_MEM` event index: end of pipe.
pub const EVENT_INDEX_END_OF_PIPE: u32 = 5;
/// `CS_PARTIAL_FLUSH`.
pub const EVENT_CS_PARTIAL_FLUSH: u32 = 7;
/// `RELEASE_MEM` data_sel: 32-bit value / 64-bit value / 64-bit GPU clock.
pub const DATA_SEL_32: u32 = 1;
/// 64-bit value.
pub const DATA_SEL_64: u32 = 2;
/// The GPU's 64-bit timestamp counter.
pub const DATA_SEL_TIMESTAMP: u32 = 3;
/// `WAIT_REG_MEM` compare functions.
pub const FUNC_EQ: u32 = 3;
/// Greater or equal.
pub const FUNC_GEQ: u32 = 5;
/// GCR bits of ACQUIRE_MEM: GLM wb+inv, GLK wb+inv, GLV inv, GL1 inv (docs/hw/amd-driver.md §9.1).
pub const GCR_DISPATCH: u32 = (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9);
/// DISPATCH_INITIATOR: COMPUTE_SHADER_EN | FORCE_START_AT_000 | CS_W32_EN.
pub const INITIATOR_WAVE32: u32 = 1 | (1 << 2) | (1 << 15);

/// `WRITE_DATA` control dword for memory: `dst_sel` 5 (memory, bits 11:8) with `wr_confirm` (bit 20:
/// the CP waits for the write to complete before the next packet), address incrementing, engine ME
/// (docs/hw/amd-driver.md §9.1).
pub const WRITE_DATA_MEM: u32 = (5 << 8) | (1 << 20);
/// Most data dwords the driver puts in one `WRITE_DATA` packet.
pub const WRITE_DATA_MAX: usize = 512;

/// Type-3 header for `body` dwords.
pub const fn header(opcode: u8, body: usize) -> u32 {
    (3 << 30) | (((body as u32) - 1) << 16) | ((opcode as u32) << 8)
}

/// Dwords of an `INDIRECT_BUFFER` packet (header and 3 body dwords).
pub const INDIRECT_BUFFER_DWORDS: usize = 4;
/// Dwords of a `RELEASE_MEM` packet (header and 7 body dwords).
pub const RELEASE_MEM_DWORDS: usize = 8;

/// `INDIRECT_BUFFER` of `dwords` (bits 19:0) at the dword-aligned GPU VA `addr`, into `out`
/// (docs/hw/amd-driver.md §9.1).
pub fn write_indirect_buffer(out: &mut [u32; INDIRECT_BUFFER_DWORDS], addr: u64, dwords: u32) {
    *out = [
        header(op::INDIRECT_BUFFER, INDIRECT_BUFFER_DWORDS - 1),
        addr as u32,
        (addr >> 32) as u32,
        (dwords & 0xF_FFFF) | IB_VALID,
    ];
}

/// `RELEASE_MEM` at end of pipe after a cache flush: write `value` (or the GPU clock, per
/// `data_sel`) to `addr`, no interrupt, into `out` (docs/hw/amd-driver.md §9.1).
pub fn write_release_mem(
    out: &mut [u32; RELEASE_MEM_DWORDS],
    addr: u64,
    value: u64,
    data_sel: u32,
) {
    *out = [
        header(op::RELEASE_MEM, RELEASE_MEM_DWORDS - 1),
        EVENT_CACHE_FLUSH_AND_INV_TS | (EVENT_INDEX_END_OF_PIPE << 8),
        (data_sel & 7) << 29,
        addr as u32,
        (addr >> 32) as u32,
        value as u32,
        (value >> 32) as u32,
        0,
    ];
}

/// Append `WRITE_DATA` packets writing `data` to memory at the dword-aligned GPU VA `addr`, at most
/// [`WRITE_DATA_MAX`] dwords each; pushes into `out` (no allocation when `out` has the capacity:
/// [`write_data_dwords`] of `data.len()` more dwords).
pub fn write_data_mem(out: &mut Vec<u32>, addr: u64, data: &[u32]) {
    for (i, piece) in data.chunks(WRITE_DATA_MAX).enumerate() {
        let at = addr + 4 * (i * WRITE_DATA_MAX) as u64;
        out.push(header(op::WRITE_DATA, 3 + piece.len()));
        out.push(WRITE_DATA_MEM);
        out.push(at as u32);
        out.push((at >> 32) as u32);
        out.extend_from_slice(piece);
    }
}

/// Ring dwords [`write_data_mem`] takes for `n` data dwords.
pub const fn write_data_dwords(n: usize) -> usize {
    n + 4 * n.div_ceil(WRITE_DATA_MAX)
}

/// The absolute dword address of a GC seg-0 register given the GC seg-0 base.
pub const fn reg_dword(gc_seg0_base: u64, reg: Reg) -> u32 {
    (gc_seg0_base + reg.offset as u64) as u32
}

/// A PM4 stream under construction.
#[derive(Clone, Debug, Default)]
pub struct Pm4 {
    /// The dwords so far.
    pub dw: Vec<u32>,
    /// GC segment-0 base (dwords), to turn [`Reg`]s into SH offsets.
    pub gc_base: u64,
}

impl Pm4 {
    /// An empty stream for a GC whose segment-0 base is `gc_base`.
    pub fn new(gc_base: u64) -> Pm4 {
        Pm4 {
            dw: Vec::new(),
            gc_base,
        }
    }

    fn pkt(&mut self, opcode: u8, body: &[u32]) {
        self.dw.push(header(opcode, body.len()));
        self.dw.extend_from_slice(body);
    }

    /// `SET_SH_REG` of consecutive registers starting at `reg`.
    pub fn set_sh(&mut self, reg: Reg, values: &[u32]) {
        let off = reg_dword(self.gc_base, reg) - SH_REG_BASE;
        self.dw.push(header(op::SET_SH_REG, values.len() + 1));
        self.dw.push(off);
        self.dw.extend_from_slice(values);
    }

    /// `ACQUIRE_MEM` over all memory with the dispatch cache maintenance.
    pub fn acquire_mem(&mut self) {
        // coher_cntl, size lo, size hi (24 bits), base lo, base hi, poll interval, GCR control.
        self.pkt(
            op::ACQUIRE_MEM,
            &[0, 0xFFFF_FFFF, 0x00FF_FFFF, 0, 0, 0x0A, GCR_DISPATCH],
        );
    }

    /// `DISPATCH_DIRECT` of a `grid` with `initiator`.
    pub fn dispatch_direct(&mut self, grid: [u32; 3], initiator: u32) {
        self.pkt(op::DISPATCH_DIRECT, &[grid[0], grid[1], grid[2], initiator]);
    }

    /// `EVENT_WRITE` of `event` with `index`.
    pub fn event_write(&mut self, event: u32, index: u32) {
        self.pkt(op::EVENT_WRITE, &[event | (index << 8)]);
    }

    /// `RELEASE_MEM` at end of pipe: write `value` (or the clock, per `data_sel`) to `addr`.
    pub fn release_mem(&mut self, addr: u64, value: u64, data_sel: u32) {
        let mut p = [0; RELEASE_MEM_DWORDS];
        write_release_mem(&mut p, addr, value, data_sel);
        self.dw.extend_from_slice(&p);
    }

    /// `WAIT_REG_MEM` on memory: wait until `(mem & mask) func reference`.
    pub fn wait_mem(&mut self, addr: u64, reference: u32, mask: u32, func: u32) {
        self.pkt(
            op::WAIT_REG_MEM,
            &[
                func | (1 << 4),
                addr as u32,
                (addr >> 32) as u32,
                reference,
                mask,
                4,
            ],
        );
    }

    /// `WRITE_DATA` of `data` to memory at `addr`.
    pub fn write_data(&mut self, addr: u64, data: &[u32]) {
        write_data_mem(&mut self.dw, addr, data);
    }

    /// `INDIRECT_BUFFER` of `dwords` at `addr`.
    pub fn indirect_buffer(&mut self, addr: u64, dwords: u32) {
        let mut p = [0; INDIRECT_BUFFER_DWORDS];
        write_indirect_buffer(&mut p, addr, dwords);
        self.dw.extend_from_slice(&p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regs;

    #[test]
    fn headers_and_sh_offsets_follow_the_fact_sheet() {
        // §8.1: header = 3<<30 | (ndw−1)<<16 | opcode<<8.
        assert_eq!(header(op::DISPATCH_DIRECT, 4), 0xC003_1500);
        assert_eq!(header(op::INDIRECT_BUFFER, 3), 0xC002_3F00);
        // COMPUTE_PGM_LO is BAR5 byte 0xB830 (§6) = dword 0x2E0C → SH offset 0x20C.
        let mut p = Pm4::new(0x1260);
        p.set_sh(regs::COMPUTE_PGM_LO, &[0x1234, 0]);
        assert_eq!(p.dw, vec![0xC002_7600, 0x20C, 0x1234, 0]);
    }

    #[test]
    fn write_data_follows_the_fact_sheet_and_splits_long_runs() {
        // docs/hw/amd-gpu.md §7.1: WRITE_DATA 0x37, dst_sel bits 11:8 = 5 (memory), dw2/dw3 address.
        let mut v = Vec::new();
        write_data_mem(&mut v, 0x2000_0000_1234 & !3, &[7, 8]);
        assert_eq!(v, [0xC004_3700, 0x0010_0500, 0x0000_1234, 0x2000, 7, 8]);
        v.clear();
        let data: Vec<u32> = (0..(WRITE_DATA_MAX as u32 + 3)).collect();
        write_data_mem(&mut v, 0x1000, &data);
        assert_eq!(v.len(), write_data_dwords(data.len()));
        let second = 4 + WRITE_DATA_MAX;
        assert_eq!(v[second], header(op::WRITE_DATA, 3 + 3));
        assert_eq!(v[second + 2], 0x1000 + 4 * WRITE_DATA_MAX as u32);
        assert_eq!(v[second + 4..], [512, 513, 514]);
    }

    #[test]
    fn indirect_buffer_sets_the_valid_bit() {
        let mut p = Pm4::new(0x1260);
        p.indirect_buffer(0x1_2345_6700, 40);
        assert_eq!(p.dw[1..], [0x2345_6700, 1, 40 | (1 << 23)]);
    }
}
