//! `modelrt-capi`: modelrt as a C library (`libmodelrt.so` / `libmodelrt.a`, header
//! `targets/capi/include/modelrt.h`). The safe half — device names, tensor infos, argument checks,
//! the thread-local last error, the overlap check of run's buffers ([`ranges`]) — is plain Rust; only [`ffi`] (the `extern "C"` functions and the
//! model that owns its bundle file) touches raw pointers.
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod device;
pub mod dtype;
pub mod error;
#[allow(unsafe_code)]
pub mod ffi;
pub mod info;
pub mod ranges;
