//! `modelrt-qcom`: Adreno (KGSL + a6xx PM4 command streams) and Hexagon DSP (FastRPC) backends.
//!
//! no_std: [`pm4`] (packet encoding/decoding) and [`a6xx`] (kernel layout, args region, stream builder).
//! std: [`kgsl`] (ioctl layer behind a trait), [`adreno`] (the HAL `Device`), [`selftest`].
//! `emu`: [`emu::kgsl`], a KGSL model that validates every submitted stream.
#![cfg_attr(not(feature = "std"), no_std)]

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
