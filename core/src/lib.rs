//! `modelrt-core`: the `no_std` engine — model-bundle format, validation, memory plan, executor and
//! output verification. It knows no device and no OS: backends come in through `modelrt_hal::Device`.
//!
//! Features: `alloc` enables the bundle writer (used by xtask); `std` adds `std::error::Error`
//! impls. The executor never needs either.
#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod bundle;
pub mod exec;
pub mod plan;
pub mod profile;
pub mod verify;

pub use bundle::{Bundle, BundleError};
pub use exec::{ExecError, Executor, Timing};
