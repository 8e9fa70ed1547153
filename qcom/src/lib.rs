//! `modelrt-qcom`: the Adreno backend (KGSL + a6xx PM4 command streams). The Hexagon DSP side is the separate
//! crate `modelrt-hexagon` (qcom/hexagon/).
//!
//! no_std: [`pm4`] (packet encoding/decoding) and [`a6xx`] (kernel layout, args region, stream builder).
//! std: [`kgsl`] (ioctl layer behind a trait), [`adreno`] (the HAL `Device`), [`selftest`].
//! `emu`: [`emu::kgsl`], a KGSL model that validates every submitted stream, and [`emu::ir3`], its shader
//! interpreter.
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod a6xx;
pub mod pm4;

#[cfg(feature = "std")]
pub mod adreno;
#[cfg(feature = "std")]
pub mod kgsl;
#[cfg(feature = "std")]
pub mod selftest;

#[cfg(feature = "emu")]
pub mod emu;
