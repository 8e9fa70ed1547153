//! A kernel's pre-decoded program: every 64-bit word of the shader image decoded once, before any dispatch; a
//! word the interpreter does not execute is refused by its Mesa name (`disasm::text`). Used by `exec`.
use crate::decode::decode;
use crate::disasm::text::{describe, graphics_only};
use crate::instr::Instr;

/// A shader image decoded instruction by instruction.
#[derive(Clone, Debug)]
pub struct Program {
    pub name: String,
    pub instrs: Vec<Instr>,
}

impl Program {
    /// Decode `image` (little-endian 64-bit words). An instruction the interpreter does not execute is an
    /// error naming the kernel, the instruction index, its byte offset and the instruction (Mesa's text, or
    /// its raw bits when it is not a known encoding).
    pub fn decode(name: &str, image: &[u8]) -> Result<Program, String> {
        if image.is_empty() || !image.len().is_multiple_of(8) {
            return Err(format!(
                "kernel {name}: shader image of {} bytes is not a positive multiple of 8",
                image.len()
            ));
        }
        let mut instrs = Vec::with_capacity(image.len() / 8);
        for (n, c) in image.chunks_exact(8).enumerate() {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            let i = decode(w).map_err(|u| {
                if let Some(text) = describe(w) {
                    return format!(
                        "kernel {name}: instruction {n} (byte offset {:#x}): `{text}` is {}",
                        n * 8,
                        if graphics_only(&text) {
                            "a graphics-only instruction; a compute kernel cannot use it"
                        } else {
                            "not executed by the IR3 interpreter yet (docs/hw/adreno-kgsl-pm4.md §16.9)"
                        }
                    );
                }
                format!(
                    "kernel {name}: instruction {n} (byte offset {:#x}): unknown IR3 encoding {:08x}_{:08x}: {}",
                    n * 8,
                    u.raw >> 32,
                    u.raw as u32,
                    u.why
                )
            })?;
            instrs.push(i);
        }
        Ok(Program {
            name: name.to_string(),
            instrs,
        })
    }

    /// One line per instruction in Mesa's disassembly syntax.
    pub fn listing(&self) -> Vec<String> {
        self.instrs.iter().map(|i| i.to_string()).collect()
    }
}
