//! Printing in Mesa's syntax (the text of Mesa's `ir3_isa_disasm`, checked against it in the tests): `instr`
//! prints a decoded [`Instr`](crate::instr::Instr), `text` prints straight from the word what the decoder does not
//! take and the blob-compiler forms it does. Depends on `decode`, never on `exec`.
mod instr;
pub(crate) mod text;

use crate::decode::decode;

/// Mesa's text for one instruction word: the executable subset through [`decode`], everything else the
/// disassembler knows through `text::describe`, and `raw 0x…` for the rest.
pub fn disasm_word(w: u64) -> String {
    match decode(w) {
        Ok(i) => i.to_string(),
        Err(_) => text::describe(w).unwrap_or_else(|| format!("raw 0x{w:016X}")),
    }
}
