//! The bridge's DMA windows (SRAM, sys_buf, CQ, mock window) as the GPU's DMA sees them by PCIe bus
//! address, lent out of [`EmuState`] while BAR device models run (docs/hw/asm24-bridge.md).
use super::fabric::Fabric;
use super::EmuState;
use crate::{BUS_CQ, BUS_CQ_RELEASE, BUS_MOCK_WINDOW, BUS_SRAM, BUS_SYS_BUF};

/// The bridge windows as the GPU's DMA sees them (borrowed from [`EmuState`] while BAR models run).
pub(super) struct Windows<'a> {
    sram: &'a mut [u8],
    sys_buf: &'a mut [u8],
    cq_buf: &'a mut [u8],
    mock_window: &'a mut [u8],
    read_released: &'a mut bool,
    hold_release: bool,
}

impl Windows<'_> {
    /// The window bytes a DMA of `len` bytes at bus `address` touches (one window must hold all).
    fn slice(&mut self, address: u64, len: usize) -> Option<&mut [u8]> {
        let windows: [(u64, &mut [u8]); 4] = [
            (BUS_SRAM, &mut *self.sram),
            (BUS_SYS_BUF, &mut *self.sys_buf),
            (BUS_CQ, &mut *self.cq_buf),
            (BUS_MOCK_WINDOW, &mut *self.mock_window),
        ];
        for (base, window) in windows {
            if address >= base && address - base + len as u64 <= window.len() as u64 {
                let o = (address - base) as usize;
                return Some(&mut window[o..o + len]);
            }
        }
        None
    }
}

impl crate::emu::SystemBus for Windows<'_> {
    fn read(&mut self, address: u64, out: &mut [u8]) -> bool {
        self.slice(address, out.len())
            .map(|w| out.copy_from_slice(w))
            .is_some()
    }

    fn write(&mut self, address: u64, data: &[u8]) -> bool {
        let Some(w) = self.slice(address, data.len()) else {
            return false;
        };
        w.copy_from_slice(data);
        // A GPU write covering 0x82200C releases an armed SRAM read (docs/hw/asm24-bridge.md).
        let end = address + data.len() as u64;
        if address < BUS_CQ_RELEASE + 4 && end > BUS_CQ_RELEASE && !self.hold_release {
            *self.read_released = true;
        }
        true
    }
}

impl EmuState {
    /// The DMA windows and the fabric, borrowed apart (BAR models run while windows are lent out).
    pub(super) fn split_windows(&mut self) -> (Windows<'_>, &mut Fabric) {
        let windows = Windows {
            sram: &mut self.sram[..],
            sys_buf: &mut self.sys_buf[..],
            cq_buf: &mut self.cq_buf[..],
            mock_window: &mut self.mock_window[..],
            read_released: &mut self.read_released,
            hold_release: self.faults.hold_read_release,
        };
        (windows, &mut self.fabric)
    }
}
