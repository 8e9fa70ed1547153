//! 32-bit register access to a device's MMIO space (e.g. an AMD GPU's BAR5).
//!
//! Implementations: memory-mapped (raw-pointer volatile access to a mapped BAR), bridged (every access
//! is a PCIe TLP through the ASM24 USB bridge) and emulated. Drivers and firmware tools see only this
//! trait. Because a bridged access is a USB round trip, the trait has explicit batching hooks: a
//! driver may issue *posted* writes and must call [`Mmio::flush`] before depending on their effect
//! through another path; reads always flush first.
//!
//! Device MMIO must never be accessed through references (`volatile-register` is only for RAM shared
//! with a device), so the memory-mapped implementation uses `core::ptr::read_volatile`.
pub trait Mmio {
    /// Transport error; `Display` is shown to users.
    type Error: core::fmt::Debug + core::fmt::Display;

    /// Read the 32-bit register at byte `offset`.
    fn read32(&mut self, offset: u64) -> Result<u32, Self::Error>;

    /// Write the 32-bit register at byte `offset` and wait until the write is issued.
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), Self::Error>;

    /// Queue a write that may be combined with later ones; ordered with respect to all other
    /// accesses through this object. The default is an immediate write.
    fn write32_posted(&mut self, offset: u64, value: u32) -> Result<(), Self::Error> {
        self.write32(offset, value)
    }

    /// Issue all posted writes.
    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Read consecutive registers starting at `offset` (4 bytes apart).
    fn read_block(&mut self, offset: u64, out: &mut [u32]) -> Result<(), Self::Error> {
        for (i, word) in out.iter_mut().enumerate() {
            *word = self.read32(offset + 4 * i as u64)?;
        }
        Ok(())
    }

    /// Write consecutive registers starting at `offset` (4 bytes apart).
    fn write_block(&mut self, offset: u64, data: &[u32]) -> Result<(), Self::Error> {
        for (i, word) in data.iter().enumerate() {
            self.write32_posted(offset + 4 * i as u64, *word)?;
        }
        self.flush()
    }
}

impl<M: Mmio + ?Sized> Mmio for &mut M {
    type Error = M::Error;
    fn read32(&mut self, offset: u64) -> Result<u32, Self::Error> {
        (**self).read32(offset)
    }
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), Self::Error> {
        (**self).write32(offset, value)
    }
    fn write32_posted(&mut self, offset: u64, value: u32) -> Result<(), Self::Error> {
        (**self).write32_posted(offset, value)
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        (**self).flush()
    }
    fn read_block(&mut self, offset: u64, out: &mut [u32]) -> Result<(), Self::Error> {
        (**self).read_block(offset, out)
    }
    fn write_block(&mut self, offset: u64, data: &[u32]) -> Result<(), Self::Error> {
        (**self).write_block(offset, data)
    }
}
