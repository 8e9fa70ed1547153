//! cat3, three-source ALU: `mad`, `sel`, `sad`, the alternative shift group (`shrm`…`andg`), and the blob
//! compiler's byte dot products `dp2acc`/`dp4acc` on registers (docs/hw/adreno-kgsl-pm4.md §16.9).
use super::operand::{alu_dst, nop_or_r, reg8};
use super::unknown::{or_ext, Unknown, D};
use crate::bits::{bit, bits, sext};
use crate::instr::*;

/// A cat3 word: Mesa's subset, else a dot product.
pub fn decode(w: u64) -> D<Instr> {
    or_ext(w, mesa(w), dot, true)
}

/// The 13-bit cat3 src1/src3 field.
fn src(w: u64, v: u64, half: bool, immed: bool, r: bool) -> D<Src> {
    let unk = |why| Unknown { raw: w, why };
    Ok(match bits(v, 11, 12) {
        0b00 => {
            if bits(v, 8, 9) != 0 {
                return Err(unk("cat3 gpr source with reserved bits set"));
            }
            Src::Reg {
                num: reg8(v),
                half,
                r,
                last: bit(v, 10),
            }
        }
        // The alt group's immediate is bits 0-11 whenever bit 12 is set (so bit 11 is part of the value).
        0b10 | 0b11 if immed => Src::Imm {
            val: bits(v, 0, 11) as i32,
            half,
            r,
        },
        0b10 => Src::Const {
            num: bits(v, 2, 10) as u16 * 4 + bits(v, 0, 1) as u16,
            half,
            r,
        },
        0b01 => {
            let off = sext(bits(v, 0, 9), 10) as i16;
            if bit(v, 10) {
                Src::RelConst { off, half, r }
            } else {
                Src::RelReg { off, half, r }
            }
        }
        _ => return Err(unk("cat3 source kind 3")),
    })
}

fn mesa(w: u64) -> D<Instr> {
    use Op3::*;
    let alt = bit(w, 13);
    let opc = bits(w, 55, 58);
    let (op, full) = if alt {
        let op = match opc {
            0b1000 => Shrm,
            0b1001 => Shlm,
            0b1010 => Shrg,
            0b1011 => Shlg,
            0b1100 => Andg,
            _ => {
                return Err(Unknown {
                    raw: w,
                    why: "cat3 alternative opcode (dp2acc/dp4acc/wmm or reserved) not supported",
                })
            }
        };
        (op, bit(w, 42))
    } else {
        let ops = [
            (MadU16, false),
            (MadshU16, true),
            (MadS16, false),
            (MadshM16, true),
            (MadU24, true),
            (MadS24, true),
            (MadF16, false),
            (MadF32, true),
            (SelB16, false),
            (SelB32, true),
            (SelS16, false),
            (SelS32, true),
            (SelF16, false),
            (SelF32, true),
            (SadS16, false),
            (SadS32, true),
        ];
        ops[opc as usize]
    };
    let repeat = bits(w, 40, 41) as u8;
    let (nop, r1, r2) = nop_or_r(bit(w, 43), bit(w, 15), repeat);
    let r3 = bit(w, 29);
    let half = !full;
    let s1 = src(w, bits(w, 0, 12), half, alt, r1)?;
    let s2 = Src::Reg {
        num: reg8(bits(w, 47, 54)),
        half,
        r: r2,
        last: false,
    };
    let s3 = src(w, bits(w, 16, 28), half, alt, r3)?;
    let dst = alu_dst(bits(w, 32, 39), full == bit(w, 46));
    let mut i = Instr::new(Op::Alu3 {
        op,
        dst,
        src: [s1, s2, s3],
        neg: [bit(w, 14), bit(w, 30), bit(w, 31)],
        full,
    });
    i.repeat = repeat;
    i.nop = nop;
    i.sat = !alt && bit(w, 42);
    i.ss = bit(w, 44);
    i.ul = bit(w, 45);
    Ok(i)
}

/// `dp2acc`/`dp4acc` with register sources (cat3 alternative group, opcode 13; §16.9): REPEAT 0 only.
fn dot(w: u64) -> Option<Ext> {
    if !bit(w, 13)
        || bits(w, 55, 58) != 13
        || bits(w, 40, 41) != 0
        || bits(w, 11, 12) != 0
        || bits(w, 27, 28) != 0
    {
        return None;
    }
    if bits(w, 8, 9) != 0 || bits(w, 24, 25) != 0 {
        return None;
    }
    Some(Ext {
        raw: w,
        kind: ExtKind::Dot {
            four: bit(w, 46),
            mixed: bit(w, 14),
            high: bit(w, 30),
            sat: bit(w, 42),
            neg3: bit(w, 31),
            dst: reg8(bits(w, 32, 39)),
            src: [
                reg8(bits(w, 0, 7)),
                reg8(bits(w, 47, 54)),
                reg8(bits(w, 16, 23)),
            ],
        },
    })
}
