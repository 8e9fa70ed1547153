//! The blob compiler's a6xx UAV forms by immediate slot (bit 53 set; not bindless, no immediate offset, no
//! `.rck`; docs/hw/adreno-kgsl-pm4.md §16.9, §16.10): the typed `ldib` of one RGBA texel, 2-D (the load twin of
//! the executed `stib`) or 1-D, and `resinfo`.
use crate::bits::{bit, bits};
use crate::decode::operand::{gpr, reg8};
use crate::instr::*;

/// `ldib.b.typed.{1d,2d}` or `resinfo`; None for every other word.
pub fn decode(w: u64) -> Option<Ext> {
    if !bit(w, 53) {
        return None;
    }
    let ty = Ty::from_bits(bits(w, 49, 51));
    ldib_2d(w, ty)
        .or_else(|| by_slot(w, ty))
        .map(|kind| Ext { raw: w, kind })
}

/// `ldib.b.typed.2d.{f32,f16}.4.imm dst, coord, slot`.
fn ldib_2d(w: u64, ty: Ty) -> Option<ExtKind> {
    let plain = bits(w, 14, 19) == 6 && bits(w, 20, 22) == 0b110 && !bit(w, 52) && bit(w, 11);
    let imm = bits(w, 6, 8) == 0
        && !bit(w, 23)
        && bits(w, 4, 5) == 0
        && bits(w, 54, 58) == 0
        && !bit(w, 40);
    let shape = bits(w, 9, 10) == 1 && bits(w, 12, 13) == 3 && matches!(ty, Ty::F32 | Ty::F16);
    (plain && imm && shape).then(|| ExtKind::Ldib {
        ty,
        dst: reg8(bits(w, 32, 39)),
        coord: reg8(bits(w, 24, 31)),
        slot: bits(w, 41, 48) as u8,
    })
}

/// `resinfo.b.*.imm dst, slot` and `ldib.b.typed.1d.{f32,f16}.4.imm dst, coord, slot`.
fn by_slot(w: u64, ty: Ty) -> Option<ExtKind> {
    // Immediate descriptor mode, not bindless, no offset / .rck bits.
    if bits(w, 54, 58) != 0 || bits(w, 1, 8) != 0 || bits(w, 4, 5) != 0 || bit(w, 40) {
        return None;
    }
    Some(match bits(w, 14, 19) {
        15 if !bit(w, 0) && bits(w, 20, 23) == 0b0110 && ty == Ty::U32 && bits(w, 12, 13) == 0 => {
            if bits(w, 24, 31) != 0 || bit(w, 52) {
                return None;
            }
            ExtKind::Resinfo {
                dst: gpr(bits(w, 32, 39), 3)?,
                slot: bits(w, 41, 48) as u8,
            }
        }
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
    })
}
