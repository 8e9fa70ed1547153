//! The Adreno a6xx IR3 shader ISA for compute kernels (docs/hw/adreno-kgsl-pm4.md §16): a decoder, a
//! disassembler printing Mesa's syntax (checked against Mesa's own disassembler in the tests) and an
//! interpreter, so the KGSL device model of `modelrt-qcom` can execute the kernels it is handed. Pure Rust on
//! std (the parallel run uses threads); it needs nothing from the driver crates.
//!
//! Files: `instr` (the typed instruction), `decode` (bits → instruction), `disasm` (Mesa-syntax printing),
//! `blob` (text of the encodings the interpreter does not execute, so every word of a blob kernel is named),
//! `blob_decode`/`blob_exec` (the blob-compiler cat6 forms that are executed: `ldg.a`/`stg.a`, `ldlw`/`stlw`,
//! local atomics), `blob_decode_wave` with `blob_wave` (the 64-fiber wave model and the wave-level instructions),
//! `blob_atomic` (local inc/dec/cmpxchg, global atomics), `blob_ibo` (`resinfo`, 1-D `ldib`) and `blob_sam`
//! (`sam` under its sampler descriptor), `blob_decode_ubo` with `blob_ubo` (`ldc`, `ldc.k`, `ldg.k`, `stc`:
//! uniform buffers and the per-dispatch writable constant file), `blob_decode_ibo` with `blob_bindless` (bindless
//! descriptor sets, untyped `ldib`/`stib` and `atomic.b` on buffers, bindless `resinfo` and `sam`),
//! `blob_cache` (`sleep`, `dccln`, `dcflu` as no-ops),
//! `alu_qcom` (the cat3 integer operations only Qualcomm's compiler emits: `sad`, `madsh.u16`),
//! `program` (a pre-decoded shader), `float` (binary16 widening as half registers see it, on top of
//! `modelrt_core::half`), `alu` (per-fiber value semantics), `alu_exec` (the cat1–cat4 executor: moves and
//! ALU, column-wise over the issued fibers), `mem` (loads, stores, images), `memory` (the memory a dispatch
//! sees: [`GpuMemory`], [`SharedMemory`], [`Image`]), `launch` (a dispatch's inputs and report: [`Launch`],
//! [`Dispatched`], [`RunStats`]), `exec` (the scheduler: work groups, fibers, flow control, registers),
//! `parallel` (a dispatch's batches of work groups on several threads: `$MODELRT_IR3_THREADS`, else every
//! core, 1 = serial; memory is written in work-group order afterwards, so the result is the serial one byte
//! for byte).
#![forbid(unsafe_code)]

pub mod alu;
mod alu_exec;
mod alu_qcom;
mod blob;
mod blob_atomic;
mod blob_bindless;
mod blob_cache;
mod blob_decode;
mod blob_decode_ibo;
mod blob_decode_ubo;
mod blob_decode_wave;
mod blob_exec;
mod blob_ibo;
mod blob_sam;
mod blob_ubo;
mod blob_wave;
pub mod decode;
mod disasm;
pub mod exec;
pub mod float;
pub mod instr;
pub mod launch;
mod mem;
pub mod memory;
mod parallel;
pub mod program;

pub use disasm::disasm_word;
pub use exec::{run, run_threads};
pub use launch::{Dispatched, Launch, RunStats};
pub use memory::{GpuMemory, Image, SharedMemory, Ubo};
pub use parallel::{default_threads, THREADS_ENV};
pub use program::Program;
