//! The blob compiler's further cat6 memory accesses (field layouts in docs/hw/adreno-kgsl-pm4.md §16.9):
//! `ldg.a`/`stg.a` (global, the address adding an index register shifted by the element size) and
//! `ldlw`/`stlw` (local words, the tessellation-named twins of `ldl`/`stl`).
use crate::bits::{bit, bits, sext};
use crate::decode::operand::reg8;
use crate::instr::*;

/// `ldg.a`, `stg.a`, `ldlw` or `stlw`; None for every other word.
pub fn decode(w: u64) -> Option<Ext> {
    if bit(w, 53) {
        return None;
    }
    let ty = Ty::from_bits(bits(w, 49, 51));
    // ldg.a/stg.a scale their offset and index by the element size: 8-bit types 0, 16-bit 1, else 2.
    let ts = match ty {
        Ty::U8 | Ty::U8x32 => 0,
        t if t.is_half() => 1,
        _ => 2,
    };
    let acc = |store, space, addr, off, reg, size| Access {
        store,
        space,
        ty,
        addr,
        off,
        reg,
        size,
    };
    let kind = match bits(w, 54, 58) {
        0 if bit(w, 22)
            && bit(w, 23)
            && !bit(w, 52)
            && bit(w, 0)
            && !bit(w, 11)
            && bits(w, 30, 31) == 0 =>
        {
            ExtKind::Mem {
                m: acc(
                    false,
                    Space::Global,
                    reg8(bits(w, 14, 21)),
                    (bits(w, 9, 10) << ts) as i32,
                    reg8(bits(w, 32, 39)),
                    bits(w, 24, 26) as u8,
                ),
                index: Some((reg8(bits(w, 1, 8)), (bits(w, 12, 13) + ts) as u8)),
            }
        }
        3 if bit(w, 52) && bit(w, 23) && !bit(w, 11) && bits(w, 30, 31) == 0 => ExtKind::Mem {
            m: acc(
                true,
                Space::Global,
                reg8(bits(w, 41, 48)),
                (bits(w, 9, 10) << ts) as i32,
                reg8(bits(w, 1, 8)),
                bits(w, 24, 26) as u8,
            ),
            index: Some((reg8(bits(w, 32, 39)), (bits(w, 12, 13) + ts) as u8)),
        },
        10 if bit(w, 0) && bit(w, 23) => ExtKind::Mem {
            m: acc(
                false,
                Space::Local,
                reg8(bits(w, 14, 21)),
                sext(bits(w, 1, 13), 13) as i32,
                reg8(bits(w, 32, 39)),
                bits(w, 24, 31) as u8,
            ),
            index: None,
        },
        11 if bit(w, 23) && bit(w, 40) => ExtKind::Mem {
            m: acc(
                true,
                Space::Local,
                reg8(bits(w, 41, 48)),
                sext(bits(w, 9, 13) << 8 | bits(w, 32, 39), 13) as i32,
                reg8(bits(w, 1, 8)),
                bits(w, 24, 31) as u8,
            ),
            index: None,
        },
        _ => return None,
    };
    Some(Ext { raw: w, kind })
}
