//! The blob compiler's a6xx UAV forms on buffer descriptors and the bindless `resinfo` (field layouts in
//! docs/hw/adreno-kgsl-pm4.md §16.9, semantics in §16.13): untyped 1-D `ldib.b`/`stib.b` (no immediate offset,
//! no `.rck`) and `atomic.b.OP` (32-bit, one component, untyped 1-D or typed 1-D/2-D), by UAV slot or from a
//! bindless descriptor set; `resinfo.b…baseN`.
use super::atomic::basic_op;
use crate::bits::{bit, bits};
use crate::decode::operand::{desc, gpr};
use crate::instr::*;

/// The executed form of an a6xx cat6 word (bit 53 set), if it is one of the above.
pub fn decode(w: u64) -> Option<Ext> {
    if !bit(w, 53) || bits(w, 54, 58) != 0 || bits(w, 4, 5) != 0 || bit(w, 40) {
        return None;
    }
    let ty = Ty::from_bits(bits(w, 49, 51));
    let (a6, typed, dims, n) = (
        bits(w, 14, 19),
        bit(w, 11),
        bits(w, 9, 10) + 1,
        bits(w, 12, 13) + 1,
    );
    let d = desc(w)?;
    let kind = match a6 {
        // ldib.b / stib.b untyped 1-D without the immediate offset (bit 23).
        6 | 29 if bits(w, 20, 23) == 0b0110 && !bit(w, 52) && !typed && dims == 1 => {
            if a6 == 29 && bit(w, 0) {
                return None;
            }
            if !matches!(
                ty,
                Ty::U32 | Ty::S32 | Ty::F32 | Ty::U16 | Ty::S16 | Ty::F16
            ) {
                return None;
            }
            ExtKind::Ibo(IboArgs {
                op: if a6 == 6 { IboOp::Load } else { IboOp::Store },
                ty,
                n: n as u8,
                dims: 1,
                typed: false,
                val: gpr(bits(w, 32, 39), n)?,
                coord: gpr(bits(w, 24, 31), 1)?,
                desc: d,
            })
        }
        16..=26 if bit(w, 52) && bits(w, 20, 23) == 0b0110 => {
            let op = basic_op(a6)?;
            if !matches!(ty, Ty::U32 | Ty::S32) || n != 1 || dims > 2 || (dims == 2 && !typed) {
                return None;
            }
            ExtKind::Ibo(IboArgs {
                op: IboOp::Atomic(op),
                ty,
                n: 1,
                dims: dims as u8,
                typed,
                val: gpr(bits(w, 32, 39), 1)?,
                coord: gpr(bits(w, 24, 31), dims)?,
                desc: d,
            })
        }
        // resinfo.b bindless (the slot form is `uav`'s).
        15 if !bit(w, 0)
            && bits(w, 20, 23) == 0b0110
            && bit(w, 8)
            && ty == Ty::U32
            && n == 1
            && bits(w, 24, 31) == 0
            && !bit(w, 52) =>
        {
            ExtKind::ResinfoB {
                dst: gpr(bits(w, 32, 39), 3)?,
                desc: d,
            }
        }
        _ => return None,
    };
    Some(Ext { raw: w, kind })
}
