//! `modelrt-core`: the `no_std` engine — model-bundle format (with its CRC-32, [`crc32`]), validation,
//! memory plan, executor, profiling, binary16 conversion ([`half`]) and output verification. It knows
//! no device and no OS: backends come in through `modelrt_hal::Device`.
//!
//! Features: `alloc` enables the bundle writer (used by xtask); `std` adds `std::error::Error`
//! impls. The executor never needs either. `defmt` adds `defmt::Format` impls and logs bundle load,
//! validation failures and submit errors through `defmt` (see `log`; nothing is logged without it).
//! `sign` adds `sign::verify`: Ed25519 verification of signed bundles (docs/signing.md).
#![no_std]
#![forbid(unsafe_code)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod bundle;
pub mod crc32;
pub mod exec;
pub mod half;
pub mod index_check;
mod log;
pub mod plan;
pub mod profile;
#[cfg(feature = "sign")]
pub mod sign;
pub mod state;
pub mod verify;

pub use bundle::{Bundle, BundleError};
pub use exec::{ExecError, Executor, InputRange, InputSource, Timing};
pub use state::StateInfo;
