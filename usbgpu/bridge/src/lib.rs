//! `modelrt-asm24`: the ASM24 USB3 ↔ PCIe bridge running tinygrad's custom firmware
//! (docs/hw/asm24-bridge.md) and the PCIe link behind it — the lowest of the USB-GPU crates, which
//! the AM driver (`modelrt-amd`) and the Navi31 flash tools (`modelrt-gpuflash`) build on.
//!
//! * identity and address map (below), pure request encoders ([`proto`]) and the transport-generic
//!   driver ([`bridge`], [`error`]);
//! * PCIe bring-up of the bridge chain and the GPU, and MMIO over USB or a native BAR ([`pcie`]);
//! * the transfer-counting transport wrapper ([`counting`]) and SRAM copy planning ([`copy`]);
//! * host side (std, Linux/macOS): the nusb transport ([`host`]), opening a bridge for tools
//!   ([`session`]) and the copy benchmark ([`bench`]);
//! * with the `emu` feature: the device-model interface (`emu::RegisterModel`, `emu::SystemBus`)
//!   and the bridge emulator (`emu::bridge`) the other crates' device models plug into.
//!
//! Depends on `modelrt-hal` only (plus nusb/libc/thiserror on hosts). Without `std`, the protocol
//! cores (ASM24, PCIe, copy planning) build for bare-metal targets.
//!
//! The firmware documents no protocol-version request (docs/hw/asm24-bridge.md §2 lists E4/E5/F0/F2/F3 only, §13 says
//! the firmware source is unavailable), so the driver reports the USB `bcdDevice` and product string
//! as the firmware identity instead of inventing a query.
#![cfg_attr(not(feature = "std"), no_std)]
// Unsafe code only in the modules marked `#[allow(unsafe_code)]` (hardware, FFI), each listed in
// tests/tests/repo/soundness.rs; `unsafe_op_in_unsafe_fn` and `clippy::undocumented_unsafe_blocks` come from
// `[workspace.lints]`.
#![deny(unsafe_code)]

pub mod bridge;
pub mod error;
pub mod proto;

#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod bench;
pub mod copy;
pub mod counting;
#[cfg(feature = "emu")]
pub mod emu;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
#[allow(unsafe_code)]
pub mod host;
pub mod pcie;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod session;

pub use bridge::Bridge;
pub use error::BridgeError;

/// (VID, PID) pairs of the custom firmware, in the order the reference host tries them (docs/hw/asm24-bridge.md §1).
pub const USB_IDS: [(u16, u16); 2] = [(0xADD1, 0x0001), (0x3801, 0x0001)];
/// Accepted iProduct prefixes.
pub const PRODUCT_PREFIXES: [&str; 2] = ["custom", "AS2462"];
/// Bulk OUT endpoint.
pub const EP_BULK_OUT: u8 = 0x02;
/// Bulk IN endpoint.
pub const EP_BULK_IN: u8 = 0x81;

/// XDATA byte holding the LTSSM state.
pub const XDATA_LTSSM: u16 = 0xB450;
/// LTSSM value meaning "link up" (L0).
pub const LTSSM_L0: u8 = 0x78;
/// XDATA alias of the first 4 KiB of SRAM.
pub const XDATA_SRAM: u16 = 0xF000;
/// XDATA alias of `sys_buf` (PCIe 0x820000).
pub const XDATA_SYS_BUF: u16 = 0xA000;

/// PCIe bus address of the 512 KiB SRAM as seen by the GPU.
pub const BUS_SRAM: u64 = 0x20_0000;
/// PCIe bus address of `sys_buf` (4 KiB).
pub const BUS_SYS_BUF: u64 = 0x82_0000;
/// PCIe bus address of `cq_buf` (4 KiB).
pub const BUS_CQ: u64 = 0x82_2000;
/// GPU write here releases an armed SRAM → host read (docs/hw/asm24-bridge.md §5.2, inferred).
pub const BUS_CQ_RELEASE: u64 = BUS_CQ + 12;
/// Mock-only 512-byte window (XDATA 0xB000 ↔ PCIe 0x800000).
pub const BUS_MOCK_WINDOW: u64 = 0x80_0000;
/// XDATA alias of the mock-only window.
pub const XDATA_MOCK_WINDOW: u16 = 0xB000;
