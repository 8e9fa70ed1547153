//! Bits → [`Ext`] for the a6xx UAV forms on buffer descriptors and the bindless `resinfo` (field layouts in
//! docs/hw/adreno-kgsl-pm4.md §16.9, semantics in §16.13): untyped 1-D `ldib.b`/`stib.b` (no immediate offset,
//! no `.rck`) and `atomic.b.OP` (32-bit, one component, untyped 1-D or typed 1-D/2-D), by UAV slot or from a
//! bindless descriptor set; `resinfo.b…baseN`; and the bindless `sam.baseN` with immediate or a1.x indices
//! ([`sam_bindless`]). Only words `blob::describe` names are taken.
use super::blob::describe;
use super::instr::*;

fn bits(w: u64, lo: u32, hi: u32) -> u64 {
    (w >> lo) & ((1u64 << (hi - lo + 1)) - 1)
}

fn bit(w: u64, b: u32) -> bool {
    (w >> b) & 1 == 1
}

/// A plain GPR (not a0/p0) that leaves room for `n` consecutive registers.
fn gpr(v: u64, n: u64) -> Option<RegNum> {
    (v + n <= 61 * 4).then_some((v & 0xFF) as RegNum)
}

/// The descriptor operand: mode (bits 6–7) 0 = immediate slot, 1/2 = register; bit 8 = bindless with base
/// bits 1–3 (else those bits are zero).
fn desc(w: u64) -> Option<Desc> {
    let mode = bits(w, 6, 7);
    if mode > 2 || (!bit(w, 8) && bits(w, 1, 3) != 0) {
        return None;
    }
    let v = bits(w, 41, 48);
    Some(Desc {
        base: bit(w, 8).then_some(bits(w, 1, 3) as u8),
        index: if mode == 0 {
            Opnd::Imm(v as u8)
        } else {
            Opnd::Reg(gpr(v, 1)?)
        },
    })
}

/// The executed form of an a6xx cat6 word (bit 53 set), if it is one of the above.
pub fn cat6(w: u64) -> Option<Ext> {
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
            let op = match a6 {
                16 => AtomicOp::Add,
                17 => AtomicOp::Sub,
                18 => AtomicOp::Xchg,
                22 => AtomicOp::Min,
                23 => AtomicOp::Max,
                24 => AtomicOp::And,
                25 => AtomicOp::Or,
                26 => AtomicOp::Xor,
                _ => return None,
            };
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
        // resinfo.b bindless (the slot form is `blob_decode_wave`'s).
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
    describe(w)?;
    Some(Ext { raw: w, kind })
}

/// Bindless `sam.baseN (TY)(MASK)dst, coord, s#S, t#T` (DESC_MODE 6: sampler = src3 bits 0–3, texture = bits
/// 4–7) and `sam.baseN …, s#S, a1.x` (DESC_MODE 7: sampler = src3, texture index in a1.x): 2-D, no flags, one
/// coordinate register pair (§16.9, §16.13).
pub fn sam_bindless(w: u64) -> Option<Ext> {
    let mode = bits(w, 29, 31);
    if bits(w, 54, 58) != 3
        || !bit(w, 51)
        || !matches!(mode, 6 | 7)
        || bit(w, 18)
        || bits(w, 48, 50) != 0
        || bits(w, 52, 53) != 0
        || bits(w, 9, 17) != 0
    {
        return None;
    }
    let ty = Ty::from_bits(bits(w, 44, 46));
    let wrmask = bits(w, 40, 43) as u8;
    if !matches!(ty, Ty::F32 | Ty::F16) || wrmask == 0 {
        return None;
    }
    let src3 = bits(w, 21, 28);
    let (samp, tex) = if mode == 6 {
        (src3 & 15, src3 >> 4)
    } else {
        (src3, 0)
    };
    let n = wrmask.count_ones() as u64;
    let kind = ExtKind::Sam(SamArgs {
        ty,
        wrmask,
        dst: gpr(bits(w, 32, 39), n)?,
        coord: gpr(bits(w, 1, 8), 2)?,
        coord_half: !bit(w, 0),
        samp: samp as u8,
        tex: tex as u8,
        s2en: None,
        bindless: Some(SamBindless {
            base: ((bits(w, 19, 20) * 2) | bits(w, 47, 47)) as u8,
            tex_a1: mode == 7,
        }),
    });
    describe(w)?;
    Some(Ext { raw: w, kind })
}
