//! cat4, the special-function unit: `rcp`, `rsq`, `log2`, `exp2`, `sin`, `cos`, `sqrt` and their half forms.
use super::operand::{alu_dst, multisrc};
use super::unknown::{Unknown, D};
use crate::bits::{bit, bits};
use crate::instr::*;

/// A cat4 word.
pub fn decode(w: u64) -> D<Instr> {
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
