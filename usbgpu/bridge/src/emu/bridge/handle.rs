//! [`EmuHandle`]: a second handle on an emulated bridge for tests and tools — transfer counters,
//! fault injection, emulated time, link and plug events, BAR inspection and GPU-side DMA into the
//! bridge windows.
use super::builder::Identity;
use super::faults::{Faults, LTSSM_DETECT};
use super::{lock, EmuState};
use crate::counting::TransferCounts;
use crate::emu::RegisterModel;
use crate::XDATA_LTSSM;
use std::sync::{Arc, Mutex};

/// What a GPU-side DMA could not do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("GPU DMA of {len} bytes at bus address {address:#x} hits no bridge window")]
pub struct DmaError {
    pub address: u64,
    pub len: usize,
}

/// A second handle on the same emulated device: counters, faults, GPU-side DMA, inspection.
#[derive(Clone)]
pub struct EmuHandle {
    pub(super) state: Arc<Mutex<EmuState>>,
}

impl EmuHandle {
    /// Transfer counters so far (counted like the host-side [`crate::counting::Counting`]).
    pub fn counters(&self) -> TransferCounts {
        lock(&self.state).counters
    }

    /// Arm faults: `h.faults(|f| f.engine_errors = 3)`.
    pub fn faults(&self, f: impl FnOnce(&mut Faults)) {
        f(&mut lock(&self.state).faults)
    }

    /// USB identity.
    pub fn identity(&self) -> Identity {
        lock(&self.state).identity.clone()
    }

    /// Emulated nanoseconds elapsed.
    pub fn clock_ns(&self) -> u64 {
        lock(&self.state).clock_ns
    }

    /// Drop the PCIe link now (LTSSM leaves L0).
    pub fn link_down(&self) {
        lock(&self.state).xdata[XDATA_LTSSM as usize] = LTSSM_DETECT;
    }

    /// Unplug the device: every later transfer fails with `Disconnected`.
    pub fn disconnect(&self) {
        lock(&self.state).disconnected = true;
    }

    /// Current REBAR size index of BAR0 (None without the capability).
    pub fn rebar_index(&self) -> Option<u8> {
        lock(&self.state).fabric.endpoint.rebar.map(|r| r.index)
    }

    /// Direct access to a GPU BAR model (inspection from tests).
    pub fn with_bar<R>(
        &self,
        index: usize,
        f: impl FnOnce(&mut dyn RegisterModel) -> R,
    ) -> Option<R> {
        let mut s = lock(&self.state);
        let bar = s.fabric.endpoint.bars.get_mut(index)?.as_mut()?;
        Some(f(bar.model.as_mut()))
    }

    /// GPU-initiated write to a bridge window by PCIe bus address (SRAM 0x200000, sys_buf 0x820000,
    /// CQ 0x822000, mock window 0x800000). A write covering 0x82200C releases an armed SRAM read.
    pub fn gpu_write(&self, address: u64, data: &[u8]) -> Result<(), DmaError> {
        let mut s = lock(&self.state);
        let (mut windows, _) = s.split_windows();
        match crate::emu::SystemBus::write(&mut windows, address, data) {
            true => Ok(()),
            false => Err(DmaError {
                address,
                len: data.len(),
            }),
        }
    }

    /// GPU-initiated read of a bridge window.
    pub fn gpu_read(&self, address: u64, out: &mut [u8]) -> Result<(), DmaError> {
        let mut s = lock(&self.state);
        let (mut windows, _) = s.split_windows();
        match crate::emu::SystemBus::read(&mut windows, address, out) {
            true => Ok(()),
            false => Err(DmaError {
                address,
                len: out.len(),
            }),
        }
    }
}
