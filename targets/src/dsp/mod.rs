//! The host side of hexagon bundles that is not the device (the DSP runtime, the HAL device `--device dsp` and
//! `--device dsp-emu` load through `core::Executor` and its device models are the `modelrt-hexagon` crate,
//! [`modelrt_hexagon::device`]):
//! - [`ops`]: a bundle's steps as the FastRPC engine's op list by (buffer, offset), for the launch-by-launch paths;
//! - [`emu`]: a bundle computed launch by launch under the qemu harness (per-launch tests, instruction counts);
//! - [`selftest`]: the bundle part of `modelrt dsp selftest` (an embedded bundle and its reference);
//! - [`inspect`]: the offline check of a kernel library (ELF, `entry`, only `HAP_*` imports) for `modelrt inspect`.
pub mod emu;
pub mod inspect;
pub mod ops;
pub mod selftest;

/// The kernel record of a hexagon bundle's DSP model library.
pub use modelrt_hexagon::device::MODEL_LIBRARY;
