//! The `modelrt` command line ([`app`]: its arguments and dispatch) and its subcommands, one module
//! each (and what they share: `out`, the stdout writer, and `units`, how quantities are printed;
//! `progress`, progress bars and Ctrl-C).
//! It is library code so that the `modelrt` binary and the Python wheel's `modelrt` command are one
//! program.
#[macro_use]
pub mod out;
pub mod app;
pub mod demo;
pub mod disasm;
pub mod dsp;
pub mod model;
pub mod progress;
pub mod qcom;
pub mod units;
pub mod usb;
mod usb_amd;
