//! cat2, two-source ALU: float and integer arithmetic, comparisons, bit operations (bits 53–58 select the
//! operation, [`Op2::two_srcs`] whether a second `#multisrc` follows).
use super::operand::{alu_dst, multisrc, nop_or_r};
use super::unknown::{Unknown, D};
use crate::bits::{bit, bits};
use crate::instr::*;

/// A cat2 word.
pub fn decode(w: u64) -> D<Instr> {
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
    let op = match bits(w, 53, 58) {
        0b000000 => AddF,
        0b000001 => MinF,
        0b000010 => MaxF,
        0b000011 => MulF,
        0b000100 => SignF,
        0b000101 => CmpsF(cond()?),
        0b000110 => AbsnegF,
        0b000111 => CmpvF(cond()?),
        0b001001 => FloorF,
        0b001010 => CeilF,
        0b001011 => RndneF,
        0b001100 => RndazF,
        0b001101 => TruncF,
        0b010000 => AddU,
        0b010001 => AddS,
        0b010010 => SubU,
        0b010011 => SubS,
        0b010100 => CmpsU(cond()?),
        0b010101 => CmpsS(cond()?),
        0b010110 => MinU,
        0b010111 => MinS,
        0b011000 => MaxU,
        0b011001 => MaxS,
        0b011010 => AbsnegS,
        0b011100 => AndB,
        0b011101 => OrB,
        0b011110 => NotB,
        0b011111 => XorB,
        0b100001 => CmpvU(cond()?),
        0b100010 => CmpvS(cond()?),
        0b110000 => MulU24,
        0b110001 => MulS24,
        0b110010 => MullU,
        0b110011 => BfrevB,
        0b110100 => ClzS,
        0b110101 => ClzB,
        0b110110 => ShlB,
        0b110111 => ShrB,
        0b111000 => AshrB,
        0b111010 => MgenB,
        0b111011 => GetbitB,
        0b111101 => CbitsB,
        _ => return Err(unk("cat2 opcode not supported")),
    };
    let repeat = bits(w, 40, 41) as u8;
    let (nop, r1, r2) = nop_or_r(bit(w, 43), bit(w, 51), repeat);
    let full = bit(w, 52);
    let dst_conv = bit(w, 46);
    let d = bits(w, 32, 39);
    let dst = alu_dst(d, full == dst_conv);
    let (s1, m1) = multisrc(w, bits(w, 0, 15), full, r1)?;
    let (s2, m2) = if op.two_srcs() {
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
