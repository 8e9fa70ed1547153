//! PCIe configuration-space access (type 0 / type 1 by bus), as offered by a native PCI host or by the
//! ASM24 bridge's TLP engine.

/// A bus/device/function address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Bdf {
    pub bus: u8,
    pub dev: u8,
    pub func: u8,
}

/// Configuration-space reads and writes of 1, 2 or 4 bytes at `offset` (naturally aligned).
pub trait PciConfig {
    type Error: core::fmt::Debug + core::fmt::Display;
    fn config_read(&mut self, bdf: Bdf, offset: u16, size: u8) -> Result<u32, Self::Error>;
    fn config_write(
        &mut self,
        bdf: Bdf,
        offset: u16,
        size: u8,
        value: u32,
    ) -> Result<(), Self::Error>;
}
