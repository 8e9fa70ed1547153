//! Bits → [`Ext`] for the further blob-compiler forms the interpreter executes (field layouts in
//! docs/hw/adreno-kgsl-pm4.md §16.9, semantics in §16.10): the wave-level instructions (`getone`, `getlast`,
//! `movmsk`, `quad_shuffle`, `getfiberid`, `shfl`), local `inc`/`dec`/`cmpxchg` and global atomics, `resinfo`,
//! the typed 1-D `ldib` and the non-bindless 2-D `sam`. Only canonical encodings are taken (unused fields zero, every word one that
//! `blob::describe` names), so whatever is accepted prints exactly as Mesa prints it; the rest stays refused.
use super::blob::describe;
use super::instr::*;

fn bits(w: u64, lo: u32, hi: u32) -> u64 {
    (w >> lo) & ((1u64 << (hi - lo + 1)) - 1)
}

fn bit(w: u64, b: u32) -> bool {
    (w >> b) & 1 == 1
}

fn reg(v: u64) -> RegNum {
    (v & 0xFF) as RegNum
}

/// A plain GPR (not a0/p0) that leaves room for `n` consecutive registers.
fn gpr(v: u64, n: u64) -> Option<RegNum> {
    (v + n <= 61 * 4).then_some(reg(v))
}

fn wave(w: u64, op: WaveOp) -> Option<Ext> {
    describe(w)?;
    Some(Ext {
        raw: w,
        kind: ExtKind::Wave(op),
    })
}

/// `getone #imm` / `getlast.w8 #imm` (high cat0 group 5 / 4) without predicate or branch-type bits.
pub fn cat0(w: u64) -> Option<Ext> {
    if !bit(w, 49) || bits(w, 32, 39) != 0 || bits(w, 45, 47) != 0 || bit(w, 48) {
        return None;
    }
    let off = w as u32 as i32;
    match bits(w, 55, 58) {
        5 if bits(w, 52, 54) == 0 => wave(w, WaveOp::GetOne { off }),
        // The XML: the cluster-size field changes nothing observable, the cluster is always 8 fibers.
        4 => wave(w, WaveOp::GetLast { off }),
        _ => None,
    }
}

/// `movmsk.wW dst` (cat1 bits 57–58 = 11, u32 → u32, no source).
pub fn cat1(w: u64) -> Option<Ext> {
    if bits(w, 57, 58) != 0b11 || w as u32 != 0 || bits(w, 46, 56) != 0x033 || bits(w, 42, 45) != 0
    {
        return None;
    }
    let regs = bits(w, 40, 41) + 1;
    let dst = gpr(bits(w, 32, 39), regs)?;
    wave(
        w,
        WaveOp::MovMsk {
            dst,
            regs: regs as u8,
        },
    )
}

/// `sam` (cat5 opcode 3, no `.3d .a .s .o .p` flags, not bindless): the operand fields of `isam`, read by
/// decoding the same word with the isam opcode; bit 18 (isam's "not 1-D") is clear in every `sam` (Mesa matches
/// no `sam` with it set), the coordinates are two; f32 or f16 results.
fn sam(w: u64) -> Option<Ext> {
    if bit(w, 18) || bits(w, 48, 50) != 0 || bit(w, 52) || bit(w, 53) {
        return None;
    }
    let i = super::decode::decode(w & !(0x1F << 54)).ok()?;
    let Op::Isam {
        ty,
        wrmask,
        dst,
        coord,
        coord_half,
        samp,
        tex,
        inv_1d: _,
        s2en,
    } = i.op
    else {
        return None;
    };
    if !matches!(ty, Ty::F32 | Ty::F16) || wrmask == 0 {
        return None;
    }
    describe(w)?;
    Some(Ext {
        raw: w,
        kind: ExtKind::Sam(SamArgs {
            ty,
            wrmask,
            dst,
            coord,
            coord_half,
            samp,
            tex,
            s2en,
            bindless: None,
        }),
    })
}

/// `sam`, and `quad_shuffle.MODE (TY)(x)dst, src[, idx]` (cat5 opcode 31 with bit 53), one 32- or 16-bit
/// component whose source and destination precision agree.
pub fn cat5(w: u64) -> Option<Ext> {
    if bits(w, 54, 58) == 3 {
        return sam(w).or_else(|| super::blob_decode_ibo::sam_bindless(w));
    }
    if bits(w, 54, 58) != 31 || !bit(w, 53) || bits(w, 40, 43) != 1 {
        return None;
    }
    // No sampler/texture, flag or bindless bits.
    if bits(w, 17, 18) != 0 || bits(w, 21, 31) != 0 || bits(w, 47, 52) != 0 {
        return None;
    }
    let ty = Ty::from_bits(bits(w, 44, 46));
    let half = match ty {
        Ty::U32 | Ty::S32 | Ty::F32 => false,
        Ty::U16 | Ty::S16 | Ty::F16 => true,
        _ => return None,
    };
    if bit(w, 0) == half {
        return None;
    }
    let mode = bits(w, 19, 20) as u8;
    if mode != 0 && bits(w, 9, 16) != 0 {
        return None;
    }
    wave(
        w,
        WaveOp::Quad {
            mode,
            half,
            dst: gpr(bits(w, 32, 39), 1)?,
            src: gpr(bits(w, 1, 8), 1)?,
            idx: reg(bits(w, 9, 16)),
        },
    )
}

/// The cat6 forms of this module; None for everything else.
pub fn cat6(w: u64) -> Option<Ext> {
    let ty = Ty::from_bits(bits(w, 49, 51));
    if bit(w, 53) {
        return a6xx(w, ty);
    }
    // a3xx-layout atomics: bit 0 set, no SRC3 / binding, register operands, untyped 1-D, one component.
    let opc = bits(w, 54, 58);
    if !(16..=26).contains(&opc)
        || !bit(w, 0)
        || bits(w, 1, 13) != 0
        || bit(w, 22)
        || bit(w, 23)
        || bits(w, 40, 48) != 0
        || !matches!(ty, Ty::U32 | Ty::S32)
    {
        return None;
    }
    let global = bit(w, 52);
    let op = match opc {
        16 => RmwOp::Basic(AtomicOp::Add),
        17 => RmwOp::Basic(AtomicOp::Sub),
        18 => RmwOp::Basic(AtomicOp::Xchg),
        19 => RmwOp::Inc,
        20 => RmwOp::Dec,
        21 => RmwOp::CmpXchg,
        22 => RmwOp::Basic(AtomicOp::Min),
        23 => RmwOp::Basic(AtomicOp::Max),
        24 => RmwOp::Basic(AtomicOp::And),
        25 => RmwOp::Basic(AtomicOp::Or),
        _ => RmwOp::Basic(AtomicOp::Xor),
    };
    // The local add…xor forms are `blob_decode`'s; this module adds the local inc/dec/cmpxchg.
    if !global && matches!(op, RmwOp::Basic(_)) {
        return None;
    }
    describe(w)?;
    Some(Ext {
        raw: w,
        kind: ExtKind::Atomic {
            op,
            signed: ty == Ty::S32,
            global,
            dst: gpr(bits(w, 32, 39), 1)?,
            addr: gpr(bits(w, 14, 21), 2)?,
            src: gpr(bits(w, 24, 31), 2)?,
        },
    })
}

/// a6xx-layout forms (bit 53 set).
fn a6xx(w: u64, ty: Ty) -> Option<Ext> {
    let opc = bits(w, 54, 58);
    if opc == 27 && !bit(w, 52) && !bit(w, 0) && bits(w, 9, 22) == 0 {
        return shfl(w, ty);
    }
    // Immediate descriptor mode, not bindless, no offset / .rck bits.
    if opc != 0 || bits(w, 1, 8) != 0 || bits(w, 4, 5) != 0 || bit(w, 40) {
        return None;
    }
    let a6 = bits(w, 14, 19);
    let kind = match a6 {
        38 if !bit(w, 0) && bits(w, 20, 23) == 0b1100 && bits(w, 9, 13) == 0 => {
            if ty != Ty::U32 || bits(w, 24, 31) != 0 || bits(w, 41, 48) != 0 || bit(w, 52) {
                return None;
            }
            ExtKind::Wave(WaveOp::FiberId {
                dst: gpr(bits(w, 32, 39), 1)?,
            })
        }
        15 if !bit(w, 0) && bits(w, 20, 23) == 0b0110 && ty == Ty::U32 && bits(w, 12, 13) == 0 => {
            if bits(w, 24, 31) != 0 || bit(w, 52) {
                return None;
            }
            ExtKind::Resinfo {
                dst: gpr(bits(w, 32, 39), 3)?,
                slot: bits(w, 41, 48) as u8,
            }
        }
        // ldib.b.typed.1d.{f32,f16}.4.imm (the 2-D form is `blob_decode`'s).
        6 if bits(w, 20, 23) == 0b0110
            && bit(w, 11)
            && bits(w, 9, 10) == 0
            && bits(w, 12, 13) == 3
            && !bit(w, 52)
            && matches!(ty, Ty::F32 | Ty::F16) =>
        {
            ExtKind::Ldib1d {
                ty,
                dst: gpr(bits(w, 32, 39), 4)?,
                coord: gpr(bits(w, 24, 31), 1)?,
                slot: bits(w, 41, 48) as u8,
            }
        }
        _ => return None,
    };
    describe(w)?;
    Some(Ext { raw: w, kind })
}

/// `shfl.MODE.TY dst, src, lane` (a6xx cat6 opcode 27).
fn shfl(w: u64, ty: Ty) -> Option<Ext> {
    let mode = match bits(w, 45, 47) {
        1 => ShflMode::Xor,
        2 => ShflMode::Up,
        3 => ShflMode::Down,
        6 => ShflMode::RotUp,
        7 => ShflMode::RotDown,
        _ => return None,
    };
    let half = match ty {
        Ty::U32 | Ty::S32 | Ty::F32 => false,
        Ty::U16 | Ty::S16 | Ty::F16 => true,
        _ => return None,
    };
    if bits(w, 40, 44) != 0 || bit(w, 48) {
        return None;
    }
    let lane = if bit(w, 23) {
        Lane::Imm(bits(w, 24, 31) as u32)
    } else {
        Lane::Reg(gpr(bits(w, 24, 31), 1)?)
    };
    wave(
        w,
        WaveOp::Shfl {
            mode,
            half,
            dst: gpr(bits(w, 32, 39), 1)?,
            src: gpr(bits(w, 1, 8), 1)?,
            lane,
        },
    )
}
