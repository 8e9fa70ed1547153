//! `modelrt-hal`: the `no_std` traits every modelrt backend implements.
//!
//! The crate knows no concrete device. It defines:
//! - [`target`]: what a bundle was compiled for, and the device-facing kernel metadata that the bundle
//!   carries per target (`core` stores these types verbatim);
//! - [`device`]: device memory (one arena), kernel loading and an HCQ-shaped command [`device::Queue`]
//!   (wait → exec/copy → signal, with timestamps) that is recorded once and replayed per inference;
//! - [`mmio`]: 32-bit register access (memory-mapped, bridged over USB, or emulated);
//! - [`pci`]: PCIe configuration space access;
//! - [`usb`]: the vendor-control + bulk USB transport that the ASM24 bridge driver runs over;
//! - `embedded_hal` 1.0 is re-exported for delay and SPI, which flash drivers are written against.
#![no_std]
#![forbid(unsafe_code)]

#[cfg(feature = "std")]
extern crate std;

pub mod device;
pub mod mmio;
pub mod pci;
pub mod target;
pub mod usb;

pub use embedded_hal;
