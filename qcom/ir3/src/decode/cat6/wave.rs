//! The blob compiler's cat6 wave-level instructions (a6xx layout, bit 53 set; docs/hw/adreno-kgsl-pm4.md §16.9,
//! §16.10): `getfiberid` and `shfl`.
use crate::bits::{bit, bits};
use crate::decode::operand::gpr;
use crate::instr::*;

/// `getfiberid.u32` or `shfl`; None for every other word.
pub fn decode(w: u64) -> Option<Ext> {
    if !bit(w, 53) {
        return None;
    }
    let ty = Ty::from_bits(bits(w, 49, 51));
    let op = if bits(w, 54, 58) == 27 && !bit(w, 52) && !bit(w, 0) && bits(w, 9, 22) == 0 {
        shfl(w, ty)?
    } else {
        fiber_id(w, ty)?
    };
    Some(Ext {
        raw: w,
        kind: ExtKind::Wave(op),
    })
}

/// `getfiberid.u32 dst` (a6xx opcode 38).
fn fiber_id(w: u64, ty: Ty) -> Option<WaveOp> {
    // Immediate descriptor mode, not bindless, no offset / .rck bits.
    if bits(w, 54, 58) != 0 || bits(w, 1, 8) != 0 || bits(w, 4, 5) != 0 || bit(w, 40) {
        return None;
    }
    if bits(w, 14, 19) != 38 || bit(w, 0) || bits(w, 20, 23) != 0b1100 || bits(w, 9, 13) != 0 {
        return None;
    }
    if ty != Ty::U32 || bits(w, 24, 31) != 0 || bits(w, 41, 48) != 0 || bit(w, 52) {
        return None;
    }
    Some(WaveOp::FiberId {
        dst: gpr(bits(w, 32, 39), 1)?,
    })
}

/// `shfl.MODE.TY dst, src, lane` (a6xx cat6 opcode 27).
fn shfl(w: u64, ty: Ty) -> Option<WaveOp> {
    let mode = match bits(w, 45, 47) {
        1 => ShflMode::Xor,
        2 => ShflMode::Up,
        3 => ShflMode::Down,
        6 => ShflMode::RotUp,
        7 => ShflMode::RotDown,
        _ => return None,
    };
    let half = match ty {
        Ty::U32 | Ty::S32 | Ty::F32 => false,
        Ty::U16 | Ty::S16 | Ty::F16 => true,
        _ => return None,
    };
    if bits(w, 40, 44) != 0 || bit(w, 48) {
        return None;
    }
    let lane = if bit(w, 23) {
        Lane::Imm(bits(w, 24, 31) as u32)
    } else {
        Lane::Reg(gpr(bits(w, 24, 31), 1)?)
    };
    Some(WaveOp::Shfl {
        mode,
        half,
        dst: gpr(bits(w, 32, 39), 1)?,
        src: gpr(bits(w, 1, 8), 1)?,
        lane,
    })
}
