//! The host side of hexagon bundles (the DSP runtime and its device models are the `modelrt-hexagon` crate):
//! - [`model`]: a bundle on the FastRPC engine, `--device dsp` (device nodes) and `--device dsp-emu` (the FastRPC
//!   device model, the model library under qemu-hexagon): load once, one invoke per step;
//! - [`emu`]: a bundle computed launch by launch under the qemu harness (per-launch tests, instruction counts);
//! - [`selftest`]: the bundle part of `modelrt dsp selftest` (an embedded bundle and its reference);
//! - [`registration`]: the `dsp` and `dsp-emu` devices the platform registry lists;
//! - [`inspect`]: the offline check of a kernel library (ELF, `entry`, only `HAP_*` imports) for `modelrt inspect`.
pub mod emu;
pub mod inspect;
pub mod model;
pub mod registration;
pub mod selftest;
