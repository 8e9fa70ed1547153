//! `modelrt-core`: the `no_std` engine — model-bundle format, validation, memory plan and executor.
#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;
