//! The host CPU backend: runs tinygrad CLANG kernels (relocatable ELF objects) on this machine.
//!
//! - [`elf`] parses, lays out and links a kernel object; [`reloc`] holds the relocation formulas;
//! - [`exec_mem`] provides the zeroed arena mapping and W^X code pages;
//! - [`call`] calls a kernel by arity, [`pool`] runs `core_id` invocations in parallel;
//! - [`features`] maps baselines to feature bits and refuses bundles this CPU cannot run;
//! - [`device`] assembles all of it into [`CpuDevice`] / [`CpuQueue`];
//! - [`borrow`] lets a caller's buffer stand in for an input for one submit (zero-copy frames);
//! - [`weights`] reads read-only weights in place from the mapped bundle file.
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
#[allow(unsafe_code)]
pub mod pool;
pub mod reloc;
pub mod weights;

pub use borrow::{BorrowRefusal, Borrowed};
pub use device::{CpuDevice, CpuQueue};
pub use error::CpuError;
pub use features::{features_for_baseline, host_features};
pub use weights::WeightBinding;
