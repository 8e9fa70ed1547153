//! Instruction words → [`Instr`]: the a6xx IR3 encodings of docs/hw/adreno-kgsl-pm4.md §16, one 64-bit word per
//! instruction, one module per category (`cat0` … `cat7`, bits 61–63). Each category decodes Mesa's subset first
//! and then the blob-compiler forms of that category the interpreter executes (§16.9, [`Op::Ext`]); anything else
//! is an [`Unknown`] naming the raw bits. `operand` holds the operand fields several categories share.
mod cat0;
mod cat1;
mod cat2;
mod cat3;
mod cat4;
mod cat5;
mod cat6;
mod cat7;
mod operand;
mod unknown;

pub use unknown::Unknown;

use crate::bits::{bit, bits};
use crate::instr::*;

/// Decode one instruction word.
pub fn decode(w: u64) -> Result<Instr, Unknown> {
    let mut i = match bits(w, 61, 63) {
        0 => cat0::decode(w)?,
        1 => cat1::decode(w)?,
        2 => cat2::decode(w)?,
        3 => cat3::decode(w)?,
        4 => cat4::decode(w)?,
        5 => cat5::decode(w)?,
        6 => cat6::decode(w)?,
        _ => cat7::decode(w)?,
    };
    i.jp = bit(w, 59);
    i.sy = bit(w, 60);
    if i.repeat > 5 {
        return Err(Unknown {
            raw: w,
            why: "repeat count above 5",
        });
    }
    Ok(i)
}
