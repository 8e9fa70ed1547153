//! `modelrt-targets`: platform assemblies of modelrt backends.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
pub mod cpu;
pub mod inspect;
pub mod npy;
pub mod qcom_device;
pub mod runner;
