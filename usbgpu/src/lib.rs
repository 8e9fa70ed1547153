//! `modelrt-usbgpu`: ASM24 bridge driver, PCIe bring-up behind it, AMD bring-up and Navi31 firmware tools.
#![cfg_attr(not(feature = "std"), no_std)]

#[cfg(feature = "emu")]
pub mod emu;
pub mod asm24;
pub mod pcie;

pub mod navi31;
pub mod copy;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod host;
pub mod counting;
#[cfg(all(feature = "emu", any(target_os = "linux", target_os = "macos")))]
pub mod session;
#[cfg(all(feature = "emu", any(target_os = "linux", target_os = "macos")))]
pub mod bench;
