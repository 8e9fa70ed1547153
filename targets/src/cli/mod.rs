//! Subcommands of the `modelrt` binary, one module each.
pub mod demo;
pub mod dsp;
pub mod model;
pub mod qcom;
pub mod usb;
mod usb_amd;
