//! The Adreno a6xx IR3 shader ISA for compute kernels (docs/hw/adreno-kgsl-pm4.md §16): a decoder, a
//! disassembler printing Mesa's syntax (checked against Mesa's own disassembler in the tests) and an
//! interpreter, so the KGSL device model of `modelrt-qcom` can execute the kernels it is handed. Pure Rust on
//! std (the parallel run uses threads); it needs nothing from the driver crates.
//!
//! Modules by role, dependencies running one way (`tests/module_graph.rs` checks there is no import circle):
//! - `decode/` — instruction words → [`instr::Instr`], one module per category `cat0` … `cat7`; each decodes
//!   Mesa's subset and then the blob-compiler forms of its category the interpreter executes (§16.9).
//! - `disasm/` — printing in Mesa's syntax: `instr` prints a decoded instruction, `text` prints straight from the
//!   word what the decoder does not take (so every word of a blob kernel is named) and the blob forms it does.
//!   Uses `decode`.
//! - `exec/` — the interpreter: `group` (a batch's register file and memories), `batches`, `schedule` (min-PC
//!   issue, cat0 flow), per-category executors `alu` (cat1–cat4 column-wise, its per-fiber `value` semantics,
//!   Qualcomm's own cat3 integer operations in `qcom`, the byte dot products in `dot`), `cat5` (`isam`, `sam`),
//!   `cat6` (loads/stores, atomics, UAVs, bindless descriptors, UBOs and the constant file), `wave` (the 64-fiber
//!   wave and the wave-level instructions), `texel`, and `parallel` (batches of work groups on several threads:
//!   `$MODELRT_IR3_THREADS`, else every core, 1 = serial; memory is written in work-group order afterwards, so the
//!   result is the serial one byte for byte); a dispatch's inputs and report in `launch` ([`Launch`],
//!   [`Dispatched`], [`RunStats`]) and `memory` ([`GpuMemory`], [`SharedMemory`], [`Image`], [`Ubo`]). Uses
//!   `decode`'s types and `program`, never `disasm`.
//! - Shared: `instr` (the typed instruction, depending on nothing), `bits` (bit fields of a word), `float`
//!   (binary16 widening as half registers see it, on top of `modelrt_core::half`), `program` (a pre-decoded
//!   shader; refused words are named through `disasm::text`).
#![forbid(unsafe_code)]

mod bits;
pub mod decode;
mod disasm;
pub mod exec;
pub mod float;
pub mod instr;
pub mod program;

pub use disasm::disasm_word;
pub use exec::alu::value as alu;
pub use exec::{default_threads, run, run_threads, THREADS_ENV};
pub use exec::{launch, memory};
pub use launch::{Dispatched, Launch, RunStats};
pub use memory::{GpuMemory, Image, SharedMemory, Ubo};
pub use program::Program;
