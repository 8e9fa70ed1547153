//! A tiny hand assembler for the RDNA3 encodings the instruction tests need (field layouts of ISA
//! §16, the same ones the decoder golden test checks against LLVM). Operands are raw field
//! values: [`v`]`(n)` for VGPRs, [`s`]`(n)` for scalar-file entries, [`int`] for inline integers,
//! [`LIT`] for "literal follows".

/// VGPR `n` as a 9-bit source field.
pub fn v(n: u32) -> u32 {
    256 + n
}
/// Scalar-file entry `n` (s0–s105, 106 = vcc_lo, 124 = null, 126 = exec_lo).
pub fn s(n: u32) -> u32 {
    n
}
/// Inline integer constant −16..=64.
pub fn int(n: i32) -> u32 {
    if n >= 0 {
        128 + n as u32
    } else {
        (192 - n) as u32
    }
}
/// Inline float constants.
pub const HALF: u32 = 240;
pub const ONE: u32 = 242;
pub const TWO: u32 = 244;
/// A literal dword follows.
pub const LIT: u32 = 255;
pub const VCC: u32 = 106;
pub const NULL: u32 = 124;
pub const EXEC: u32 = 126;

pub fn sop1(op: u32, sdst: u32, s0: u32) -> u32 {
    0x17d << 23 | sdst << 16 | op << 8 | s0
}
pub fn sop2(op: u32, sdst: u32, s0: u32, s1: u32) -> u32 {
    0b10 << 30 | op << 23 | sdst << 16 | s1 << 8 | s0
}
pub fn sopc(op: u32, s0: u32, s1: u32) -> u32 {
    0x17e << 23 | op << 16 | s1 << 8 | s0
}
pub fn sopk(op: u32, sdst: u32, imm: u16) -> u32 {
    0xb << 28 | op << 23 | sdst << 16 | u32::from(imm)
}
pub fn sopp(op: u32, imm: i16) -> u32 {
    0x17f << 23 | op << 16 | u32::from(imm as u16)
}
pub fn vop1(op: u32, vdst: u32, src0: u32) -> u32 {
    0x3f << 25 | vdst << 17 | op << 9 | src0
}
pub fn vop2(op: u32, vdst: u32, src0: u32, vsrc1: u32) -> u32 {
    op << 25 | vdst << 17 | vsrc1 << 9 | src0
}
pub fn vopc(op: u32, src0: u32, vsrc1: u32) -> u32 {
    0x3e << 25 | op << 17 | vsrc1 << 9 | src0
}
/// VOP3 with `abs`/`neg` bit masks per source and the clamp bit.
pub fn vop3(op: u32, vdst: u32, src: [u32; 3], abs: u32, neg: u32, clamp: bool) -> [u32; 2] {
    [
        0x35 << 26 | op << 16 | u32::from(clamp) << 15 | abs << 8 | vdst,
        neg << 29 | src[2] << 18 | src[1] << 9 | src[0],
    ]
}
/// VOP3SD: a scalar carry/condition destination.
pub fn vop3sd(op: u32, vdst: u32, sdst: u32, src: [u32; 3]) -> [u32; 2] {
    [
        0x35 << 26 | op << 16 | sdst << 8 | vdst,
        src[2] << 18 | src[1] << 9 | src[0],
    ]
}
/// VOP3P with op_sel_hi bits (bit k for source k).
pub fn vop3p(op: u32, vdst: u32, src: [u32; 3], op_sel_hi: u32) -> [u32; 2] {
    [
        0xcc << 24 | op << 16 | (op_sel_hi >> 2 & 1) << 14 | vdst,
        (op_sel_hi & 3) << 27 | src[2] << 18 | src[1] << 9 | src[0],
    ]
}
/// VOPD `X :: Y` with 2-source halves (`vdsty` must differ from `vdstx` in bit 0).
pub fn vopd(opx: u32, vdstx: u32, x: [u32; 2], opy: u32, vdsty: u32, y: [u32; 2]) -> [u32; 2] {
    assert_ne!(
        vdstx & 1,
        vdsty & 1,
        "VOPD destinations need different parity"
    );
    [
        0x32 << 26 | opx << 22 | opy << 17 | (x[1] - 256) << 9 | x[0],
        vdstx << 24 | (vdsty >> 1) << 17 | (y[1] - 256) << 9 | y[0],
    ]
}
/// GLOBAL (seg 2) with a signed 13-bit offset; `saddr` = [`NULL`] means a 64-bit VGPR address.
pub fn global(op: u32, vdst: u32, addr: u32, data: u32, saddr: u32, offset: i32) -> [u32; 2] {
    [
        0x37 << 26 | op << 18 | 2 << 16 | (offset as u32 & 0x1fff),
        vdst << 24 | saddr << 16 | data << 8 | addr,
    ]
}
/// DS with a 16-bit offset.
pub fn ds(op: u32, vdst: u32, addr: u32, data0: u32, offset: u16) -> [u32; 2] {
    [
        0x36 << 26 | op << 18 | u32::from(offset),
        vdst << 24 | data0 << 8 | addr,
    ]
}
/// SMEM load from the SGPR pair at `sbase` (even) + byte offset, SOFFSET = null.
pub fn smem(op: u32, sdata: u32, sbase: u32, offset: u32) -> [u32; 2] {
    [
        0x3d << 26 | op << 18 | sdata << 6 | (sbase / 2),
        124 << 25 | offset,
    ]
}
/// SCRATCH (seg 1) with SADDR = off; `vaddr` = `Some(v)` sets SVE (a VGPR address), `None` = off.
pub fn scratch(op: u32, vdst: u32, vaddr: Option<u32>, data: u32, offset: i32) -> [u32; 2] {
    let (sve, addr) = vaddr.map_or((0, 0), |a| (1, a));
    [
        0x37 << 26 | op << 18 | 1 << 16 | (offset as u32 & 0x1fff),
        vdst << 24 | sve << 23 | NULL << 16 | data << 8 | addr,
    ]
}
/// VOP3P with every modifier: op_sel / op_sel_hi / neg_lo / neg_hi bit k for source k.
pub fn vop3p_mods(op: u32, vdst: u32, src: [u32; 3], sel: [u32; 4]) -> [u32; 2] {
    let [op_sel, op_sel_hi, neg_lo, neg_hi] = sel;
    [
        0xcc << 24 | op << 16 | (op_sel_hi >> 2 & 1) << 14 | op_sel << 11 | neg_hi << 8 | vdst,
        neg_lo << 29 | (op_sel_hi & 3) << 27 | src[2] << 18 | src[1] << 9 | src[0],
    ]
}
