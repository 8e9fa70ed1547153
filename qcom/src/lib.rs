//! `modelrt-qcom`: the Adreno backend (KGSL + a6xx PM4 command streams). The Hexagon DSP side is the separate
//! crate `modelrt-hexagon` (qcom/hexagon/).
//!
//! no_std: [`pm4`] (packet encoding/decoding) and [`a6xx`] (kernel layout, args region, stream builder).
//! std: [`kgsl`] (ioctl layer behind a trait), [`adreno`] (the HAL `Device`), [`selftest`].
//! `emu`: [`emu::kgsl`], a KGSL device model that validates every submitted stream and runs the kernels on the IR3
//! interpreter of the `modelrt-ir3` crate (qcom/ir3/).
//! `platform`: [`platform`], the `qcom` and `qcom-emu` devices the platform registry lists, and zero-copy
//! camera-frame binding.
#![cfg_attr(not(feature = "std"), no_std)]
// Unsafe code only in the modules marked `#[allow(unsafe_code)]` (hardware, FFI, loader), each listed in
// tests/tests/repo/soundness.rs; `unsafe_op_in_unsafe_fn` and `clippy::undocumented_unsafe_blocks` come from
// `[workspace.lints]`.
#![deny(unsafe_code)]

pub mod a6xx;
pub mod pm4;

#[cfg(feature = "std")]
pub mod adreno;
#[cfg(feature = "std")]
#[allow(unsafe_code)]
pub mod kgsl;
#[cfg(feature = "std")]
pub mod selftest;

#[cfg(feature = "emu")]
pub mod emu;

#[cfg(feature = "platform")]
pub mod platform;
