//! `modelrt-targets`: platform assemblies of modelrt backends.
// Unsafe code only in the modules marked `#[allow(unsafe_code)]` (hardware, FFI, loader), each listed in
// tests/tests/soundness.rs; `unsafe_op_in_unsafe_fn` and `clippy::undocumented_unsafe_blocks` come from
// `[workspace.lints]`.
#![deny(unsafe_code)]
pub mod amd_device;
#[allow(unsafe_code)]
pub mod bundle_file;
pub mod cpu;
pub mod dsp_emu;
pub mod dsp_model;
pub mod dsp_selftest;
pub mod frame;
pub mod inspect;
pub mod inspect_hexagon;
pub mod npy;
pub mod qcom_device;
pub mod runner;
