//! An interpreter for the a6xx IR3 shader ISA, so the KGSL model can execute the compute kernels it is handed
//! (docs/hw/adreno-kgsl-pm4.md §16). Files: `instr` (the typed instruction), `decode` (bits → instruction),
//! `disasm` (Mesa-syntax printing, compared with Mesa's disassembler in the tests), `program` (a pre-decoded
//! shader), `float` (binary16 conversions), `alu` (per-fiber value semantics), `columns` (column-wise moves
//! and ALU), `exec` (work groups, fibers, flow control, registers), `mem` (loads, stores, images), `parallel`
//! (a dispatch's batches of work groups on several threads: `$MODELRT_IR3_THREADS`, else every core, 1 =
//! serial; memory is written in work-group order afterwards, so the result is the serial one byte for byte).
pub mod alu;
mod columns;
pub mod decode;
mod disasm;
pub mod exec;
pub mod float;
pub mod instr;
mod mem;
mod parallel;
pub mod program;

pub use exec::{run, run_threads, Dispatched, GpuMemory, Image, Launch, RunStats, SharedMemory};
pub use parallel::{default_threads, THREADS_ENV};
pub use program::Program;
