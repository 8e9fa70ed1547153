//! Subcommands of the `modelrt` binary, one module each (and what they share: `out`, the stdout
//! writer, and `units`, how quantities are printed; `progress`, progress bars and Ctrl-C).
#[macro_use]
pub mod out;
pub mod demo;
pub mod disasm;
pub mod dsp;
pub mod model;
pub mod progress;
pub mod qcom;
pub mod units;
pub mod usb;
mod usb_amd;
