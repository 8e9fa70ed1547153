//! The bridge emulator's request engine: control transfers (0xE4/0xE5 XDATA, 0xF0 TLP engine, 0xF2
//! SRAM DMA arms, 0xF3 power), bulk OUT/IN against the armed streams, emulated time per transfer and
//! the [`UsbTransport`] implementation (docs/hw/asm24-bridge.md §12).
use super::faults::LTSSM_DETECT;
use super::wire::{
    self, InRequest, OutRequest, TlpKind, TlpRequest, COMPLETION_BYTES, SRAM_BYTES,
    XDATA_READ_LIMIT,
};
use super::{lock, BridgeEmulator, EmuState};
use crate::proto::CplStatus;
use crate::{
    EP_BULK_IN, EP_BULK_OUT, LTSSM_L0, XDATA_LTSSM, XDATA_MOCK_WINDOW, XDATA_SRAM, XDATA_SYS_BUF,
};
use modelrt_hal::pci::Bdf;
use modelrt_hal::usb::{Setup, Transfer, UsbError, UsbTransport};
use std::time::Duration;

/// What an armed bulk transfer (OUT or IN) moves: a 0xF0 mode-1/2 stream to/from PCIe memory, or
/// a 0xF2 SRAM DMA window.
pub(super) enum Consumer {
    Stream { address: u64, len: usize },
    Sram { offset: usize, len: usize },
}

impl Consumer {
    /// Bytes the armed transfer must carry.
    fn len(&self) -> usize {
        match self {
            Consumer::Stream { len, .. } | Consumer::Sram { len, .. } => *len,
        }
    }
}

impl EmuState {
    fn xdata_byte(&mut self, addr: u16) -> &mut u8 {
        let a = addr as usize;
        match addr {
            0xF000..=0xFFFF => &mut self.sram[a - XDATA_SRAM as usize],
            0xA000..=0xAFFF => &mut self.sys_buf[a - XDATA_SYS_BUF as usize],
            0xB000..=0xB1FF => &mut self.mock_window[a - XDATA_MOCK_WINDOW as usize],
            _ => &mut self.xdata[a],
        }
    }

    fn link_up(&self) -> bool {
        self.xdata[XDATA_LTSSM as usize] == LTSSM_L0
    }

    fn elapse(&mut self, ns: u64) {
        self.clock_ns += ns;
        self.fabric.advance(ns);
    }

    fn bulk_cost(&self, bytes: usize) -> u64 {
        self.timing.bulk_setup_ns + (bytes as u64 * 1000) / self.timing.bulk_bytes_per_us.max(1)
    }

    fn check_connected(&self) -> Result<(), UsbError> {
        if self.disconnected {
            Err(UsbError::Disconnected)
        } else {
            Ok(())
        }
    }

    /// Common control-transfer prologue: connection, counters, time, injected stall/timeout.
    fn control_prologue(&mut self, req: u8, timeout: Duration) -> Result<(), UsbError> {
        self.check_connected()?;
        self.elapse(self.timing.control_ns);
        if self.faults.stall_request == Some(req) {
            self.faults.stall_request = None;
            return Err(UsbError::Stall);
        }
        if self.faults.timeout_request == Some(req) {
            self.faults.timeout_request = None;
            self.elapse(timeout.as_nanos() as u64);
            return Err(UsbError::Timeout);
        }
        Ok(())
    }

    /// Cut a bulk transfer if a disconnect is armed within it; returns the bytes allowed.
    fn bulk_budget(&mut self, len: usize) -> Result<usize, UsbError> {
        if let Some(left) = self.faults.disconnect_after_bulk_bytes {
            if (len as u64) > left {
                self.disconnected = true;
                self.faults.disconnect_after_bulk_bytes = None;
                return Err(UsbError::Disconnected);
            }
            self.faults.disconnect_after_bulk_bytes = Some(left - len as u64);
        }
        Ok(len)
    }

    /// Run one mode-0 TLP and leave its completion (if it has one) for the next 0xF0 IN.
    fn execute_single(&mut self, kind: TlpKind, byte_enable: u8, address: u64, data: u32) {
        let posted = kind.posted();
        if !self.link_up() {
            if !posted {
                self.completion = wire::completion(0, CplStatus::Success, 0xFF);
            }
            return;
        }
        if self.faults.engine_errors > 0 && !posted {
            self.faults.engine_errors -= 1;
            let code = self.faults.engine_error_code.max(1);
            self.completion = wire::completion(0, CplStatus::Success, code);
            return;
        }
        if let Some(status) = self.faults.completion_status {
            if !posted && self.faults.completion_status_count > 0 {
                self.faults.completion_status_count -= 1;
                if self.faults.completion_status_count == 0 {
                    self.faults.completion_status = None;
                }
                self.completion = wire::completion(0, status, 0);
                return;
            }
        }
        let config = |address| {
            let t = wire::config_target(address);
            let bdf = Bdf {
                bus: t.bus,
                dev: t.device,
                func: t.function,
            };
            (bdf, t.register)
        };
        let result: Result<u32, CplStatus> = match kind {
            TlpKind::ConfigRead { type1 } => {
                let (bdf, reg) = config(address);
                self.fabric.config_read(bdf, reg, type1)
            }
            TlpKind::ConfigWrite { type1 } => {
                let (bdf, reg) = config(address);
                self.fabric
                    .config_write(bdf, reg, type1, byte_enable, data)
                    .map(|_| 0)
            }
            TlpKind::MemRead => self.fabric.mem_read32(address),
            TlpKind::MemWrite => {
                self.fabric.mem_write32(address, byte_enable, data);
                return;
            }
            // Other posted TLPs (messages) are accepted and ignored; anything else is unsupported.
            k if k.posted() => return,
            _ => Err(CplStatus::UnsupportedRequest),
        };
        self.completion = match result {
            Ok(data) => wire::completion(data, CplStatus::Success, 0),
            Err(status) => wire::completion(0, status, 0),
        };
    }

    fn control_out(&mut self, setup: Setup, data: &[u8], t: Duration) -> Result<(), UsbError> {
        self.control_prologue(setup.request, t)?;
        let decoded = wire::decode_out(setup.request, setup.value, setup.index, data);
        match decoded.map_err(|_| UsbError::Stall)? {
            OutRequest::XdataWrite { address, value } => {
                // The LTSSM byte reflects link state; host writes to it are ignored (emulator choice).
                if address != XDATA_LTSSM {
                    *self.xdata_byte(address) = value;
                }
            }
            OutRequest::Tlp(TlpRequest::Single {
                kind,
                byte_enable,
                address,
                data,
            }) => self.execute_single(kind, byte_enable, address, data),
            OutRequest::Tlp(TlpRequest::StreamWrite { address, dwords }) => {
                self.out_queue.push_back(Consumer::Stream {
                    address,
                    len: 4 * dwords as usize,
                })
            }
            OutRequest::Tlp(TlpRequest::StreamRead { address, dwords }) => {
                self.in_queue.push_back(Consumer::Stream {
                    address,
                    len: 4 * dwords as usize,
                })
            }
            OutRequest::Sram(arm) => {
                let (offset, len) = (arm.offset(), arm.bytes());
                if len == 0 || offset + len > SRAM_BYTES {
                    return Err(UsbError::Stall);
                }
                if arm.to_host {
                    self.in_queue
                        .retain(|c| !matches!(c, Consumer::Sram { .. }));
                    self.in_queue.push_back(Consumer::Sram { offset, len });
                    self.read_released = false;
                } else {
                    let pending = self
                        .out_queue
                        .iter()
                        .filter(|c| matches!(c, Consumer::Sram { .. }))
                        .count();
                    if pending > self.max_pending_arms {
                        return Err(UsbError::Stall);
                    }
                    self.out_queue.push_back(Consumer::Sram { offset, len });
                }
            }
            OutRequest::Power { on } => {
                // Either direction restarts the PCIe side: pending streams and arms are dropped.
                self.out_queue.clear();
                self.in_queue.clear();
                self.read_released = false;
                if on {
                    if self.timing.link_train_ns >= t.as_nanos() as u64 {
                        self.elapse(t.as_nanos() as u64);
                        return Err(UsbError::Timeout);
                    }
                    self.elapse(self.timing.link_train_ns);
                    self.xdata[XDATA_LTSSM as usize] = if self.faults.link_fails_training {
                        LTSSM_DETECT
                    } else {
                        LTSSM_L0
                    };
                } else {
                    self.xdata[XDATA_LTSSM as usize] = LTSSM_DETECT;
                }
            }
        }
        Ok(())
    }

    fn control_in(&mut self, setup: Setup, buf: &mut [u8], t: Duration) -> Result<usize, UsbError> {
        self.control_prologue(setup.request, t)?;
        match wire::decode_in(setup.request, setup.value, buf.len()).map_err(|_| UsbError::Stall)? {
            InRequest::XdataRead { address, len } => {
                debug_assert!(len <= XDATA_READ_LIMIT);
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = *self.xdata_byte(address + i as u16);
                }
                Ok(len)
            }
            InRequest::Completion => {
                let n = buf.len().min(COMPLETION_BYTES);
                buf[..n].copy_from_slice(&self.completion[..n]);
                Ok(n)
            }
        }
    }

    fn bulk_out(&mut self, ep: u8, data: &[u8], t: Duration) -> Result<usize, UsbError> {
        self.check_connected()?;
        if ep != EP_BULK_OUT {
            return Err(UsbError::Stall);
        }
        if self.faults.bulk_out_timeouts > 0 {
            self.faults.bulk_out_timeouts -= 1;
            self.elapse(t.as_nanos() as u64);
            return Err(UsbError::Timeout);
        }
        let len = self.bulk_budget(data.len())?;
        self.elapse(self.bulk_cost(len));
        let accepted = self
            .faults
            .short_bulk_out
            .take()
            .map_or(len, |n| n.min(len));
        let consumer = self.out_queue.pop_front().ok_or(UsbError::Stall)?;
        if accepted < len {
            // The firmware got a short transfer: the armed operation is abandoned.
            return Ok(accepted);
        }
        if consumer.len() != len {
            return Err(UsbError::Stall);
        }
        match consumer {
            Consumer::Stream { address, .. } => {
                if self.link_up() {
                    self.fabric.mem_write_burst(address, data);
                }
            }
            Consumer::Sram { offset, .. } => {
                self.sram[offset..offset + len].copy_from_slice(data);
            }
        }
        Ok(len)
    }

    fn bulk_in(&mut self, ep: u8, buf: &mut [u8], t: Duration) -> Result<usize, UsbError> {
        self.check_connected()?;
        if ep != EP_BULK_IN {
            return Err(UsbError::Stall);
        }
        let timeout_ns = t.as_nanos() as u64;
        if self.faults.bulk_in_timeouts > 0 {
            self.faults.bulk_in_timeouts -= 1;
            self.elapse(timeout_ns);
            return Err(UsbError::Timeout);
        }
        let ready = match self.in_queue.front() {
            None => false,
            Some(Consumer::Sram { .. }) => self.read_released,
            Some(Consumer::Stream { .. }) => self.link_up(),
        };
        if !ready {
            // Nothing to send yet: the host's transfer runs into its timeout.
            self.elapse(timeout_ns);
            return Err(UsbError::Timeout);
        }
        let Some(consumer) = self.in_queue.pop_front() else {
            return Err(UsbError::Timeout);
        };
        let len = consumer.len();
        let produced = match consumer {
            Consumer::Stream { address, .. } => {
                let mut bytes = vec![0u8; len];
                self.fabric.mem_read_burst(address, &mut bytes);
                bytes
            }
            Consumer::Sram { offset, .. } => {
                self.read_released = false;
                self.sram[offset..offset + len].to_vec()
            }
        };
        if buf.len() < len {
            return Err(UsbError::Overflow);
        }
        let len = self.bulk_budget(len)?;
        let n = self.faults.short_bulk_in.take().map_or(len, |s| s.min(len));
        buf[..n].copy_from_slice(&produced[..n]);
        self.elapse(self.bulk_cost(n));
        Ok(n)
    }

    /// One transfer, counted like the host-side `Counting` wrapper counts it.
    fn transfer(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<usize, UsbError> {
        let issued = self.counters.issue(&t);
        let n = match t {
            Transfer::ControlOut(setup, data) => {
                self.control_out(setup, data, timeout).map(|()| data.len())
            }
            Transfer::ControlIn(setup, buf) => self.control_in(setup, buf, timeout),
            Transfer::BulkOut(endpoint, data) => self.bulk_out(endpoint, data, timeout),
            Transfer::BulkIn(endpoint, buf) => self.bulk_in(endpoint, buf, timeout),
        };
        self.service_devices();
        let n = n?;
        self.counters.moved(issued, n);
        Ok(n)
    }

    /// Let the endpoint's BAR models run the work the transfer started, with DMA into the windows.
    fn service_devices(&mut self) {
        let (mut bus, fabric) = self.split_windows();
        for bar in fabric.endpoint.bars.iter_mut().flatten() {
            bar.model.service(&mut bus);
        }
    }

    /// A submitted transfer runs at once; its failure (or a short bulk OUT) is latched for `wait_all`.
    fn submit(&mut self, t: Transfer<'_>, timeout: Duration) {
        let (expected, control) = (t.len(), t.is_control());
        let error = match self.transfer(t, timeout) {
            Ok(n) if control || n == expected => return,
            Ok(n) => UsbError::Short {
                expected,
                actual: n,
            },
            Err(e) => e,
        };
        self.latched.get_or_insert(error);
    }
}

impl UsbTransport for BridgeEmulator {
    fn transfer(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<usize, UsbError> {
        lock(&self.state).transfer(t, timeout)
    }

    fn sleep(&mut self, duration: Duration) {
        lock(&self.state).elapse(duration.as_nanos() as u64);
    }

    fn submit(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<(), UsbError> {
        lock(&self.state).submit(t, timeout);
        Ok(())
    }

    fn wait_all(&mut self) -> Result<(), UsbError> {
        match lock(&self.state).latched.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
