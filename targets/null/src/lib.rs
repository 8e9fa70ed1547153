//! `modelrt-null`, the skeleton backend (IREE's `null` driver plays the same part): everything a device
//! family's crate provides, and no hardware. [`NullDevice`] implements `modelrt_hal::device::Device` over
//! host memory — it allocates the arena, uploads and downloads, records queues and runs their copies —
//! and refuses every kernel launch at submit with [`NullError::NoKernels`]; [`NULL`] registers it
//! (hidden from `--help`) for bundles of any target.
//!
//! A new backend starts as a copy of this crate: replace the device's memory and queue with the
//! hardware's, name the target family it runs in its [`modelrt_platform::DeviceSpec`], and add one line to
//! the registry (`targets/src/registry.rs`; docs/architecture.md, "Adding a backend"). The device
//! conformance suite (tests/tests/cts/) runs on every registered device that is available, this one
//! included: what it checks here is the shared path — loading, the init phase's copies, input and output
//! checks, states — and that a device that computes nothing says so instead of returning outputs.
#![forbid(unsafe_code)]
mod device;
mod registration;

pub use device::{NullDevice, NullError, NullQueue};
pub use registration::NULL;
