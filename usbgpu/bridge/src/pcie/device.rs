//! [`PciDevice`]: the GPU behind the bridge after bring-up — its config space, its BARs as
//! [`BridgedMmio`] and the DMA window (bridge SRAM as the GPU sees it, with a bump allocator).
use super::bringup::{self, Bar, BarMap, BusSetup};
use super::mmio::BridgedMmio;
use crate::proto::SRAM_SIZE;
use crate::{Bridge, BridgeError, BUS_SRAM, XDATA_SRAM};
use modelrt_hal::pci::{Bdf, PciConfig};
use modelrt_hal::usb::UsbTransport;

/// A piece of bridge SRAM handed out by [`PciDevice::alloc_sysmem`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SramRegion {
    /// Offset inside the 512 KiB SRAM.
    pub offset: usize,
    pub len: usize,
    /// Address the GPU uses to reach it (PCIe 0x200000 + offset).
    pub bus_address: u64,
    /// XDATA alias (`0xF000 + offset`); only the first 4 KiB of SRAM is really aliased.
    pub xdata: u32,
}

/// The endpoint behind the bridge.
pub struct PciDevice<T> {
    bridge: Bridge<T>,
    bdf: Bdf,
    bars: BarMap,
    sram_next: usize,
}

impl<T: UsbTransport> PciDevice<T> {
    /// Link up (docs/hw/asm24-bridge.md §6) and bus/BAR setup (docs/hw/asm24-bridge.md §7.6) with its default parameters.
    pub fn open(bridge: Bridge<T>) -> Result<Self, BridgeError> {
        Self::open_with(bridge, &BusSetup::default())
    }

    /// As [`PciDevice::open`] with explicit parameters.
    pub fn open_with(mut bridge: Bridge<T>, setup: &BusSetup) -> Result<Self, BridgeError> {
        bridge.ensure_link()?;
        let bars = bringup::setup(&mut bridge, setup)?;
        Ok(PciDevice {
            bridge,
            bdf: Bdf {
                bus: setup.gpu_bus,
                dev: 0,
                func: 0,
            },
            bars,
            sram_next: 0,
        })
    }

    /// The endpoint's address.
    pub fn bdf(&self) -> Bdf {
        self.bdf
    }

    /// All assigned BARs.
    pub fn bars(&self) -> &BarMap {
        &self.bars
    }

    /// One assigned BAR.
    pub fn bar(&self, index: u8) -> Result<Bar, BridgeError> {
        self.bars
            .get(index as usize)
            .copied()
            .flatten()
            .ok_or(BridgeError::NoSuchBar(index))
    }

    /// Config read on the endpoint.
    pub fn config_read(&mut self, offset: u16, size: u8) -> Result<u32, BridgeError> {
        self.bridge.config_read(self.bdf, offset, size)
    }

    /// Config write on the endpoint.
    pub fn config_write(&mut self, offset: u16, size: u8, value: u32) -> Result<(), BridgeError> {
        self.bridge.config_write(self.bdf, offset, size, value)
    }

    /// MMIO view of BAR `index` (every access a TLP through the bridge).
    pub fn bar_mmio(&mut self, index: u8) -> Result<BridgedMmio<'_, T>, BridgeError> {
        let bar = self.bar(index)?;
        Ok(BridgedMmio::new(&mut self.bridge, bar.address, bar.size))
    }

    /// The bridge (raw protocol access: XDATA, SRAM DMA, TLPs).
    pub fn bridge(&mut self) -> &mut Bridge<T> {
        &mut self.bridge
    }

    /// Give the bridge back.
    pub fn into_bridge(self) -> Bridge<T> {
        self.bridge
    }

    /// Bump-allocate `len` bytes of bridge SRAM for GPU DMA (non-wrapping, docs/hw/asm24-bridge.md §4).
    pub fn alloc_sysmem(&mut self, len: usize) -> Result<SramRegion, BridgeError> {
        let offset = self.sram_next;
        if len == 0 || len > SRAM_SIZE - offset {
            return Err(BridgeError::OutOfMemory);
        }
        self.sram_next += len;
        Ok(SramRegion {
            offset,
            len,
            bus_address: BUS_SRAM + offset as u64,
            xdata: XDATA_SRAM as u32 + offset as u32,
        })
    }
}
