//! `modelrt-gpuflash`: Navi31 (RX 7900 class) SPI-flash and PSP firmware tools over BAR5
//! (docs/hw/navi31-spi-flash.md) and the engine of the `gpuflash` binary.
//!
//! * [`navi31`] (no_std, no allocation): the ROM_SW software SPI engine, the SPI NOR driver and its
//!   chip table, the verified resumable writer, the ROM aperture dump, the PSP early-boot mailbox
//!   and IFWI items — all over `modelrt_hal::mmio::Mmio`;
//! * [`flashtool`] (std): opening a board (USB bridge, native PCI, emulator) and every `gpuflash`
//!   command, reporting progress through callbacks;
//! * with the `emu` feature: the flash board device model and the direct (bridge-less) model
//!   transport ([`emu`]).
//!
//! Depends on `modelrt-asm24` (bridge sessions, PCIe, the bridge emulator) and `modelrt-hal`.
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]

#[cfg(feature = "emu")]
pub mod emu;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod flashtool;
pub mod navi31;
