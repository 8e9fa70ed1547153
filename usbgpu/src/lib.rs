//! `modelrt-usbgpu`: ASM24 bridge driver, PCIe bring-up behind it, AMD bring-up and Navi31 firmware tools.
#![cfg_attr(not(feature = "std"), no_std)]

#[cfg(feature = "emu")]
pub mod emu;
