//! Operand fields several categories share: register numbers (`#reg-gpr`), the plain GPRs the blob forms
//! insist on, 8-bit cat6 operands and descriptors, the cat2/cat4 `#multisrc`, ALU destinations and the
//! `(nopN)`/`(r)` sharing of cat2/cat3.
use super::unknown::{Unknown, D};
use crate::bits::{bit, bits, sext};
use crate::instr::*;

/// The `#reg-gpr` destination/source: GPR 61 is a0, 62 is p0 (callers decide what those mean).
pub fn reg8(v: u64) -> RegNum {
    (v & 0xFF) as RegNum
}

/// A plain GPR (not a0/p0) that leaves room for `n` consecutive registers.
pub fn gpr(v: u64, n: u64) -> Option<RegNum> {
    (v + n <= 61 * 4).then_some(reg8(v))
}

/// An 8-bit cat6 operand: the immediate when `imm`, else a full register.
pub fn opnd(v: u64, imm: bool) -> Option<Opnd> {
    Some(if imm {
        Opnd::Imm(v as u8)
    } else {
        Opnd::Reg(gpr(v, 1)?)
    })
}

/// The a6xx cat6 descriptor operand (bits 41–48): mode (bits 6–7) 0 = immediate slot, 1/2 = register; bit 8 =
/// bindless with base bits 1–3 (else those bits are zero).
pub fn desc(w: u64) -> Option<Desc> {
    let mode = bits(w, 6, 7);
    if mode > 2 || (!bit(w, 8) && bits(w, 1, 3) != 0) {
        return None;
    }
    let v = bits(w, 41, 48);
    Some(Desc {
        base: bit(w, 8).then_some(bits(w, 1, 3) as u8),
        index: opnd(v, mode == 0)?,
    })
}

/// The 16-bit `#multisrc` of cat2/cat4 (`full` = full-precision sources).
pub fn multisrc(w: u64, v: u64, full: bool, r: bool) -> D<(Src, Mods)> {
    let unk = |why| Unknown { raw: w, why };
    let mods = Mods {
        neg: bit(v, 14),
        abs: bit(v, 15),
    };
    let half = !full;
    let s = match bits(v, 11, 13) {
        0b000 => {
            if bits(v, 8, 9) != 0 {
                return Err(unk("gpr source with reserved bits set"));
            }
            Src::Reg {
                num: reg8(v),
                half,
                r,
                last: bit(v, 10),
            }
        }
        0b010 | 0b110 => Src::Const {
            num: bits(v, 0, 10) as u16,
            half,
            r,
        },
        0b001 => {
            let off = sext(bits(v, 0, 9), 10) as i16;
            if bit(v, 10) {
                Src::RelConst { off, half, r }
            } else {
                Src::RelReg { off, half, r }
            }
        }
        0b100 => Src::Imm {
            val: sext(bits(v, 0, 10), 11) as i32,
            half,
            r,
        },
        0b101 => {
            let idx = bits(v, 0, 9);
            if idx > 11 {
                return Err(unk("float lookup-table immediate index above 11"));
            }
            Src::Flut {
                idx: idx as u8,
                half: bit(v, 10),
                r,
            }
        }
        _ => return Err(unk("multisrc kind not supported")),
    };
    Ok((s, mods))
}

/// ALU destination; `half` applies only below p0 (#dest-half: DST ≤ 0xf7).
pub fn alu_dst(d: u64, half: bool) -> Dst {
    let half = half && d <= 0xF7;
    if d >> 2 == 62 {
        Dst::Pred((d & 3) as u8)
    } else {
        Dst::Reg { num: reg8(d), half }
    }
}

/// The `(nopN)` / `(r)` sharing of cat2/cat3: with REPEAT 0 the two (r) bits count delay slots instead.
pub fn nop_or_r(r1: bool, r2: bool, repeat: u8) -> (u8, bool, bool) {
    if repeat == 0 && (r1 || r2) {
        (r1 as u8 | (r2 as u8) << 1, false, false)
    } else {
        (0, r1, r2)
    }
}
