//! A kernel's code decoded once: instructions in order, a byte-offset index, and every branch's
//! target resolved to an instruction index (docs/hw/rdna3-isa.md §10: target = PC of the next
//! instruction + simm16 × 4).
use super::decode::{decode, DecodeError, Inst};
use super::ops::Op;

/// One decoded kernel.
#[derive(Clone, Debug)]
pub struct Program {
    /// The instructions, in code order.
    pub insts: Vec<Inst>,
    /// Byte offset of each instruction from the code start.
    pub offsets: Vec<u32>,
    /// For branches, the index of the target instruction (`u32::MAX` elsewhere).
    pub targets: Vec<u32>,
    /// The code bytes the program was decoded from (the cache compares them on reuse).
    pub code: Vec<u8>,
    /// Where decoding stopped early: the byte offset, raw dwords and reason.
    pub stop: Option<(u32, heapless::Vec<u32, 3>, &'static str)>,
}

/// The branch operations (SOPP with a PC-relative target).
pub fn is_branch(op: Op) -> bool {
    matches!(
        op,
        Op::SBranch
            | Op::SCbranchScc0
            | Op::SCbranchScc1
            | Op::SCbranchVccz
            | Op::SCbranchVccnz
            | Op::SCbranchExecz
            | Op::SCbranchExecnz
    )
}

impl Program {
    /// Decode `code` (little-endian dwords) up to `s_code_end`, the end of the bytes, or the first
    /// instruction the decoder refuses (recorded in [`Program::stop`]; executing it is an error).
    pub fn decode(code: &[u8]) -> Program {
        let words: Vec<u32> = code
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut insts = Vec::new();
        let mut offsets = Vec::new();
        let mut stop = None;
        let mut pc = 0usize;
        while pc < words.len() {
            let end = words.len().min(pc + 3);
            match decode(&words[pc..end]) {
                Ok(i) => {
                    let done = i.op == Op::SCodeEnd;
                    insts.push(i);
                    offsets.push((pc * 4) as u32);
                    pc += usize::from(i.len);
                    if done {
                        break;
                    }
                }
                Err(DecodeError { what, dwords }) => {
                    let raw = words[pc..words.len().min(pc + dwords.clamp(1, 3))]
                        .iter()
                        .copied()
                        .collect();
                    stop = Some(((pc * 4) as u32, raw, what));
                    break;
                }
            }
        }
        let mut targets = vec![u32::MAX; insts.len()];
        for (k, i) in insts.iter().enumerate() {
            if is_branch(i.op) {
                let next = i64::from(offsets[k]) + 4;
                let dest = next + i64::from(i.imm) * 4;
                if let Ok(pos) = offsets.binary_search(&(dest as u32)) {
                    if dest >= 0 {
                        targets[k] = pos as u32;
                    }
                }
            }
        }
        Program {
            insts,
            offsets,
            targets,
            code: code.to_vec(),
            stop,
        }
    }
}
