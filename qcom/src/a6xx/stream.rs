//! The a6xx compute command-stream builder: tinygrad's `QCOMComputeQueue` primitives (docs/hw/adreno-kgsl-pm4.md §6.3, §7) as
//! functions appending dwords to a [`Sink`].
use super::layout::{KernelLayout, INLINE_TEXTURES};
use super::regs::{self, load_state as ls};
use crate::pm4::{event, op, pkt4_hdr, pkt7_hdr};

/// The stream ran out of room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamFull;

impl core::fmt::Display for StreamFull {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("command stream buffer is full")
    }
}

/// Somewhere to append dwords.
pub trait Sink {
    fn put(&mut self, dws: &[u32]) -> Result<(), StreamFull>;
    /// Dwords appended so far.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<const N: usize> Sink for heapless::Vec<u32, N> {
    fn put(&mut self, dws: &[u32]) -> Result<(), StreamFull> {
        self.extend_from_slice(dws).map_err(|_| StreamFull)
    }
    fn len(&self) -> usize {
        self.as_slice().len()
    }
}

#[cfg(feature = "std")]
impl Sink for std::vec::Vec<u32> {
    fn put(&mut self, dws: &[u32]) -> Result<(), StreamFull> {
        self.extend_from_slice(dws);
        Ok(())
    }
    fn len(&self) -> usize {
        self.as_slice().len()
    }
}

fn lo(a: u64) -> u32 {
    a as u32
}
fn hi(a: u64) -> u32 {
    (a >> 32) as u32
}

fn cmd<S: Sink + ?Sized>(s: &mut S, opcode: u8, payload: &[u32]) -> Result<(), StreamFull> {
    s.put(&[pkt7_hdr(opcode, payload.len() as u16)])?;
    s.put(payload)
}

fn reg<S: Sink + ?Sized>(s: &mut S, r: u32, vals: &[u32]) -> Result<(), StreamFull> {
    s.put(&[pkt4_hdr(r, vals.len() as u8)])?;
    s.put(vals)
}

/// A 64-bit address into the register pair starting at `r` (low dword first).
fn reg_addr<S: Sink + ?Sized>(s: &mut S, r: u32, addr: u64) -> Result<(), StreamFull> {
    reg(s, r, &[lo(addr), hi(addr)])
}

/// CP_EVENT_WRITE CACHE_FLUSH_TS: flush caches, then store `value` at `addr`.
fn flush_ts<S: Sink + ?Sized>(s: &mut S, addr: u64, value: u32) -> Result<(), StreamFull> {
    cmd(
        s,
        op::CP_EVENT_WRITE,
        &[event::CACHE_FLUSH_TS, lo(addr), hi(addr), value],
    )
}

/// CP_LOAD_STATE6_FRAG: load `units` of state type `st` into block `sb` from `addr`.
fn load_state<S: Sink + ?Sized>(
    s: &mut S,
    st: u32,
    sb: u32,
    units: u32,
    addr: u64,
) -> Result<(), StreamFull> {
    cmd(
        s,
        op::CP_LOAD_STATE6_FRAG,
        &[ls::d0(st, sb, units), lo(addr), hi(addr)],
    )
}

/// Dword counts of the primitives (docs/hw/adreno-kgsl-pm4.md §6.3), for budgeting.
pub mod size {
    pub const WAIT: usize = 7;
    pub const BARRIER: usize = 9;
    pub const TIMESTAMP: usize = 5;
    pub const SIGNAL: usize = 11;
    /// `exec` without images.
    pub const EXEC_BASE: usize = 76;
    /// `exec` of a CL kernel without images: no SP_CS_CONST_CONFIG_0 write (3 dwords), CP_RUN_OPENCL (2) instead of
    /// CP_EXEC_CS (5).
    pub const EXEC_BASE_CL: usize = 70;
    pub const EXEC_SAMPLERS: usize = 10;
    pub const EXEC_TEXTURES: usize = 7;
    pub const EXEC_UAVS: usize = 7;
}

/// `wait(sig, v)`: CP_WAIT_REG_MEM until the u32 at `addr` ≥ `value`. Returns the index of the REF dword.
pub fn wait<S: Sink + ?Sized>(s: &mut S, addr: u64, value: u32) -> Result<usize, StreamFull> {
    let at = s.len() + 4;
    cmd(
        s,
        op::CP_WAIT_REG_MEM,
        &[
            regs::WAIT_REG_MEM_GE_MEMORY,
            lo(addr),
            hi(addr),
            value,
            0xFFFF_FFFF,
            32,
        ],
    )?;
    Ok(at)
}

/// `memory_barrier()`: flush to `dummy`, invalidate, wait for memory writes, wait for idle.
pub fn memory_barrier<S: Sink + ?Sized>(s: &mut S, dummy: u64) -> Result<(), StreamFull> {
    flush_ts(s, dummy, 0)?;
    cmd(s, op::CP_EVENT_WRITE, &[event::CACHE_INVALIDATE])?;
    cmd(s, op::CP_WAIT_MEM_WRITES, &[])?;
    cmd(s, op::CP_WAIT_FOR_IDLE, &[])
}

/// `timestamp(sig)`: wait for idle, then store the 64-bit always-on counter at `addr`.
pub fn timestamp<S: Sink + ?Sized>(s: &mut S, addr: u64) -> Result<(), StreamFull> {
    cmd(s, op::CP_WAIT_FOR_IDLE, &[])?;
    cmd(
        s,
        op::CP_REG_TO_MEM,
        &[regs::REG_TO_MEM_ALWAYS_ON_64, lo(addr), hi(addr)],
    )
}

/// `signal(sig, v)` (a6xx): wait for idle, CACHE_FLUSH_TS storing `value` at `addr`, flush to `dummy`.
/// Returns the index of the value dword.
pub fn signal<S: Sink + ?Sized>(
    s: &mut S,
    addr: u64,
    value: u32,
    dummy: u64,
) -> Result<usize, StreamFull> {
    cmd(s, op::CP_WAIT_FOR_IDLE, &[])?;
    let at = s.len() + 4;
    flush_ts(s, addr, value)?;
    flush_ts(s, dummy, 0)?;
    Ok(at)
}

/// GPU addresses one dispatch refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchAddrs {
    /// Shader image.
    pub lib: u64,
    /// Private-memory stack object.
    pub stack: u64,
    /// Args region (constant file first).
    pub args: u64,
    /// Zeroed border-colour buffer.
    pub border: u64,
    /// Target of the closing CACHE_FLUSH_TS and the value stored there. tinygrad uses (DUMMY, 0); modelrt stores
    /// the 1-based dispatch index in a progress slot of the dummy object so a hang can name the kernel.
    pub flush: (u64, u32),
}

/// `exec(prg, args, G, L)`: the 24-step sequence of docs/hw/adreno-kgsl-pm4.md §7 for an IR3 kernel, or its CL-mode
/// form (§18) for a Qualcomm-compiled one (`k.cl`): ISAMMODE_CL, the program offset, no SP_CS_CONST_CONFIG_0, and
/// CP_RUN_OPENCL instead of CP_EXEC_CS. The caller has checked the launch with [`KernelLayout::check_launch`].
/// `threads` is the NDRANGE item count per dimension: `global * local`, or fewer when the last group is partial (a
/// fractional tinygrad global size: `int(g*l)` items in `ceil(g)` groups, docs/hw/adreno-kgsl-pm4.md "Fractional
/// global sizes"; CL mode only).
pub fn exec<S: Sink + ?Sized>(
    s: &mut S,
    k: &KernelLayout,
    a: &DispatchAddrs,
    global: [u32; 3],
    local: [u32; 3],
    threads: [u32; 3],
) -> Result<(), StreamFull> {
    cmd(s, op::CP_SET_MARKER, &[regs::MARKER_RM6_COMPUTE])?;
    reg(s, regs::SP_UPDATE_CNTL, &[regs::UPDATE_CS_STATE_UAV])?;
    reg(s, regs::SP_UPDATE_CNTL, &[0])?;
    reg(s, regs::SP_CS_TSIZE, &[0x80])?;
    reg(s, regs::SP_CS_USIZE, &[0x40])?;
    let (sp_mode, tpl1_mode) = if k.cl {
        (regs::SP_MODE_CNTL_CL, regs::TPL1_MODE_CNTL_CL)
    } else {
        (regs::SP_MODE_CNTL_IR3, regs::TPL1_MODE_CNTL_IR3)
    };
    reg(s, regs::SP_MODE_CNTL, &[sp_mode])?;
    reg(s, regs::SP_PERFCTR_SHADER_MASK, &[regs::PERFCTR_CS])?;
    reg(s, regs::TPL1_MODE_CNTL, &[tpl1_mode])?;
    reg(s, regs::TPL1_DBG_ECO_CNTL, &[0])?;
    cmd(s, op::CP_WAIT_FOR_IDLE, &[])?;
    let [gx, gy, gz] = global;
    let [lx, ly, lz] = local;
    let [tx, ty, tz] = threads;
    let ndrange0 = 3 | (lx - 1) << 2 | (ly - 1) << 12 | (lz - 1) << 22;
    reg(
        s,
        regs::SP_CS_NDRANGE_0,
        &[
            ndrange0,
            tx,
            0,
            ty,
            0,
            tz,
            0,
            regs::CONST_CONFIG_0_DEFAULT,
            regs::REGID_UNUSED,
            gx,
            gy,
            gz,
        ],
    )?;
    let cntl0 = k.hregs << 1 | k.fregs << 7 | k.branchstack << 14;
    reg(
        s,
        regs::SP_CS_CNTL_0,
        &[
            cntl0,
            regs::CS_CNTL_1_CONSTLEN_256 | k.shared_size,
            0,
            k.prg_offset,
            lo(a.lib),
            hi(a.lib),
            k.pvt_per_item,
            lo(a.stack),
            hi(a.stack),
            k.pvt_total,
        ],
    )?;
    load_state(s, ls::ST_CONSTANTS, ls::SB6_CS_SHADER, 256, a.args)?;
    load_state(s, ls::ST_SHADER, ls::SB6_CS_SHADER, k.instr_units, a.lib)?;
    reg(
        s,
        regs::SP_REG_PROG_ID_0,
        &[
            0xFCFC_FCFC,
            0xFCFC_FCFC,
            0xFCFC_FCFC,
            0xFC,
            regs::CS_CONST_CONFIG,
        ],
    )?;
    reg(s, regs::SP_CS_PVT_MEM_STACK_OFFSET, &[k.hw_stack_offset])?;
    reg(s, regs::SP_CS_INSTR_SIZE, &[k.instr_units])?;
    if k.samp_cnt > 0 {
        let samp = a.args + k.samp_off as u64;
        load_state(s, ls::ST_SHADER, ls::SB6_CS_TEX, k.samp_cnt, samp)?;
        reg_addr(s, regs::SP_CS_SAMPLER_BASE, samp)?;
        reg_addr(s, regs::TPL1_CS_BORDER_COLOR_BASE, a.border)?;
    }
    if k.tex_cnt > 0 {
        let t = a.args + k.tex_off as u64;
        // Only the first 16 descriptors load inline; the shader reads the rest at TEXMEMOBJ_BASE (§8.6).
        load_state(
            s,
            ls::ST_CONSTANTS,
            ls::SB6_CS_TEX,
            k.tex_cnt.min(INLINE_TEXTURES),
            t,
        )?;
        reg_addr(s, regs::SP_CS_TEXMEMOBJ_BASE, t)?;
    }
    if k.ibo_cnt > 0 {
        let u = a.args + k.ibo_off as u64;
        load_state(s, ls::ST6_UAV, ls::SB6_CS_SHADER, k.ibo_cnt, u)?;
        reg_addr(s, regs::SP_CS_UAV_BASE, u)?;
    }
    reg(
        s,
        regs::SP_CS_CONFIG,
        &[regs::CS_CONFIG_ENABLED | k.tex_cnt << 9 | k.samp_cnt << 17 | k.ibo_cnt << 22],
    )?;
    if k.cl {
        cmd(s, op::CP_RUN_OPENCL, &[0])?;
    } else {
        reg(
            s,
            regs::SP_CS_CONST_CONFIG_0,
            &[
                k.wgid | k.wgsz << 8 | regs::REGID_UNUSED << 16 | k.lid << 24,
                regs::REGID_UNUSED,
            ],
        )?;
        cmd(s, op::CP_EXEC_CS, &[0, gx, gy, gz])?;
    }
    flush_ts(s, a.flush.0, a.flush.1)
}

/// Dwords `exec` emits for `k` (docs/hw/adreno-kgsl-pm4.md §7 sizes).
pub fn exec_len(k: &KernelLayout) -> usize {
    (if k.cl {
        size::EXEC_BASE_CL
    } else {
        size::EXEC_BASE
    }) + if k.samp_cnt > 0 {
        size::EXEC_SAMPLERS
    } else {
        0
    } + if k.tex_cnt > 0 {
        size::EXEC_TEXTURES
    } else {
        0
    } + if k.ibo_cnt > 0 { size::EXEC_UAVS } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The §12 walk-through kernel (the selftest's `E_8_32_4`): c = a·3.7 + b, G = L = (32,1,1).
    fn walkthrough() -> KernelLayout {
        KernelLayout::new(&crate::selftest::kernel_meta()).unwrap()
    }

    fn payloads(dw: &[u32]) -> std::vec::Vec<(crate::pm4::Header, std::vec::Vec<u32>)> {
        crate::pm4::packets(dw)
            .map(|p| p.unwrap())
            .map(|p| (p.header, p.payload.to_vec()))
            .collect()
    }

    /// A type-4 register write of `v` from `reg`, as [`payloads`] returns it.
    fn r(reg: u32, v: &[u32]) -> (crate::pm4::Header, std::vec::Vec<u32>) {
        let count = v.len() as u8;
        (crate::pm4::Header::Type4 { reg, count }, v.to_vec())
    }

    #[test]
    fn exec_matches_spec_walkthrough() {
        use crate::pm4::Header::*;
        let (lib, stack, args, dummy) = (
            0x1_0000_1000u64,
            0x2_0000_0000u64,
            0x3_0000_0800u64,
            0x4_0000_0000u64,
        );
        let a = DispatchAddrs {
            lib,
            stack,
            args,
            border: 0x5_0000_0000,
            flush: (dummy, 0),
        };
        let mut s = std::vec::Vec::new();
        exec(
            &mut s,
            &walkthrough(),
            &a,
            [32, 1, 1],
            [32, 1, 1],
            [1024, 1, 1],
        )
        .unwrap();
        assert_eq!(s.len(), 76);
        let p = payloads(&s);
        let c = |opcode: u8, v: &[u32]| {
            (
                Type7 {
                    opcode,
                    count: v.len() as u16,
                },
                v.to_vec(),
            )
        };
        let expect = vec![
            c(0x65, &[8]),
            r(0xBB08, &[0x60]),
            r(0xBB08, &[0]),
            r(0xA9BA, &[0x80]),
            r(0xAA00, &[0x40]),
            r(0xAB00, &[0x5]),
            r(0xAE0F, &[0x20]),
            r(0xB309, &[0x2]),
            r(0xB600, &[0]),
            c(0x26, &[]),
            r(
                0xB990,
                &[0x7F, 0x400, 0, 1, 0, 1, 0, 0x00CC_C0CF, 0xFC, 0x20, 1, 1],
            ),
            r(0xA9B0, &[0x382, 0x41, 0, 0, 0x1000, 1, 0, 0, 2, 0]),
            c(0x34, &[0x4036_4000, 0x800, 3]),
            c(0x34, &[0x00F6_0000, 0x1000, 1]),
            r(
                0xB983,
                &[0xFCFC_FCFC, 0xFCFC_FCFC, 0xFCFC_FCFC, 0xFC, 0x100],
            ),
            r(0xA9BD, &[0x1000]),
            r(0xA9BC, &[3]),
            r(0xA9BB, &[0x100]),
            r(0xB997, &[0x00FC_FCC0, 0xFC]),
            c(0x33, &[0, 32, 1, 1]),
            c(0x46, &[4, 0, 4, 0]),
        ];
        assert_eq!(p, expect);
    }

    /// 32 textures + 1 UAV (as inception_v2's `--image` conv): values from ops_qcom's `exec` (LOAD_STATE6 of
    /// `min(16, tex_cnt)` texture descriptors, TEXMEMOBJ_BASE at the whole array, counts shifted unmasked into
    /// SP_CS_CONFIG) and the CP_LOAD_STATE6_0 / SP_CS_CONFIG field positions of docs/hw/adreno-kgsl-pm4.md §7, §8.6.
    #[test]
    fn more_than_16_textures_load_16_inline() {
        use crate::pm4::Header::*;
        let mut m = crate::selftest::kernel_meta();
        m.tex_cnt = 32;
        m.ibo_cnt = 1;
        m.tex_to_image = (0..32).collect();
        let k = KernelLayout::new(&m).unwrap();
        let a = DispatchAddrs {
            lib: 0x1_0000_1000,
            stack: 0x2_0000_0000,
            args: 0x3_0000_0800,
            border: 0x5_0000_0000,
            flush: (0x4_0000_0000, 0),
        };
        let mut s = std::vec::Vec::new();
        exec(&mut s, &k, &a, [1, 1, 1], [32, 1, 1], [32, 1, 1]).unwrap();
        assert_eq!(s.len(), exec_len(&k));
        let p = payloads(&s);
        let load = |v: &[u32]| {
            (
                Type7 {
                    opcode: 0x34,
                    count: 3,
                },
                v.to_vec(),
            )
        };
        let at = p
            .iter()
            .position(|x| *x == r(0xA9BC, &[3]))
            .expect("SP_CS_INSTR_SIZE");
        // ARGS = 0x3_0000_0800: textures at +2048, the UAV at +2048 + 32·64, samplers at +2048 + 33·64.
        let expect = [
            load(&[0x0816_0000, 0x1840, 3]), // ST_SHADER, indirect, SB6_CS_TEX, 32 samplers
            r(0xA9E2, &[0x1840, 3]),
            r(0xB180, &[0, 5]),
            load(&[0x0416_4000, 0x1000, 3]), // ST_CONSTANTS, indirect, SB6_CS_TEX, 16 descriptors
            r(0xA9E6, &[0x1000, 3]),         // SP_CS_TEXMEMOBJ_BASE: the whole 32-entry array
            load(&[0x0076_C000, 0x1800, 3]), // ST6_UAV, indirect, SB6_CS_SHADER, 1 descriptor
            r(0xA9F2, &[0x1800, 3]),
            // ENABLED | NTEX 32 | NSAMP 32 (carries into bit 22) | NUAV 1
            r(0xA9BB, &[0x0040_4100]),
        ];
        assert_eq!(p[at + 1..at + 1 + expect.len()], expect);
    }

    #[test]
    fn primitive_sizes_match_spec() {
        let mut s = std::vec::Vec::new();
        assert_eq!(wait(&mut s, 0x10, 5).unwrap(), 4);
        assert_eq!(s.len(), size::WAIT);
        assert_eq!(s[..7], [0x70BC_8006, 0x15, 0x10, 0, 5, 0xFFFF_FFFF, 32]);
        s.clear();
        memory_barrier(&mut s, 0x20).unwrap();
        assert_eq!(
            s,
            [
                0x7046_0004,
                4,
                0x20,
                0,
                0,
                0x7046_0001,
                0x31,
                0x7092_8000,
                0x7026_8000
            ]
        );
        s.clear();
        timestamp(&mut s, 0x1_0000_0008).unwrap();
        assert_eq!(s, [0x7026_8000, 0x703E_8003, 0x4008_0980, 8, 1]);
        s.clear();
        assert_eq!(signal(&mut s, 0x30, 7, 0x20).unwrap(), 5);
        assert_eq!(
            s,
            [
                0x7026_8000,
                0x7046_0004,
                4,
                0x30,
                0,
                7,
                0x7046_0004,
                4,
                0x20,
                0,
                0
            ]
        );
    }

    #[test]
    fn heapless_sink_reports_full() {
        let mut s: heapless::Vec<u32, 8> = heapless::Vec::new();
        assert_eq!(memory_barrier(&mut s, 0), Err(StreamFull));
    }
}
