//! `modelrt-amd`: the AM driver that boots an AMD Navi31 GPU behind the ASM24 bridge and runs gfx1100
//! bundles on it, and the Navi31 GPU device model it is tested against.
//!
//! * protocol pieces (no_std): firmware blob headers ([`fw`]) and the IP discovery table
//!   ([`discovery`]);
//! * the driver (std): bus access over the bridge ([`bus`]), boot ([`boot`]), memory, queues, PM4
//!   and SDMA packets, transfers and the hal device ([`device`]);
//! * [`assembly`]: where the driver and the device model meet — opening a booted GPU for tools
//!   (real hardware, or the device model behind the bridge emulator);
//! * with the `emu` feature: the Navi31 GPU device model (`emu::navi31_gpu`), whose shaders run on
//!   the RDNA3 interpreter (`modelrt-rdna3`);
//! * with the `platform` feature: [`platform`], the `usb`/`usb-emu` devices the platform registry lists
//!   and the firmware-directory lookup every `modelrt` command shares.
//!
//! Depends on `modelrt-asm24` (bridge, PCIe, sessions, the bridge emulator) and `modelrt-hal`; the
//! driver modules never import the device model.
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]

pub mod discovery;
pub mod fw;

// The AM driver (std: it allocates while booting and recording; `run` itself does not).
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod bench;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod boot;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod bus;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod code_object;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod device;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod error;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod inline;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod ip;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod mem;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod pm4;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod queue;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod regs;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod scratch;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod sdma;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod transfer;

#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod assembly;
#[cfg(feature = "emu")]
pub mod emu;
#[cfg(all(feature = "platform", any(target_os = "linux", target_os = "macos")))]
pub mod load_bench;
#[cfg(all(feature = "platform", any(target_os = "linux", target_os = "macos")))]
pub mod platform;
