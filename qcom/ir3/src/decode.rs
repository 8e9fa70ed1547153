//! Bits → [`Instr`]: the a6xx IR3 encodings of docs/hw/adreno-kgsl-pm4.md §16, one 64-bit word per
//! instruction. Anything outside the subset this interpreter executes is an [`Unknown`] naming the raw bits.
use super::instr::*;

/// An encoding the decoder does not know (or a reserved bit pattern).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    pub raw: u64,
    pub why: &'static str,
}

type D<T> = Result<T, Unknown>;

fn bits(w: u64, lo: u32, hi: u32) -> u64 {
    (w >> lo) & ((1u64 << (hi - lo + 1)) - 1)
}

fn bit(w: u64, b: u32) -> bool {
    (w >> b) & 1 == 1
}

fn sext(v: u64, width: u32) -> i32 {
    let s = 64 - width;
    (((v << s) as i64) >> s) as i32
}

/// Decode one instruction word.
pub fn decode(w: u64) -> D<Instr> {
    let unk = |why| Unknown { raw: w, why };
    let mut i = match bits(w, 61, 63) {
        0 => match cat0(w) {
            Ok(i) => i,
            Err(e) => {
                let mut i = Instr::new(Op::Ext(super::blob_decode_wave::cat0(w).ok_or(e)?));
                i.ss = bit(w, 44);
                i
            }
        },
        1 => match cat1(w) {
            Ok(i) => i,
            Err(e) => {
                let mut i = Instr::new(Op::Ext(super::blob_decode_wave::cat1(w).ok_or(e)?));
                i.ss = bit(w, 44);
                i
            }
        },
        2 => cat2(w)?,
        3 => match cat3(w) {
            Ok(i) => i,
            Err(e) => {
                let mut i = Instr::new(Op::Ext(super::blob_decode::cat3(w).ok_or(e)?));
                i.ss = bit(w, 44);
                i
            }
        },
        4 => cat4(w)?,
        5 => match cat5(w) {
            Ok(i) => i,
            Err(e) => Instr::new(Op::Ext(super::blob_decode_wave::cat5(w).ok_or(e)?)),
        },
        6 => match cat6(w) {
            Ok(i) => i,
            Err(e) => Instr::new(Op::Ext(
                super::blob_decode::cat6(w)
                    .or_else(|| super::blob_decode_wave::cat6(w))
                    .or_else(|| super::blob_decode_ubo::cat6(w))
                    .or_else(|| super::blob_decode_ibo::cat6(w))
                    .ok_or(e)?,
            )),
        },
        _ => match cat7(w) {
            Ok(i) => i,
            Err(e) => {
                let mut i = Instr::new(Op::Ext(super::blob_cache::cat7(w).ok_or(e)?));
                i.ss = bit(w, 44);
                i
            }
        },
    };
    i.jp = bit(w, 59);
    i.sy = bit(w, 60);
    if i.repeat > 5 {
        return Err(unk("repeat count above 5"));
    }
    Ok(i)
}

fn cat0(w: u64) -> D<Instr> {
    let unk = |why| Unknown { raw: w, why };
    let opc = bits(w, 55, 58);
    let hi = bit(w, 49);
    let imm = w as u32 as i32;
    let p = |inv: u32, comp: u32| PredSrc {
        inv: bit(w, inv),
        comp: bits(w, comp, comp + 1) as u8,
    };
    let zero_src = |op: Op| -> D<Op> {
        if bits(w, 34, 39) != 0 || bits(w, 45, 47) != 0 || bits(w, 52, 54) != 0 {
            return Err(unk("cat0 0-source instruction with source bits set"));
        }
        Ok(op)
    };
    let op = match (hi, opc) {
        (false, 0b0000) => zero_src(Op::Nop)?,
        (false, 0b0110) => zero_src(Op::End)?,
        (false, 0b0100) => zero_src(Op::Ret)?,
        (true, 0b1101) => zero_src(Op::PredT)?,
        (true, 0b1110) => zero_src(Op::PredF)?,
        (true, 0b1111) => zero_src(Op::PredE)?,
        (false, 0b0010) => Op::Jump(imm),
        (false, 0b0101) => {
            if bits(w, 32, 39) != 0 || bits(w, 45, 47) != 0 {
                return Err(unk("kill with reserved bits set"));
            }
            Op::Kill(p(52, 53))
        }
        (false, 0b0001) => {
            let kind = match bits(w, 37, 39) {
                0b000 => BrKind::Br,
                0b001 => BrKind::Or,
                0b010 => BrKind::And,
                0b100 => BrKind::Any,
                0b101 => BrKind::All,
                _ => return Err(unk("branch type brac/brax is not supported")),
            };
            Op::Br {
                kind,
                p1: p(52, 53),
                p2: p(45, 46),
                off: imm,
            }
        }
        _ => return Err(unk("cat0 opcode not supported")),
    };
    let mut i = Instr::new(op);
    i.repeat = bits(w, 40, 42) as u8;
    i.ss = bit(w, 44);
    i.eq = bit(w, 48);
    Ok(i)
}

/// The `#reg-gpr` destination/source: GPR 61 is a0, 62 is p0 (callers decide what those mean).
fn reg8(v: u64) -> RegNum {
    (v & 0xFF) as RegNum
}

fn cat1(w: u64) -> D<Instr> {
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

/// The 16-bit `#multisrc` of cat2/cat4 (`full` = full-precision sources).
fn multisrc(w: u64, v: u64, full: bool, r: bool) -> D<(Src, Mods)> {
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
            val: sext(bits(v, 0, 10), 11),
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
fn alu_dst(d: u64, half: bool) -> Dst {
    let half = half && d <= 0xF7;
    if d >> 2 == 62 {
        Dst::Pred((d & 3) as u8)
    } else {
        Dst::Reg { num: reg8(d), half }
    }
}

/// The `(nopN)` / `(r)` sharing of cat2/cat3: with REPEAT 0 the two (r) bits count delay slots instead.
fn nop_or_r(w: u64, r1: bool, r2: bool, repeat: u8) -> (u8, bool, bool) {
    let _ = w;
    if repeat == 0 && (r1 || r2) {
        (r1 as u8 | (r2 as u8) << 1, false, false)
    } else {
        (0, r1, r2)
    }
}

fn cat2(w: u64) -> D<Instr> {
    let unk = |why| Unknown { raw: w, why };
    let cond = || -> D<Cond> {
        Ok(match bits(w, 48, 50) {
            0 => Cond::Lt,
            1 => Cond::Le,
            2 => Cond::Gt,
            3 => Cond::Ge,
            4 => Cond::Eq,
            5 => Cond::Ne,
            _ => return Err(unk("comparison condition 6/7")),
        })
    };
    use Op2::*;
    let (op, two) = match bits(w, 53, 58) {
        0b000000 => (AddF, true),
        0b000001 => (MinF, true),
        0b000010 => (MaxF, true),
        0b000011 => (MulF, true),
        0b000100 => (SignF, false),
        0b000101 => (CmpsF(cond()?), true),
        0b000110 => (AbsnegF, false),
        0b000111 => (CmpvF(cond()?), true),
        0b001001 => (FloorF, false),
        0b001010 => (CeilF, false),
        0b001011 => (RndneF, false),
        0b001100 => (RndazF, false),
        0b001101 => (TruncF, false),
        0b010000 => (AddU, true),
        0b010001 => (AddS, true),
        0b010010 => (SubU, true),
        0b010011 => (SubS, true),
        0b010100 => (CmpsU(cond()?), true),
        0b010101 => (CmpsS(cond()?), true),
        0b010110 => (MinU, true),
        0b010111 => (MinS, true),
        0b011000 => (MaxU, true),
        0b011001 => (MaxS, true),
        0b011010 => (AbsnegS, false),
        0b011100 => (AndB, true),
        0b011101 => (OrB, true),
        0b011110 => (NotB, false),
        0b011111 => (XorB, true),
        0b100001 => (CmpvU(cond()?), true),
        0b100010 => (CmpvS(cond()?), true),
        0b110000 => (MulU24, true),
        0b110001 => (MulS24, true),
        0b110010 => (MullU, true),
        0b110011 => (BfrevB, false),
        0b110100 => (ClzS, false),
        0b110101 => (ClzB, false),
        0b110110 => (ShlB, true),
        0b110111 => (ShrB, true),
        0b111000 => (AshrB, true),
        0b111010 => (MgenB, true),
        0b111011 => (GetbitB, true),
        0b111101 => (CbitsB, false),
        _ => return Err(unk("cat2 opcode not supported")),
    };
    let repeat = bits(w, 40, 41) as u8;
    let (nop, r1, r2) = nop_or_r(w, bit(w, 43), bit(w, 51), repeat);
    let full = bit(w, 52);
    let dst_conv = bit(w, 46);
    let d = bits(w, 32, 39);
    let dst = alu_dst(d, full == dst_conv);
    let (s1, m1) = multisrc(w, bits(w, 0, 15), full, r1)?;
    let (s2, m2) = if two {
        multisrc(w, bits(w, 16, 31), full, r2)?
    } else {
        (
            Src::Imm {
                val: 0,
                half: false,
                r: false,
            },
            Mods::default(),
        )
    };
    let mut i = Instr::new(Op::Alu2 {
        op,
        dst,
        src: [s1, s2],
        mods: [m1, m2],
        full,
    });
    i.repeat = repeat;
    i.nop = nop;
    i.sat = bit(w, 42);
    i.ss = bit(w, 44);
    i.ul = bit(w, 45);
    i.ei = bit(w, 47);
    Ok(i)
}

/// The 13-bit cat3 src1/src3 field.
fn cat3_src(w: u64, v: u64, half: bool, immed: bool, r: bool) -> D<Src> {
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

fn cat3(w: u64) -> D<Instr> {
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
    let (nop, r1, r2) = nop_or_r(w, bit(w, 43), bit(w, 15), repeat);
    let r3 = bit(w, 29);
    let half = !full;
    let s1 = cat3_src(w, bits(w, 0, 12), half, alt, r1)?;
    let s2 = Src::Reg {
        num: reg8(bits(w, 47, 54)),
        half,
        r: r2,
        last: false,
    };
    let s3 = cat3_src(w, bits(w, 16, 28), half, alt, r3)?;
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

fn cat4(w: u64) -> D<Instr> {
    let op = match bits(w, 53, 58) {
        0 => Op4::Rcp,
        1 => Op4::Rsq,
        2 => Op4::Log2,
        3 => Op4::Exp2,
        4 => Op4::Sin,
        5 => Op4::Cos,
        6 => Op4::Sqrt,
        9 => Op4::Hrsq,
        10 => Op4::Hlog2,
        11 => Op4::Hexp2,
        _ => {
            return Err(Unknown {
                raw: w,
                why: "cat4 opcode not supported",
            })
        }
    };
    let repeat = bits(w, 40, 41) as u8;
    let full = bit(w, 52);
    let (src, mods) = multisrc(w, bits(w, 0, 15), full, bit(w, 43))?;
    let dst = alu_dst(bits(w, 32, 39), full == bit(w, 46));
    let mut i = Instr::new(Op::Sfu {
        op,
        dst,
        src,
        mods,
        full,
    });
    i.repeat = repeat;
    i.sat = bit(w, 42);
    i.ss = bit(w, 44);
    i.ul = bit(w, 45);
    Ok(i)
}

fn cat5(w: u64) -> D<Instr> {
    let unk = |why| Unknown { raw: w, why };
    if bits(w, 54, 58) != 0 {
        return Err(unk("cat5 opcode other than isam not supported"));
    }
    if bits(w, 9, 17) != 0 {
        return Err(unk("isam with a second source or reserved bits set"));
    }
    // S2EN_BINDLESS (bit 51) with DESC_MODE 0/4 is the non-bindless indirect form: sampler and texture index in a
    // half-register pair named by SRC3 (bits 21–28) instead of the s#/t# fields; every other mode is bindless.
    let s2en = if bit(w, 51) {
        let mode = bits(w, 29, 31);
        if !(mode == 0 || mode == 4) {
            return Err(unk("isam with bindless descriptors not supported"));
        }
        Some(S2en {
            reg: reg8(bits(w, 21, 28)),
            nonuniform: mode == 4,
        })
    } else {
        None
    };
    if bit(w, 47) || bits(w, 19, 20) != 0 {
        return Err(unk("isam with a descriptor base (bindless) not supported"));
    }
    if bit(w, 48) || bit(w, 49) || bit(w, 50) || bit(w, 52) || bit(w, 53) {
        return Err(unk("isam with .3d/.a/.v/.o/offset flags not supported"));
    }
    Ok(Instr::new(Op::Isam {
        ty: Ty::from_bits(bits(w, 44, 46)),
        wrmask: bits(w, 40, 43) as u8,
        dst: reg8(bits(w, 32, 39)),
        coord: reg8(bits(w, 1, 8)),
        coord_half: !bit(w, 0),
        samp: if s2en.is_some() {
            0
        } else {
            bits(w, 21, 24) as u8
        },
        tex: if s2en.is_some() {
            0
        } else {
            bits(w, 25, 31) as u8
        },
        inv_1d: !bit(w, 18),
        s2en,
    }))
}

fn cat6(w: u64) -> D<Instr> {
    let unk = |why| Unknown { raw: w, why };
    let ty = Ty::from_bits(bits(w, 49, 51));
    if bit(w, 53) {
        // a6xx UAV encoding: opcode in bits 14-19.
        if bits(w, 14, 19) != 0b011101 || bit(w, 52) || bit(w, 0) {
            return Err(unk("cat6 a6xx opcode other than stib.b not supported"));
        }
        if bits(w, 20, 22) != 0b110 || bit(w, 8) || bits(w, 6, 7) != 0 || bit(w, 40) {
            return Err(unk(
                "stib with bindless/non-immediate/rck descriptors not supported",
            ));
        }
        if bit(w, 23) || bits(w, 4, 5) != 0 || bits(w, 54, 58) != 0 || bits(w, 1, 3) != 0 {
            return Err(unk("stib with an immediate offset not supported"));
        }
        if !bit(w, 11) {
            return Err(unk("untyped stib not supported"));
        }
        return Ok(Instr::new(Op::Stib {
            ty,
            d: bits(w, 9, 10) as u8 + 1,
            comps: bits(w, 12, 13) as u8 + 1,
            src: reg8(bits(w, 32, 39)),
            coord: reg8(bits(w, 24, 31)),
            slot: bits(w, 41, 48) as u8,
        }));
    }
    let op = match bits(w, 54, 58) {
        0b00000 => {
            if !bit(w, 0)
                || bit(w, 22)
                || !bit(w, 23)
                || bits(w, 30, 31) != 0
                || bits(w, 52, 53) != 0
            {
                return Err(unk("ldg form (ldg.a/ldg.k or reserved bits) not supported"));
            }
            Op::Load {
                space: Space::Global,
                ty,
                dst: reg8(bits(w, 32, 39)),
                addr: reg8(bits(w, 14, 21)),
                off: sext(bits(w, 1, 13), 13),
                size: bits(w, 24, 26) as u8,
            }
        }
        0b00011 => {
            if bit(w, 52) || !bit(w, 23) || bits(w, 30, 31) != 0 {
                return Err(unk("stg form (stg.a or reserved bits) not supported"));
            }
            Op::Store {
                space: Space::Global,
                ty,
                addr: reg8(bits(w, 41, 48)),
                off: sext(bits(w, 9, 13) << 8 | bits(w, 32, 39), 13),
                src: reg8(bits(w, 1, 8)),
                size: bits(w, 24, 26) as u8,
            }
        }
        o @ (0b00001 | 0b00010) => {
            if !bit(w, 0) || !bit(w, 23) {
                return Err(unk("ldl/ldp with reserved bits"));
            }
            Op::Load {
                space: if o == 1 { Space::Local } else { Space::Private },
                ty,
                dst: reg8(bits(w, 32, 39)),
                addr: reg8(bits(w, 14, 21)),
                off: sext(bits(w, 1, 13), 13),
                size: bits(w, 24, 31) as u8,
            }
        }
        o @ (0b00100 | 0b00101) => {
            if !bit(w, 23) || !bit(w, 40) || (o == 0b00101 && bit(w, 0)) {
                return Err(unk("stl/stp with reserved bits"));
            }
            Op::Store {
                space: if o == 4 { Space::Local } else { Space::Private },
                ty,
                addr: reg8(bits(w, 41, 48)),
                off: sext(bits(w, 9, 13) << 8 | bits(w, 32, 39), 13),
                src: reg8(bits(w, 1, 8)),
                size: bits(w, 24, 31) as u8,
            }
        }
        _ => return Err(unk("cat6 opcode not supported")),
    };
    Ok(Instr::new(op))
}

fn cat7(w: u64) -> D<Instr> {
    let fence = match bits(w, 55, 58) {
        0 => false,
        1 => true,
        _ => {
            return Err(Unknown {
                raw: w,
                why: "cat7 opcode other than bar/fence not supported",
            })
        }
    };
    if !bit(w, 49) {
        return Err(Unknown {
            raw: w,
            why: "cat7 barrier without its fixed bit 49",
        });
    }
    let mut i = Instr::new(Op::Bar {
        fence,
        w: bit(w, 51),
        r: bit(w, 52),
        l: bit(w, 53),
        g: bit(w, 54),
    });
    i.ss = bit(w, 44);
    Ok(i)
}
