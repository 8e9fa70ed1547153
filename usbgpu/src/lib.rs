//! `modelrt-usbgpu`: ASM24 bridge driver, PCIe bring-up behind it and Navi31 firmware tools (AMD GPU execution is planned).
#![cfg_attr(not(feature = "std"), no_std)]
// Unsafe code only in the modules marked `#[allow(unsafe_code)]` (hardware, FFI, loader), each listed in
// tests/tests/soundness.rs; `unsafe_op_in_unsafe_fn` and `clippy::undocumented_unsafe_blocks` come from
// `[workspace.lints]`.
#![deny(unsafe_code)]

pub mod amd;
pub mod asm24;
#[cfg(feature = "emu")]
pub mod emu;
pub mod pcie;

#[cfg(all(feature = "emu", any(target_os = "linux", target_os = "macos")))]
pub mod bench;
pub mod copy;
pub mod counting;
#[cfg(all(feature = "emu", any(target_os = "linux", target_os = "macos")))]
pub mod flashtool;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
#[allow(unsafe_code)]
pub mod host;
pub mod navi31;
#[cfg(all(feature = "emu", any(target_os = "linux", target_os = "macos")))]
pub mod session;
