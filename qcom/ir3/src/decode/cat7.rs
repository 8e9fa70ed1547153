//! cat7, synchronisation: `bar`/`fence`, and the operations that change nothing a coherent memory model can see
//! (docs/hw/adreno-kgsl-pm4.md §16.14): `sleep.s`/`sleep.l` (Mesa's ISA XML: a short or long sleep, "how is it
//! different from a bunch of nops?"), `dccln` (data-cache clean: dirty lines written back, contents kept) and
//! `dcflu` (flush: clean, then invalidate). The interpreter's loads and stores go straight to memory, so there is
//! nothing to write back and nothing stale to drop: each executes as a no-op. `dcinv` (invalidate without writing
//! back could discard stores on the hardware) and `icinv` stay refused.
use super::unknown::{or_ext, Unknown, D};
use crate::bits::{bit, bits};
use crate::instr::*;

/// A cat7 word: `bar`/`fence`, else a no-effect cache operation.
pub fn decode(w: u64) -> D<Instr> {
    or_ext(w, mesa(w), no_effect, true)
}

fn mesa(w: u64) -> D<Instr> {
    let fence = match bits(w, 55, 58) {
        0 => false,
        1 => true,
        _ => {
            return Err(Unknown {
                raw: w,
                why: "cat7 opcode other than bar/fence not supported",
            })
        }
    };
    if !bit(w, 49) {
        return Err(Unknown {
            raw: w,
            why: "cat7 barrier without its fixed bit 49",
        });
    }
    let mut i = Instr::new(Op::Bar {
        fence,
        w: bit(w, 51),
        r: bit(w, 52),
        l: bit(w, 53),
        g: bit(w, 54),
    });
    i.ss = bit(w, 44);
    Ok(i)
}

/// `sleep`, `dccln` or `dcflu` (cat7 opcode 2, 4, 6) in the canonical form Mesa prints: no operands, only the
/// flags, the opcode and bit 51 (`.l` / `.all`).
fn no_effect(w: u64) -> Option<Ext> {
    let canonical = w & 0xFFF_FFFF_FFFF == 0 && bits(w, 45, 50) == 0 && bits(w, 52, 54) == 0;
    (matches!(bits(w, 55, 58), 2 | 4 | 6) && canonical).then_some(Ext {
        raw: w,
        kind: ExtKind::NoEffect,
    })
}
