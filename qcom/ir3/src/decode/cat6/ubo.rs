//! The blob compiler's constant-file forms (field layouts in docs/hw/adreno-kgsl-pm4.md §16.9, semantics in
//! §16.12): `ldc` and `ldc.k` on a UBO bound by slot or taken from a bindless descriptor set (§16.13), `ldg.k` and
//! `stc` with 32-bit types. Only the canonical encodings Mesa prints are taken (the bits `disasm::text` requires
//! as well: bit 22 of `ldc`, bits 30–31 of `ldg.k` clear, bits 14–22 of `stc` clear and its bit 23 set), so
//! whatever is accepted prints exactly as Mesa prints it.
use crate::bits::{bit, bits, sext};
use crate::decode::operand::{desc, gpr, opnd};
use crate::instr::*;

/// A `#const-dst` field (bits 32–40): bit 8 selects a1.x + the low 8 bits.
fn const_dst(w: u64) -> ConstDst {
    let v = bits(w, 32, 40);
    ConstDst {
        a1: v & 0x100 != 0,
        off: (v & 0xFF) as u16,
    }
}

/// The executed `ldc`/`ldc.k`/`ldg.k`/`stc` form of a cat6 word, if it is one.
pub fn decode(w: u64) -> Option<Ext> {
    let ty = Ty::from_bits(bits(w, 49, 51));
    let kind = if bit(w, 53) {
        ldc(w, ty)?
    } else {
        // 32-bit types only: the XML notes 16-bit `stc` packs halves, and the blob uses the 32-bit forms.
        if !matches!(ty, Ty::U32 | Ty::S32 | Ty::F32) {
            return None;
        }
        match bits(w, 54, 58) {
            0 if bit(w, 52) && bit(w, 0) && !bit(w, 22) && bits(w, 30, 31) == 0 => ExtKind::LdgK {
                dst: const_dst(w),
                addr: gpr(bits(w, 14, 21), 2)?,
                off: sext(bits(w, 1, 13), 13) as i32,
                size: bits(w, 23, 26) as u8,
            },
            28 if bits(w, 9, 22) == 0
                && bit(w, 23)
                && bits(w, 27, 31) == 0
                && bits(w, 41, 48) == 0 =>
            {
                let size = bits(w, 24, 26);
                ExtKind::Stc {
                    dst: const_dst(w),
                    src: gpr(bits(w, 1, 8), size)?,
                    size: size as u8,
                }
            }
            _ => return None,
        }
    };
    Some(Ext { raw: w, kind })
}

/// `ldc.offsetK.N.MODE[.baseB]` / `ldc.N.k.MODE[.baseB]` (a6xx opcode 30, bit 22 set), u32; the UBO is a
/// [`desc`] operand.
fn ldc(w: u64, ty: Ty) -> Option<ExtKind> {
    if bits(w, 54, 58) != 0
        || bits(w, 14, 19) != 30
        || !bit(w, 22)
        || bits(w, 4, 5) != 0
        || bit(w, 40)
        || ty != Ty::U32
    {
        return None;
    }
    let off = opnd(bits(w, 24, 31), bit(w, 23))?;
    let slot = desc(w)?;
    Some(if bit(w, 52) {
        ExtKind::LdcK {
            off,
            slot,
            vec4s: bits(w, 32, 39) as u16 + 1,
        }
    } else {
        let n = bits(w, 12, 13) + 1;
        ExtKind::Ldc {
            dst: gpr(bits(w, 32, 39), n)?,
            off,
            slot,
            comp: bits(w, 9, 10) as u8,
            n: n as u8,
        }
    })
}
