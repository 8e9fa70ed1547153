//! Navi31 (RX 7900 class) SPI-flash and PSP firmware tools over BAR5 (docs/hw/navi31-spi-flash.md).
//!
//! Everything here is written against [`modelrt_hal::mmio::Mmio`], so the same code runs over the
//! ASM24 USB bridge, a native PCI BAR mapping and the emulator, and stays `no_std` (no allocation).
//! * [`romsw`]: the SMUIO ROM_SW software SPI engine as an `embedded_hal` `SpiDevice`;
//! * [`spi_nor`] + [`chips`]: the SPI NOR driver and its chip table;
//! * [`writer`]: verified, resumable, skip-unchanged image writes;
//! * [`aperture`]: the raw ROM_INDEX/ROM_DATA dump;
//! * [`psp`] + [`ifwi`]: the PSP early-boot mailbox (probe, `ifwi_all`) and IFWI item resolution;
//! * [`regs`]: BAR5 offsets and fields.
pub mod aperture;
pub mod chips;
pub mod ifwi;
pub mod psp;
pub mod regs;
pub mod romsw;
pub mod spi_nor;
pub mod writer;
