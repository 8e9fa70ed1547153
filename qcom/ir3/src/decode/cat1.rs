//! cat1, moves: `mov`/`cov`/`mova` with every source kind, the multi-moves `swz`/`gat`/`sct`, and the blob
//! compiler's `movmsk` (the wave's active-fiber mask, docs/hw/adreno-kgsl-pm4.md §16.10).
use super::operand::{gpr, reg8};
use super::unknown::{or_ext, Unknown, D};
use crate::bits::{bit, bits, sext};
use crate::instr::*;

/// A cat1 word: Mesa's subset, else `movmsk`.
pub fn decode(w: u64) -> D<Instr> {
    or_ext(w, mesa(w), movmsk, true)
}

fn mesa(w: u64) -> D<Instr> {
    let unk = |why| Unknown { raw: w, why };
    if bit(w, 42) {
        return Err(unk("cat1 with bit 42 set"));
    }
    let src_ty = Ty::from_bits(bits(w, 50, 52));
    let dst_ty = Ty::from_bits(bits(w, 46, 48));
    let mut i = match bits(w, 57, 58) {
        0b00 => {
            let rel = bit(w, 49);
            let d = bits(w, 32, 39);
            let mova = (d == 0xF4 && src_ty == Ty::S16 && dst_ty == Ty::S16)
                || (d == 0xF5 && src_ty == Ty::U16 && dst_ty == Ty::U16);
            if rel && mova {
                return Err(unk("mova with the relative-destination bit set"));
            }
            let dst = if rel {
                Dst::Rel {
                    off: d as u8,
                    half: dst_ty.is_half_cat1(),
                }
            } else if d == 0xF4 && src_ty == Ty::S16 && dst_ty == Ty::S16 {
                Dst::Addr(0)
            } else if d == 0xF5 && src_ty == Ty::U16 && dst_ty == Ty::U16 {
                Dst::Addr(1)
            } else if d >> 2 == 62 {
                Dst::Pred((d & 3) as u8)
            } else {
                Dst::Reg {
                    num: reg8(d),
                    half: dst_ty.is_half_cat1(),
                }
            };
            let r = bit(w, 43);
            let half = src_ty.is_half_cat1();
            let src = match bits(w, 53, 54) {
                0b10 => Src::Imm {
                    val: w as u32 as i32,
                    half,
                    r,
                },
                0b01 => {
                    if bits(w, 11, 31) != 0 {
                        return Err(unk("mov const source with reserved bits set"));
                    }
                    Src::Const {
                        num: bits(w, 0, 10) as u16,
                        half,
                        r,
                    }
                }
                0b00 if bit(w, 11) => {
                    if bits(w, 12, 31) != 0 {
                        return Err(unk("mov relative source with reserved bits set"));
                    }
                    let off = sext(bits(w, 0, 9), 10) as i16;
                    if bit(w, 10) {
                        Src::RelConst { off, half, r }
                    } else {
                        Src::RelReg { off, half, r }
                    }
                }
                0b00 => {
                    if bits(w, 8, 9) != 0 || bits(w, 11, 31) != 0 {
                        return Err(unk("movs/mov gpr source with reserved bits set"));
                    }
                    Src::Reg {
                        num: reg8(w),
                        half,
                        r,
                        last: bit(w, 10),
                    }
                }
                _ => return Err(unk("cat1 source kind 3")),
            };
            let mut i = Instr::new(Op::Mov {
                src_ty,
                dst_ty,
                dst,
                src,
            });
            i.repeat = bits(w, 40, 41) as u8;
            i
        }
        0b10 => {
            if bit(w, 43) || bit(w, 49) || bits(w, 53, 54) != 0 {
                return Err(unk("cat1 multi-move with reserved bits set"));
            }
            let r = |lo| reg8(bits(w, lo, lo + 7));
            let op = match bits(w, 40, 41) {
                0 if bits(w, 24, 31) == 0 => Op::Swz {
                    src_ty,
                    dst_ty,
                    dst: [r(32), r(16)],
                    src: [r(0), r(8)],
                },
                1 => Op::Gat {
                    src_ty,
                    dst_ty,
                    dst: r(32),
                    src: [r(0), r(8), r(16), r(24)],
                },
                2 => Op::Sct {
                    src_ty,
                    dst_ty,
                    dst: [r(32), r(8), r(16), r(24)],
                    src: r(0),
                },
                _ => return Err(unk("cat1 multi-move sub-opcode 3")),
            };
            Instr::new(op)
        }
        _ => return Err(unk("cat1 opcode (movmsk or reserved) not supported")),
    };
    i.ss = bit(w, 44);
    i.ul = bit(w, 45);
    i.round = bits(w, 55, 56) as u8;
    Ok(i)
}

/// `movmsk.wW dst` (cat1 bits 57–58 = 11, u32 → u32, no source).
fn movmsk(w: u64) -> Option<Ext> {
    if bits(w, 57, 58) != 0b11 || w as u32 != 0 || bits(w, 46, 56) != 0x033 || bits(w, 42, 45) != 0
    {
        return None;
    }
    let regs = bits(w, 40, 41) + 1;
    let dst = gpr(bits(w, 32, 39), regs)?;
    Some(Ext {
        raw: w,
        kind: ExtKind::Wave(WaveOp::MovMsk {
            dst,
            regs: regs as u8,
        }),
    })
}
