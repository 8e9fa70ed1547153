//! The assembler and harness the blob-form execution tests share (`blob_wave.rs`, `blob_atomic.rs`,
//! `blob_uav.rs`): instruction words built from the field layouts of docs/hw/adreno-kgsl-pm4.md §16.9 (each
//! builder cross-checked against Mesa's text in `blob_wave.rs`), one flat GPU object at [`OUT`] with a
//! read-only view for threaded runs, and a runner that stores chosen registers per fiber.
// Each test crate uses a different subset of the builders.
#![allow(dead_code)]
use modelrt_ir3::{run, GpuMemory, Image, Launch, Program, SharedMemory, Ubo};

pub const OUT: u64 = 0x10_0000;
pub const WORDS: usize = 2048;

pub struct Mem(pub Vec<u8>);

pub fn offset(size: usize, addr: u64, len: usize) -> Result<usize, String> {
    let o = addr
        .checked_sub(OUT)
        .filter(|o| o + len as u64 <= size as u64);
    Ok(o.ok_or_else(|| format!("address {addr:#x} outside the test object"))? as usize)
}

impl GpuMemory for Mem {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        let o = offset(self.0.len(), addr, out.len())?;
        out.copy_from_slice(&self.0[o..o + out.len()]);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        let o = offset(self.0.len(), addr, data.len())?;
        self.0[o..o + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn shared_view(&self) -> Option<Box<dyn SharedMemory + '_>> {
        Some(Box::new(View(&self.0)))
    }
}

/// [`Mem`] read-only, so dispatches may run their batches on several threads.
pub struct View<'a>(pub &'a [u8]);

impl SharedMemory for View<'_> {
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        let o = offset(self.0.len(), addr, out.len())?;
        out.copy_from_slice(&self.0[o..o + out.len()]);
        Ok(())
    }
    fn check_write(&self, addr: u64, len: usize) -> Result<(), String> {
        offset(self.0.len(), addr, len).map(|_| ())
    }
}

pub fn r(n: u64, c: u64) -> u64 {
    n * 4 + c
}
pub const F32: u64 = 1;
pub const U32: u64 = 3;
pub const U16: u64 = 2;
pub const S32: u64 = 5;
pub const END: u64 = 0b0110 << 55;
pub const BAR: u64 = 7 << 61 | 1 << 49 | 1 << 51 | 1 << 53;

pub fn mov_imm(ty: u64, dst: u64, v: u32) -> u64 {
    v as u64 | dst << 32 | ty << 46 | ty << 50 | 0b10 << 53 | 1 << 61
}
pub fn mov_c(dst: u64, c: u64) -> u64 {
    c | dst << 32 | U32 << 46 | U32 << 50 | 0b01 << 53 | 1 << 61
}
/// cat1 conversion from a GPR.
pub fn cov(src_ty: u64, dst_ty: u64, dst: u64, src: u64) -> u64 {
    src | dst << 32 | dst_ty << 46 | src_ty << 50 | 1 << 61
}
pub fn alu_ri(opc: u64, dst: u64, s: u64, imm: i64) -> u64 {
    s | (0b100 << 11 | (imm as u64 & 0x7FF)) << 16 | dst << 32 | 1 << 52 | opc << 53 | 2 << 61
}
pub const ADD_U: u64 = 0b010000;
pub const MULL_U: u64 = 0b110010;
pub fn jump(off: i32) -> u64 {
    off as u32 as u64 | 0b0010 << 55
}
/// `getone #off` (cat0 high group, opcode 5).
pub fn getone(off: i32) -> u64 {
    off as u32 as u64 | 1 << 49 | 5 << 55
}
/// `getlast.w8 #off` (cat0 high group, opcode 4, W = 2 → 2 << 2 = 8).
pub fn getlast(off: i32) -> u64 {
    off as u32 as u64 | 1 << 49 | 2 << 52 | 4 << 55
}
/// `movmsk.w(32·regs) dst` (cat1 bits 57–58 = 11, u32 → u32, REPEAT = regs − 1).
pub fn movmsk(dst: u64, regs: u64) -> u64 {
    1 << 61 | 3 << 57 | 0x033 << 46 | (regs - 1) << 40 | dst << 32
}
/// `getfiberid.u32 dst` (a6xx cat6 opcode 38, bits 22–23 set).
pub fn getfiberid(dst: u64) -> u64 {
    6 << 61 | 1 << 53 | U32 << 49 | dst << 32 | 0b1100 << 20 | 38 << 14
}
/// `shfl.MODE.TY dst, src, lane` (opcode 27 in bits 54–58, bit 53; lane immediate when `imm`).
pub fn shfl(mode: u64, ty: u64, dst: u64, src: u64, lane: u64, imm: bool) -> u64 {
    6 << 61
        | 27 << 54
        | 1 << 53
        | ty << 49
        | mode << 45
        | dst << 32
        | lane << 24
        | (imm as u64) << 23
        | src << 1
}
/// `quad_shuffle.MODE (u32)(x)dst, src[, idx]` (cat5 opcode 31 with bit 53, full sources).
pub fn quad(mode: u64, dst: u64, src: u64, idx: u64) -> u64 {
    5 << 61
        | 31 << 54
        | 1 << 53
        | U32 << 44
        | 1 << 40
        | dst << 32
        | mode << 19
        | idx << 9
        | src << 1
        | 1
}
/// `stg.a.u32 g[base + (idx << 2)], src, 1`.
pub fn stg_idx(base: u64, idx: u64, src: u64) -> u64 {
    src << 1
        | 1 << 23
        | 1 << 24
        | idx << 32
        | 1 << 40
        | base << 41
        | U32 << 49
        | 1 << 52
        | 3 << 54
        | 6 << 61
}
/// a3xx-layout atomic `atomic[.g].OP.untyped.1d.TY.1 dst, addr, src` (global when `g`).
pub fn atomic(opc: u64, ty: u64, g: bool, dst: u64, addr: u64, src: u64) -> u64 {
    6 << 61 | opc << 54 | (g as u64) << 52 | ty << 49 | dst << 32 | src << 24 | addr << 14 | 1
}
/// `stl.u32 l[addr + 0], src, 1` / `ldl.u32 dst, l[addr + 0], 1`.
pub fn stl(addr: u64, src: u64) -> u64 {
    src << 1 | 1 << 23 | 1 << 24 | 1 << 40 | addr << 41 | U32 << 49 | 4 << 54 | 6 << 61
}
pub fn ldl(dst: u64, addr: u64) -> u64 {
    1 | addr << 14 | 1 << 23 | 1 << 24 | dst << 32 | U32 << 49 | 1 << 54 | 6 << 61
}
/// `resinfo.b.untyped.{d}d.u32.1.imm dst, slot`.
pub fn resinfo(d: u64, dst: u64, slot: u64) -> u64 {
    6 << 61 | 1 << 53 | U32 << 49 | slot << 41 | dst << 32 | 0b0110 << 20 | 15 << 14 | (d - 1) << 9
}
/// `ldib.b.typed.1d.TY.4.imm dst, coord, slot`.
pub fn ldib1d(ty: u64, dst: u64, coord: u64, slot: u64) -> u64 {
    6 << 61
        | 1 << 53
        | ty << 49
        | slot << 41
        | dst << 32
        | coord << 24
        | 0b110 << 20
        | 6 << 14
        | 3 << 12
        | 1 << 11
}

/// r(reg).xy ← OUT + byte (c0.x = OUT, c0.y = 0).
pub fn addr_in(reg: u64, byte: i64) -> [u64; 2] {
    [alu_ri(ADD_U, reg, 1 << 12, byte), mov_c(reg + 1, 1)]
}

/// Appends "dword[base_dw + k·128 + lid] = src_k" for each source register and `end` (lid in r0.x).
pub fn store(mut p: Vec<u64>, srcs: &[u64]) -> Vec<u64> {
    // The immediates are 11-bit signed: the base moves on by 512 bytes per column.
    p.extend(addr_in(r(40, 0), 0));
    for (k, &s) in srcs.iter().enumerate() {
        if k > 0 {
            p.push(alu_ri(ADD_U, r(40, 0), r(40, 0), 512));
        }
        p.push(stg_idx(r(40, 0), r(0, 0), s));
    }
    p.push(END);
    p
}

/// Runs `words` on work groups of `local` fibers (`groups` of them along x); memory starts as `init`.
pub fn exec(
    words: &[u64],
    local: u32,
    groups: u32,
    init: &[u32],
    uavs: &[Image],
) -> Result<Vec<u32>, String> {
    exec_tex(words, (local, groups), init, uavs, (&[], &[]))
}

/// `exec` with textures and sampler descriptors.
pub fn exec_tex(
    words: &[u64],
    (local, groups): (u32, u32),
    init: &[u32],
    uavs: &[Image],
    (textures, samplers): (&[Image], &[[u32; 4]]),
) -> Result<Vec<u32>, String> {
    exec_all(
        words,
        (local, groups),
        init,
        (uavs, textures, samplers),
        (&[], [0; 5]),
    )
}

/// `exec` with uniform buffers bound to the UBO slots (`ldc`, `ldc.k`).
pub fn exec_ubo(
    words: &[u64],
    (local, groups): (u32, u32),
    init: &[u32],
    ubos: &[Ubo],
) -> Result<Vec<u32>, String> {
    exec_all(
        words,
        (local, groups),
        init,
        (&[], &[], &[]),
        (ubos, [0; 5]),
    )
}

/// `exec` with UAVs by slot and SP_CS_BINDLESS_BASE[0…4] register values.
pub fn exec_bindless(
    words: &[u64],
    (local, groups): (u32, u32),
    init: &[u32],
    uavs: &[Image],
    bindless: [u64; 5],
) -> Result<Vec<u32>, String> {
    exec_all(
        words,
        (local, groups),
        init,
        (uavs, &[], &[]),
        (&[], bindless),
    )
}

#[allow(clippy::type_complexity)]
fn exec_all(
    words: &[u64],
    (local, groups): (u32, u32),
    init: &[u32],
    (uavs, textures, samplers): (&[Image], &[Image], &[[u32; 4]]),
    (ubos, bindless): (&[Ubo], [u64; 5]),
) -> Result<Vec<u32>, String> {
    let image: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let prog = Program::decode("wave", &image)?;
    let mut c = vec![OUT as u32, 0, 0, 0];
    c.resize(1024, 0);
    let mut mem = Mem(vec![0u8; WORDS * 4]);
    for (k, v) in init.iter().enumerate() {
        mem.0[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
    }
    let launch = Launch {
        consts: &c,
        groups: [groups, 1, 1],
        local: [local, 1, 1],
        wgid_reg: Some(192),
        lid_reg: Some(0),
        textures,
        uavs,
        samplers,
        ubos,
        bindless,
        wgsize_reg: None,
        wgoffset_reg: None,
        shared_bytes: 256,
        items: None,
    };
    run(&prog, &launch, &mut mem)?;
    Ok(mem
        .0
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

pub fn col(out: &[u32], k: usize, n: usize) -> Vec<u32> {
    out[128 * k..128 * k + n].to_vec()
}

/// `sam (TY)(MASK)dst, coord, s#samp, t#tex` (cat5 opcode 3, full coordinates; bit 18 clear as in the blob's).
pub fn sam(ty: u64, mask: u64, dst: u64, coord: u64, samp: u64, tex: u64) -> u64 {
    5 << 61 | 3 << 54 | ty << 44 | mask << 40 | dst << 32 | tex << 25 | samp << 21 | coord << 1 | 1
}

/// A 4x2 RGBA32F texture at dword 512 (pitch 64): texel (x, y) = (x + 10·y, 100 + x, −1, 0.5).
pub fn tex4x2() -> (Vec<u32>, Image) {
    let mut init = vec![0u32; 512];
    for y in 0..2 {
        for x in 0..4 {
            init.extend([(x + 10 * y) as f32, 100.0 + x as f32, -1.0, 0.5].map(f32::to_bits));
        }
    }
    let img = Image {
        base: OUT + 2048,
        width: 4,
        height: 2,
        pitch: 64,
        half: false,
    };
    (init, img)
}

/// `stib.b.typed.{d}d.TY.4.imm src, coord, slot`.
pub fn stib(d: u64, ty: u64, src: u64, coord: u64, slot: u64) -> u64 {
    6 << 61
        | 1 << 53
        | ty << 49
        | slot << 41
        | src << 32
        | coord << 24
        | 0b110 << 20
        | 29 << 14
        | 3 << 12
        | 1 << 11
        | (d - 1) << 9
}
