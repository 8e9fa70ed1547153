//! cat6, memory: Mesa's subset here (`ldg`/`ldl`/`ldp`, `stg`/`stl`/`stp`, the typed `stib.b`), then the blob
//! compiler's forms by what they reach (docs/hw/adreno-kgsl-pm4.md §16.9): indexed global and local-word accesses
//! (`mem`), atomics in the a3xx layout (`atomic`), the wave-level `getfiberid`/`shfl` (`wave`), UAVs by slot
//! (`uav`), the constant file and UBOs (`ubo`), buffer descriptors and bindless sets (`ibo`). The blob forms
//! accept disjoint sets of words.
mod atomic;
mod ibo;
mod mem;
mod uav;
mod ubo;
mod wave;

use super::operand::reg8;
use super::unknown::{or_ext, Unknown, D};
use crate::bits::{bit, bits, sext};
use crate::instr::*;

/// A cat6 word: Mesa's subset, else a blob form (cat6 keeps no `(ss)` in bit 44, which is part of its slot field).
pub fn decode(w: u64) -> D<Instr> {
    or_ext(w, mesa(w), blob, false)
}

fn blob(w: u64) -> Option<Ext> {
    mem::decode(w)
        .or_else(|| atomic::decode(w))
        .or_else(|| wave::decode(w))
        .or_else(|| uav::decode(w))
        .or_else(|| ubo::decode(w))
        .or_else(|| ibo::decode(w))
}

fn mesa(w: u64) -> D<Instr> {
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
                off: sext(bits(w, 1, 13), 13) as i32,
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
                off: sext(bits(w, 9, 13) << 8 | bits(w, 32, 39), 13) as i32,
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
                off: sext(bits(w, 1, 13), 13) as i32,
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
                off: sext(bits(w, 9, 13) << 8 | bits(w, 32, 39), 13) as i32,
                src: reg8(bits(w, 1, 8)),
                size: bits(w, 24, 31) as u8,
            }
        }
        _ => return Err(unk("cat6 opcode not supported")),
    };
    Ok(Instr::new(op))
}
