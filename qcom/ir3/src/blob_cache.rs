//! The cat7 operations that change nothing a coherent memory model can see (docs/hw/adreno-kgsl-pm4.md §16.14):
//! `sleep.s`/`sleep.l` (Mesa's ISA XML: a short or long sleep, "how is it different from a bunch of nops?"),
//! `dccln` (data-cache clean: dirty lines written back, contents kept) and `dcflu` (flush: clean, then
//! invalidate). The interpreter's loads and stores go straight to memory, so there is nothing to write back and
//! nothing stale to drop: each executes as a no-op. `dcinv` (invalidate without writing back could discard
//! stores on the hardware) and `icinv` stay refused.
use super::blob::describe;
use super::instr::*;

fn bits(w: u64, lo: u32, hi: u32) -> u64 {
    (w >> lo) & ((1u64 << (hi - lo + 1)) - 1)
}

/// `sleep`, `dccln` or `dcflu` (cat7 opcode 2, 4, 6) in the canonical form `blob::describe` names.
pub fn cat7(w: u64) -> Option<Ext> {
    if !matches!(bits(w, 55, 58), 2 | 4 | 6) {
        return None;
    }
    describe(w)?;
    Some(Ext {
        raw: w,
        kind: ExtKind::NoEffect,
    })
}
