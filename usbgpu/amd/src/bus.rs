//! [`GpuBus`]: the GPU's three BARs behind the bridge as the AM driver uses them — registers (BAR5),
//! VRAM (BAR0) and doorbells (BAR2) — with bounded polls and an optional access trace.
//!
//! Cost per access (USB transfers): register write = one posted mode-0 TLP (1 control OUT);
//! register read = mode-0 TLP with completion (2 control); VRAM block = one 0xF0 stream arm + one
//! bulk (2); doorbell = one 8-byte stream (1 control + 1 bulk). Registers beyond the BAR5
//! window go through `BIF_BX_PF0_RSMU_INDEX/DATA` (docs/hw/amd-driver.md §2).
//!
//! Polls never use a wall clock: each unsuccessful read is followed by a [`POLL_INTERVAL`] sleep on
//! the transport, and a poll gives up after `timeout / POLL_INTERVAL` reads — at least `timeout` on
//! hardware, the same bound in emulated time on the emulator.
use super::error::{bridge, AmdError};
use super::ip::IpTable;
use super::regs::{self, Reg};
use core::time::Duration;
use modelrt_asm24::pcie::{Bar, PciDevice};
use modelrt_asm24::{Bridge, BridgeError};
use modelrt_hal::usb::UsbTransport;

/// Pause between two reads of a poll.
pub const POLL_INTERVAL: Duration = Duration::from_millis(1);
/// The default poll limit (docs/hw/amd-driver.md §2: `wait_cond` = 10 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest single VRAM stream (the bridge's 4 MiB bulk buffer).
const STREAM_MAX: usize = 4 << 20;

/// What a traced access did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// Register read (value = what came back).
    Read,
    /// Register write.
    Write,
}

/// One traced register access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Read or write.
    pub kind: AccessKind,
    /// The block name (`GC`, `MP0`, …).
    pub block: &'static str,
    /// The register name (for registers written as a block, the block's first name).
    pub reg: &'static str,
    /// BAR5 byte address (`u64::MAX` when unknown).
    pub byte: u64,
    /// Value written or read.
    pub value: u32,
}

/// The GPU behind the bridge, as the driver sees it.
pub struct GpuBus<T> {
    dev: PciDevice<T>,
    ips: IpTable,
    vram: Bar,
    doorbells: Bar,
    regs: Bar,
    trace: Option<Vec<Access>>,
}

impl<T: UsbTransport> GpuBus<T> {
    /// Wrap a brought-up device; BAR0/2/5 must be assigned. `ips` locates the registers.
    pub fn new(dev: PciDevice<T>, ips: IpTable) -> Result<Self, AmdError> {
        let step = "map BARs";
        let vram = dev.bar(0).map_err(bridge(step))?;
        let doorbells = dev.bar(2).map_err(bridge(step))?;
        let regs = dev.bar(5).map_err(bridge(step))?;
        Ok(GpuBus {
            dev,
            ips,
            vram,
            doorbells,
            regs,
            trace: None,
        })
    }

    /// Start recording register accesses (for the golden comparison).
    pub fn start_trace(&mut self) {
        self.trace = Some(Vec::new());
    }

    /// Stop recording and return what was recorded.
    pub fn take_trace(&mut self) -> Vec<Access> {
        self.trace.take().unwrap_or_default()
    }

    /// The register map in use.
    pub fn ips(&self) -> &IpTable {
        &self.ips
    }

    /// Replace the register map (after IP discovery).
    pub fn set_ips(&mut self, ips: IpTable) {
        self.ips = ips;
    }

    /// BAR0 size (the VRAM window).
    pub fn vram_bar_size(&self) -> u64 {
        self.vram.size
    }

    /// The bridge (SRAM DMA for the copy pipelines).
    pub fn bridge(&mut self) -> &mut Bridge<T> {
        self.dev.bridge()
    }

    /// The PCIe device.
    pub fn device(&mut self) -> &mut PciDevice<T> {
        &mut self.dev
    }

    /// Give the device back.
    pub fn into_device(self) -> PciDevice<T> {
        self.dev
    }

    fn record(&mut self, kind: AccessKind, reg: Reg, value: u32) {
        if self.trace.is_some() {
            let byte = self.ips.byte(reg).unwrap_or(u64::MAX);
            if let Some(t) = &mut self.trace {
                t.push(Access {
                    kind,
                    block: reg.ip.name(),
                    reg: reg.name,
                    byte,
                    value,
                });
            }
        }
    }

    fn byte(&self, step: &'static str, reg: Reg) -> Result<u64, AmdError> {
        self.ips.byte(reg).ok_or(AmdError::NoBase {
            step,
            reg: reg.name,
            ip: reg.ip.name(),
        })
    }

    fn raw_read(&mut self, byte: u64) -> Result<u32, BridgeError> {
        if byte + 4 > self.regs.size {
            let idx = self.ips.byte(regs::BIF_BX_PF0_RSMU_INDEX).unwrap_or(0x50);
            let data = self.ips.byte(regs::BIF_BX_PF0_RSMU_DATA).unwrap_or(0x54);
            let base = self.regs.address;
            let b = self.dev.bridge();
            b.mem_write(base + idx, 4, byte as u32)?;
            return b.mem_read(base + data, 4);
        }
        let a = self.regs.address + byte;
        self.dev.bridge().mem_read(a, 4)
    }

    fn raw_write(&mut self, byte: u64, value: u32) -> Result<(), BridgeError> {
        if byte + 4 > self.regs.size {
            let idx = self.ips.byte(regs::BIF_BX_PF0_RSMU_INDEX).unwrap_or(0x50);
            let data = self.ips.byte(regs::BIF_BX_PF0_RSMU_DATA).unwrap_or(0x54);
            let base = self.regs.address;
            let b = self.dev.bridge();
            b.mem_write(base + idx, 4, byte as u32)?;
            return b.mem_write(base + data, 4, value);
        }
        let a = self.regs.address + byte;
        self.dev.bridge().mem_write(a, 4, value)
    }

    /// Read a register.
    pub fn rreg(&mut self, step: &'static str, reg: Reg) -> Result<u32, AmdError> {
        let byte = self.byte(step, reg)?;
        let v = self.raw_read(byte).map_err(bridge(step))?;
        self.record(AccessKind::Read, reg, v);
        Ok(v)
    }

    /// Write a register.
    pub fn wreg(&mut self, step: &'static str, reg: Reg, value: u32) -> Result<(), AmdError> {
        let byte = self.byte(step, reg)?;
        self.raw_write(byte, value).map_err(bridge(step))?;
        self.record(AccessKind::Write, reg, value);
        Ok(())
    }

    /// Write the BAR5 byte address `byte` (a register whose address the device itself reported,
    /// e.g. the HDP flush remap); traced under `name`.
    pub fn wreg_at(
        &mut self,
        step: &'static str,
        name: &'static str,
        byte: u64,
        value: u32,
    ) -> Result<(), AmdError> {
        self.raw_write(byte, value).map_err(bridge(step))?;
        if let Some(t) = &mut self.trace {
            t.push(Access {
                kind: AccessKind::Write,
                block: "BAR5",
                reg: name,
                byte,
                value,
            });
        }
        Ok(())
    }

    /// Write consecutive registers starting at `first` with one streaming write (2 USB transfers
    /// instead of one per register); each register is traced. Falls back to single writes beyond
    /// the BAR5 window.
    pub fn wregs(
        &mut self,
        step: &'static str,
        first: Reg,
        values: &[u32],
    ) -> Result<(), AmdError> {
        let byte = self.byte(step, first)?;
        if byte + 4 * values.len() as u64 > self.regs.size {
            for (i, v) in values.iter().enumerate() {
                self.wreg(step, first.nth(i as u32, 1), *v)?;
            }
            return Ok(());
        }
        let mut buf = Vec::with_capacity(4 * values.len());
        for v in values {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        let a = self.regs.address + byte;
        self.dev
            .bridge()
            .stream_write(a, &buf)
            .map_err(bridge(step))?;
        for (i, v) in values.iter().enumerate() {
            self.record(AccessKind::Write, first.nth(i as u32, 1), *v);
        }
        Ok(())
    }

    /// Read-modify-write: clear `clear`, then set `set`.
    pub fn rmw(
        &mut self,
        step: &'static str,
        reg: Reg,
        clear: u32,
        set: u32,
    ) -> Result<u32, AmdError> {
        let v = (self.rreg(step, reg)? & !clear) | set;
        self.wreg(step, reg, v)?;
        Ok(v)
    }

    /// Poll `reg` until `(value & mask) == want`; returns the last value.
    pub fn poll(
        &mut self,
        step: &'static str,
        reg: Reg,
        mask: u32,
        want: u32,
        timeout: Duration,
    ) -> Result<u32, AmdError> {
        self.poll_with(step, reg, timeout, |v| v & mask == want)
    }

    /// Poll `reg` until `done(value)`; returns the last value.
    pub fn poll_with(
        &mut self,
        step: &'static str,
        reg: Reg,
        timeout: Duration,
        done: impl Fn(u32) -> bool,
    ) -> Result<u32, AmdError> {
        poll_until(self, step, reg.name, timeout, |b| b.rreg(step, reg), done)
    }

    /// Poll the VRAM dword at `offset` until `done(value)`; returns the last value.
    pub fn poll_vram32(
        &mut self,
        step: &'static str,
        what: &'static str,
        offset: u64,
        timeout: Duration,
        done: impl Fn(u32) -> bool,
    ) -> Result<u32, AmdError> {
        poll_until(
            self,
            step,
            what,
            timeout,
            |b| b.vram_read32(step, offset),
            done,
        )
    }

    fn check_vram(&self, step: &'static str, offset: u64, len: usize) -> Result<(), AmdError> {
        if !offset.is_multiple_of(4)
            || !len.is_multiple_of(4)
            || offset
                .checked_add(len as u64)
                .is_none_or(|e| e > self.vram.size)
        {
            return Err(AmdError::Invalid {
                step,
                what: format!(
                    "VRAM access of {len} bytes at {offset:#x} outside the {:#x}-byte BAR0 or unaligned",
                    self.vram.size
                ),
            });
        }
        Ok(())
    }

    /// Write `data` (multiple of 4 bytes) at VRAM `offset` through BAR0.
    pub fn vram_write(
        &mut self,
        step: &'static str,
        offset: u64,
        data: &[u8],
    ) -> Result<(), AmdError> {
        self.check_vram(step, offset, data.len())?;
        let base = self.vram.address + offset;
        for (i, c) in data.chunks(STREAM_MAX).enumerate() {
            self.dev
                .bridge()
                .stream_write(base + (i * STREAM_MAX) as u64, c)
                .map_err(bridge(step))?;
        }
        Ok(())
    }

    /// Write dwords at VRAM `offset`.
    pub fn vram_write_dwords(
        &mut self,
        step: &'static str,
        offset: u64,
        dwords: &[u32],
    ) -> Result<(), AmdError> {
        let mut buf = [0u8; 4096];
        for (i, c) in dwords.chunks(1024).enumerate() {
            for (d, b) in c.iter().zip(buf.chunks_exact_mut(4)) {
                b.copy_from_slice(&d.to_le_bytes());
            }
            self.vram_write(step, offset + (i * 4096) as u64, &buf[..4 * c.len()])?;
        }
        Ok(())
    }

    /// Read `buf.len()` bytes (multiple of 4) at VRAM `offset` through BAR0.
    pub fn vram_read(
        &mut self,
        step: &'static str,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), AmdError> {
        self.check_vram(step, offset, buf.len())?;
        let base = self.vram.address + offset;
        for (i, c) in buf.chunks_mut(STREAM_MAX).enumerate() {
            self.dev
                .bridge()
                .stream_read(base + (i * STREAM_MAX) as u64, c)
                .map_err(bridge(step))?;
        }
        Ok(())
    }

    /// Read one VRAM dword.
    pub fn vram_read32(&mut self, step: &'static str, offset: u64) -> Result<u32, AmdError> {
        let mut b = [0u8; 4];
        self.vram_read(step, offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Read one VRAM qword.
    pub fn vram_read64(&mut self, step: &'static str, offset: u64) -> Result<u64, AmdError> {
        let mut b = [0u8; 8];
        self.vram_read(step, offset, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// 64-bit doorbell write at BAR2 byte `offset` (one stream: low dword first, then high).
    pub fn doorbell64(
        &mut self,
        step: &'static str,
        offset: u64,
        value: u64,
    ) -> Result<(), AmdError> {
        if offset + 8 > self.doorbells.size {
            return Err(AmdError::Invalid {
                step,
                what: format!("doorbell {offset:#x} outside BAR2"),
            });
        }
        // One 8-byte stream (low dword first, as consecutive addresses): 1 control + 1 bulk
        // instead of two posted mode-0 TLPs (2 control); tinygrad writes doorbells as streams too
        // (docs/hw/amd-driver.md §2).
        let a = self.doorbells.address + offset;
        self.dev
            .bridge()
            .stream_write(a, &value.to_le_bytes())
            .map_err(bridge(step))
    }

    /// Let `d` pass (a real sleep on hardware, emulated time on the emulator).
    pub fn sleep(&mut self, d: Duration) {
        self.dev.bridge().transport_mut().sleep(d);
    }
}

/// The one bounded poll: `read` until `done`, sleeping [`POLL_INTERVAL`] between reads, at most
/// [`poll_tries`]`(timeout)` reads; a timeout names `step` and `what` with the last value.
pub fn poll_until<T: UsbTransport, V: Copy + Into<u64>>(
    bus: &mut GpuBus<T>,
    step: &'static str,
    what: &'static str,
    timeout: Duration,
    mut read: impl FnMut(&mut GpuBus<T>) -> Result<V, AmdError>,
    done: impl Fn(V) -> bool,
) -> Result<V, AmdError> {
    let tries = poll_tries(timeout);
    let mut last = None;
    for i in 0..tries {
        let v = read(bus)?;
        if done(v) {
            return Ok(v);
        }
        last = Some(v);
        if i + 1 < tries {
            bus.sleep(POLL_INTERVAL);
        }
    }
    Err(AmdError::Timeout {
        step,
        what,
        ms: timeout.as_millis() as u64,
        last: last.map_or(0, Into::into),
    })
}

/// Reads a poll of `timeout` makes (at least one).
pub fn poll_tries(timeout: Duration) -> u64 {
    (timeout.as_micros() / POLL_INTERVAL.as_micros()).max(1) as u64
}
