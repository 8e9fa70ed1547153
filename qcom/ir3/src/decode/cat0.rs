//! cat0, flow control: `nop`, `end`, `ret`, `predt`/`predf`/`prede`, `jump`, `kill`, the `br*` branches, and the
//! blob compiler's wave branches `getone` / `getlast` (docs/hw/adreno-kgsl-pm4.md §16.9, §16.10).
use super::unknown::{or_ext, Unknown, D};
use crate::bits::{bit, bits};
use crate::instr::*;

/// A cat0 word: Mesa's subset, else a wave branch.
pub fn decode(w: u64) -> D<Instr> {
    or_ext(w, mesa(w), wave_branch, true)
}

fn mesa(w: u64) -> D<Instr> {
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

/// `getone #imm` / `getlast.w8 #imm` (high cat0 group 5 / 4) without predicate or branch-type bits.
fn wave_branch(w: u64) -> Option<Ext> {
    if !bit(w, 49) || bits(w, 32, 39) != 0 || bits(w, 45, 47) != 0 || bit(w, 48) {
        return None;
    }
    let off = w as u32 as i32;
    let op = match bits(w, 55, 58) {
        5 if bits(w, 52, 54) == 0 => WaveOp::GetOne { off },
        // The XML: the cluster-size field changes nothing observable, the cluster is always 8 fibers.
        4 => WaveOp::GetLast { off },
        _ => return None,
    };
    Some(Ext {
        raw: w,
        kind: ExtKind::Wave(op),
    })
}
