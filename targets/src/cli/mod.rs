//! Subcommands of the `modelrt` binary, one module each (and what they share: `out`, the stdout
//! writer, and `units`, how quantities are printed).
#[macro_use]
pub mod out;
pub mod demo;
pub mod disasm;
pub mod dsp;
pub mod model;
pub mod qcom;
pub mod units;
pub mod usb;
mod usb_amd;
