//! The decoder's error, an encoding it does not know ([`Unknown`]), and the rule every category applies after
//! Mesa's subset refuses a word: the blob-compiler form of that category is tried next ([`or_ext`]).
use crate::bits::bit;
use crate::instr::{Ext, Instr, Op};

/// An encoding the decoder does not know (or a reserved bit pattern).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    pub raw: u64,
    pub why: &'static str,
}

/// A decoding result.
pub type D<T> = Result<T, Unknown>;

/// `mesa` when it decoded; else the blob-compiler instruction `ext` finds in word `w` (docs/hw/adreno-kgsl-pm4.md
/// §16.9), with `(ss)` from bit 44 when the category keeps it there (`ss`), else `mesa`'s error.
pub fn or_ext(w: u64, mesa: D<Instr>, ext: impl FnOnce(u64) -> Option<Ext>, ss: bool) -> D<Instr> {
    match mesa {
        Ok(i) => Ok(i),
        Err(e) => {
            let mut i = Instr::new(Op::Ext(ext(w).ok_or(e)?));
            if ss {
                i.ss = bit(w, 44);
            }
            Ok(i)
        }
    }
}
