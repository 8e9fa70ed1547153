//! The interpreter: executes a [`Program`] for one compute dispatch (docs/hw/adreno-kgsl-pm4.md §16.5).
//! `batches` cuts the work groups into batches, `group` is a batch's state (register file, PCs, shared, private
//! and constant memory), `schedule` issues instructions (min-PC reconvergence, cat0 flow control) to the
//! per-category executors: `alu` (cat1–cat4 and the blob's cat3 dot products, column-wise over the issued
//! fibers), `cat5` (`isam`, `sam`), `cat6` (loads, stores, atomics, UAVs, bindless descriptors, the constant
//! file), `wave` (the wave model and the wave-level instructions of several categories), on `texel` (image texel
//! access). `parallel` runs batches on several threads. A dispatch's inputs are a [`Launch`] and a
//! [`GpuMemory`] (`launch`, `memory`). Depends on `instr` and `program` (so on `decode`), never on `disasm`.
pub mod alu;
mod batches;
mod cat5;
mod cat6;
mod group;
pub mod launch;
pub mod memory;
mod parallel;
mod schedule;
mod texel;
mod wave;

pub use parallel::{default_threads, THREADS_ENV};

use crate::program::Program;
use batches::Batches;
use launch::{Dispatched, Launch, RunStats};
use memory::GpuMemory;

/// Execute `prog` for every work group of `launch` on the calling thread.
pub fn run(
    prog: &Program,
    launch: &Launch<'_>,
    mem: &mut dyn GpuMemory,
) -> Result<RunStats, String> {
    Ok(run_threads(prog, launch, mem, 1)?.stats)
}

/// Execute `prog` for every work group of `launch`, spreading the batches over up to `threads` threads when
/// `mem` has a [`GpuMemory::shared_view`] (docs/hw/adreno-kgsl-pm4.md §16.5). Memory, counters and errors are
/// those of the serial run for every kernel whose work groups do not read what other work groups of the same
/// dispatch write.
pub fn run_threads(
    prog: &Program,
    launch: &Launch<'_>,
    mem: &mut dyn GpuMemory,
    threads: usize,
) -> Result<Dispatched, String> {
    let batches = Batches::new(prog, launch)?;
    if threads > 1 && batches.count() > 1 && !cat6::needs_serial(prog) {
        if let Some(out) = parallel::run(&batches, prog, launch, mem, threads) {
            return out;
        }
    }
    let mut stats = RunStats::default();
    let mut g = None;
    for b in 0..batches.count() {
        batches.run(b, &mut g, prog, launch, mem, &mut stats)?;
    }
    Ok(Dispatched {
        stats,
        overlapping_bytes: 0,
    })
}
