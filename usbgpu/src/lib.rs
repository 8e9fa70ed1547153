//! `modelrt-usbgpu`: the ASM24 USB-to-PCIe bridge driver, PCIe bring-up behind it, Navi31 SPI-flash
//! and PSP mailbox tools (`gpuflash`), and the AM driver that boots an AMD Navi31 GPU and runs
//! gfx1100 bundles on it ([`amd`], opened by [`assembly`]). With the `emu` feature: device models of
//! the bridge, the flash board and the Navi31 GPU ([`emu`]); the RDNA3 ISA interpreter is its own
//! crate (`modelrt-rdna3`). Without `std`, the protocol cores (ASM24, PCIe, Navi31 flash protocol,
//! copy planning) build for bare-metal targets.
#![cfg_attr(not(feature = "std"), no_std)]
// Unsafe code only in the modules marked `#[allow(unsafe_code)]` (hardware, FFI, loader), each listed in
// tests/tests/repo/soundness.rs; `unsafe_op_in_unsafe_fn` and `clippy::undocumented_unsafe_blocks` come from
// `[workspace.lints]`.
#![deny(unsafe_code)]

pub mod amd;
pub mod asm24;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod assembly;
#[cfg(feature = "emu")]
pub mod emu;
pub mod pcie;

#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod bench;
pub mod copy;
pub mod counting;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod flashtool;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
#[allow(unsafe_code)]
pub mod host;
pub mod navi31;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod session;
