//! The host side of hexagon bundles besides the device (feature `platform`; the HAL device that `--device dsp`
//! and `--device dsp-emu` load through `core::Executor` is [`crate::device`]):
//! - [`ops`]: a bundle's steps as the FastRPC engine's op list by (buffer, offset), for the launch-by-launch paths;
//! - [`emu`]: a bundle computed launch by launch under the qemu harness (per-launch tests, instruction counts);
//! - [`selftest`]: the bundle part of `modelrt dsp selftest` (an embedded bundle and its reference);
//! - [`inspect`]: the offline check of a kernel library (ELF, `entry`, only `HAP_*` imports) for `modelrt inspect`.
pub mod emu;
pub mod inspect;
pub mod ops;
pub mod selftest;
