//! `modelrt-cpu`, the host CPU backend: runs tinygrad CLANG kernels (relocatable ELF objects) on this
//! machine, and registers the `cpu` device ([`registration::CPU`]).
//!
//! - [`elf`] parses, lays out and links a kernel object; [`reloc`] holds the relocation formulas;
//! - [`exec_mem`] provides the zeroed arena mapping and W^X code pages;
//! - [`call`] calls a kernel by arity, [`pool`] runs `core_id` invocations in parallel;
//! - [`features`] maps baselines to feature bits and refuses bundles this CPU cannot run;
//! - [`device`] assembles all of it into [`CpuDevice`] / [`CpuQueue`];
//! - [`borrow`] lets a caller's buffer stand in for an input for one submit (zero-copy frames);
//! - [`weights`] reads read-only weights in place from the mapped bundle file;
//! - [`frame`] runs a frame reading borrowed inputs in place, [`threads`] picks the worker count;
//! - [`registration`] is the device the platform registry lists.
// Unsafe code only in the modules marked `#[allow(unsafe_code)]` (loader, FFI calls into kernels, the
// arena mapping), each listed in tests/tests/repo/soundness.rs; `unsafe_op_in_unsafe_fn` and
// `clippy::undocumented_unsafe_blocks` come from `[workspace.lints]`.
#![deny(unsafe_code)]
#[allow(unsafe_code)]
pub mod borrow;
#[allow(unsafe_code)]
pub mod call;
#[allow(unsafe_code)]
pub mod device;
pub mod elf;
pub mod error;
#[allow(unsafe_code)]
pub mod exec_mem;
pub mod features;
pub mod frame;
#[allow(unsafe_code)]
pub mod pool;
pub mod registration;
pub mod reloc;
pub mod threads;
pub mod weights;

pub use borrow::{BorrowRefusal, Borrowed};
pub use device::{CpuDevice, CpuQueue};
pub use error::CpuError;
pub use features::{features_for_baseline, host_features};
pub use threads::{cpu_threads, cpu_threads_for};
pub use weights::WeightBinding;
