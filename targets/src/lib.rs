//! `modelrt-targets`: platform assemblies of modelrt backends.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
pub mod amd_device;
pub mod bundle_file;
pub mod cpu;
pub mod dsp;
pub mod frame;
pub mod inspect;
pub mod npy;
pub mod qcom_device;
pub mod runner;
