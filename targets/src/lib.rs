//! `modelrt-targets`: platform assemblies of modelrt backends.
pub mod cpu;
pub mod inspect;
pub mod npy;
pub mod qcom_device;
pub mod runner;
