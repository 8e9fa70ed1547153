//! An interpreter for the a6xx IR3 shader ISA, so the KGSL model can execute the compute kernels it is handed
//! (docs/hw/adreno-kgsl-pm4.md §16). Files: `instr` (the typed instruction), `decode` (bits → instruction),
//! `disasm` (Mesa-syntax printing, compared with Mesa's disassembler in the tests), `program` (a pre-decoded
//! shader), `float` (binary16 conversions), `alu` (per-fiber value semantics), `columns` (column-wise moves
//! and ALU), `exec` (work groups, fibers, flow control, registers), `mem` (loads, stores, images).
pub mod alu;
mod columns;
pub mod decode;
mod disasm;
pub mod exec;
pub mod float;
pub mod instr;
mod mem;
pub mod program;

pub use exec::{run, GpuMemory, Image, Launch, RunStats};
pub use program::Program;
