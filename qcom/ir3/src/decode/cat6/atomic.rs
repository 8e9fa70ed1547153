//! The blob compiler's cat6 atomics in the a3xx layout (bit 53 clear; docs/hw/adreno-kgsl-pm4.md §16.9,
//! §16.10): `atomic.OP…l` add…xor on a local word with register operands ([`ExtKind::AtomicLocal`]), and the
//! local `inc`/`dec`/`cmpxchg` and every global `atomic.g.OP` ([`ExtKind::Atomic`]).
use crate::bits::{bit, bits};
use crate::decode::operand::{gpr, reg8};
use crate::instr::*;

/// Either atomic form; None for every other word.
pub fn decode(w: u64) -> Option<Ext> {
    local(w).or_else(|| rmw(w))
}

/// The add…xor opcodes 16–26 share with the a6xx `atomic.b` (19–21 are inc/dec/cmpxchg).
pub fn basic_op(opc: u64) -> Option<AtomicOp> {
    Some(match opc {
        16 => AtomicOp::Add,
        17 => AtomicOp::Sub,
        18 => AtomicOp::Xchg,
        22 => AtomicOp::Min,
        23 => AtomicOp::Max,
        24 => AtomicOp::And,
        25 => AtomicOp::Or,
        26 => AtomicOp::Xor,
        _ => return None,
    })
}

/// Local add…xor: register operands, one 32-bit integer component, 1-D untyped.
fn local(w: u64) -> Option<Ext> {
    let ty = Ty::from_bits(bits(w, 49, 51));
    let o = bits(w, 54, 58);
    if bit(w, 53) || !(16..=26).contains(&o) {
        return None;
    }
    // Local form only (bit 52 clear), register operands, one 32-bit integer component, 1d untyped.
    if bit(w, 52) || !bit(w, 0) || bit(w, 22) || bit(w, 23) || bits(w, 9, 13) != 0 {
        return None;
    }
    if bits(w, 1, 8) != 0 || bits(w, 41, 48) != 0 || !matches!(ty, Ty::U32 | Ty::S32) {
        return None;
    }
    Some(Ext {
        raw: w,
        kind: ExtKind::AtomicLocal {
            op: basic_op(o)?,
            signed: ty == Ty::S32,
            dst: reg8(bits(w, 32, 39)),
            addr: reg8(bits(w, 14, 21)),
            src: reg8(bits(w, 24, 31)),
        },
    })
}

/// Local inc/dec/cmpxchg and global atomics: bit 0 set, no SRC3 / binding, register operands, untyped 1-D, one
/// component.
fn rmw(w: u64) -> Option<Ext> {
    let ty = Ty::from_bits(bits(w, 49, 51));
    let opc = bits(w, 54, 58);
    if bit(w, 53)
        || !(16..=26).contains(&opc)
        || !bit(w, 0)
        || bits(w, 1, 13) != 0
        || bit(w, 22)
        || bit(w, 23)
        || bits(w, 40, 48) != 0
        || !matches!(ty, Ty::U32 | Ty::S32)
    {
        return None;
    }
    let global = bit(w, 52);
    let op = match opc {
        19 => RmwOp::Inc,
        20 => RmwOp::Dec,
        21 => RmwOp::CmpXchg,
        o => RmwOp::Basic(basic_op(o)?),
    };
    // The local add…xor forms are [`local`]'s.
    if !global && matches!(op, RmwOp::Basic(_)) {
        return None;
    }
    Some(Ext {
        raw: w,
        kind: ExtKind::Atomic {
            op,
            signed: ty == Ty::S32,
            global,
            dst: gpr(bits(w, 32, 39), 1)?,
            addr: gpr(bits(w, 14, 21), 2)?,
            src: gpr(bits(w, 24, 31), 2)?,
        },
    })
}
