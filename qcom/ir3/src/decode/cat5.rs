//! cat5, texture instructions: `isam` (Mesa's subset), and the blob compiler's `sam` under its sampler
//! (non-bindless, or bindless `.baseN` with immediate or a1.x indices) and `quad_shuffle` (docs/hw/adreno-kgsl-pm4.md
//! §16.9, §16.10, §16.13).
use super::operand::{gpr, reg8};
use super::unknown::{or_ext, Unknown, D};
use crate::bits::{bit, bits};
use crate::instr::*;

/// A cat5 word: `isam`, else `sam` or `quad_shuffle` (cat5 keeps no `(ss)` in bit 44, which is its type).
pub fn decode(w: u64) -> D<Instr> {
    or_ext(w, isam(w), blob, false)
}

fn isam(w: u64) -> D<Instr> {
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

/// `sam`, and `quad_shuffle.MODE (TY)(x)dst, src[, idx]` (cat5 opcode 31 with bit 53), one 32- or 16-bit
/// component whose source and destination precision agree.
fn blob(w: u64) -> Option<Ext> {
    if bits(w, 54, 58) == 3 {
        return sam(w).or_else(|| sam_bindless(w));
    }
    if bits(w, 54, 58) != 31 || !bit(w, 53) || bits(w, 40, 43) != 1 {
        return None;
    }
    // No sampler/texture, flag or bindless bits.
    if bits(w, 17, 18) != 0 || bits(w, 21, 31) != 0 || bits(w, 47, 52) != 0 {
        return None;
    }
    let ty = Ty::from_bits(bits(w, 44, 46));
    let half = match ty {
        Ty::U32 | Ty::S32 | Ty::F32 => false,
        Ty::U16 | Ty::S16 | Ty::F16 => true,
        _ => return None,
    };
    if bit(w, 0) == half {
        return None;
    }
    let mode = bits(w, 19, 20) as u8;
    if mode != 0 && bits(w, 9, 16) != 0 {
        return None;
    }
    Some(Ext {
        raw: w,
        kind: ExtKind::Wave(WaveOp::Quad {
            mode,
            half,
            dst: gpr(bits(w, 32, 39), 1)?,
            src: gpr(bits(w, 1, 8), 1)?,
            idx: reg8(bits(w, 9, 16)),
        }),
    })
}

/// `sam` (cat5 opcode 3, no `.3d .a .s .o .p` flags, not bindless): the operand fields of `isam`, read by
/// decoding the same word with the isam opcode; bit 18 (isam's "not 1-D") is clear in every `sam` (Mesa matches
/// no `sam` with it set), the coordinates are two; f32 or f16 results.
fn sam(w: u64) -> Option<Ext> {
    if bit(w, 18) || bits(w, 48, 50) != 0 || bit(w, 52) || bit(w, 53) {
        return None;
    }
    let i = isam(w & !(0x1F << 54)).ok()?;
    let Op::Isam {
        ty,
        wrmask,
        dst,
        coord,
        coord_half,
        samp,
        tex,
        inv_1d: _,
        s2en,
    } = i.op
    else {
        return None;
    };
    if !matches!(ty, Ty::F32 | Ty::F16) || wrmask == 0 {
        return None;
    }
    Some(Ext {
        raw: w,
        kind: ExtKind::Sam(SamArgs {
            ty,
            wrmask,
            dst,
            coord,
            coord_half,
            samp,
            tex,
            s2en,
            bindless: None,
        }),
    })
}

/// Bindless `sam.baseN (TY)(MASK)dst, coord, s#S, t#T` (DESC_MODE 6: sampler = src3 bits 0–3, texture = bits
/// 4–7) and `sam.baseN …, s#S, a1.x` (DESC_MODE 7: sampler = src3, texture index in a1.x): 2-D, no flags, one
/// coordinate register pair (§16.9, §16.13).
fn sam_bindless(w: u64) -> Option<Ext> {
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
    Some(Ext {
        raw: w,
        kind: ExtKind::Sam(SamArgs {
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
        }),
    })
}
