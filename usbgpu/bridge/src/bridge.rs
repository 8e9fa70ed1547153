//! The ASM24 custom-firmware driver: every vendor request of docs/hw/asm24-bridge.md §2 issued over a [`UsbTransport`],
//! with the host timeouts of §8 and the TLP retry rule of §3.6. `no_std`, no allocation: callers pass
//! buffers (SRAM transfers must already be sector-padded; see [`sector_padded`]).
use super::error::BridgeError;
use super::proto::{
    self, request, sector_padded, Completion, CplStatus, SramArm, TlpRequest, COMPLETION_LEN,
    SECTOR, XDATA_READ_MAX,
};
use super::{EP_BULK_IN, EP_BULK_OUT, LTSSM_L0, XDATA_LTSSM};
use core::time::Duration;
use modelrt_hal::pci::{Bdf, PciConfig};
use modelrt_hal::usb::{UsbError, UsbTransport};

/// Host timeouts, docs/hw/asm24-bridge.md §8.
pub mod timeout {
    use core::time::Duration;
    /// E4 / E5 / F2 control transfers.
    pub const CONTROL: Duration = Duration::from_secs(1);
    /// 0xF0 OUT / IN.
    pub const TLP: Duration = Duration::from_secs(5);
    /// 0xF3 power (returns after link training).
    pub const POWER: Duration = Duration::from_secs(10);
    /// Synchronous bulk OUT.
    pub const BULK_OUT: Duration = Duration::from_secs(1);
    /// Asynchronous (pipelined) bulk OUT.
    pub const BULK_OUT_ASYNC: Duration = Duration::from_secs(10);
    /// Mode-2 streaming read bulk IN.
    pub const STREAM_READ: Duration = Duration::from_secs(30);
    /// SRAM read (after a 0xF2 read arm) bulk IN.
    pub const SRAM_READ: Duration = Duration::from_secs(10);
}

/// Retries after a non-zero ret_status (11 attempts in total), docs/hw/asm24-bridge.md §3.6.
pub const TLP_RETRIES: u32 = 10;
/// Pause before each retry ("very picky").
pub const TLP_RETRY_PAUSE: Duration = Duration::from_millis(1);

/// The bridge driver.
pub struct Bridge<T> {
    usb: T,
}

fn usb(op: &'static str) -> impl FnOnce(UsbError) -> BridgeError {
    move |source| BridgeError::Usb { op, source }
}

/// A bulk transfer of `op` that moved `actual` of `expected` bytes: anything short is an error.
fn whole_bulk(op: &'static str, expected: usize, actual: usize) -> Result<(), BridgeError> {
    if actual != expected {
        return Err(BridgeError::ShortBulk {
            op,
            expected,
            actual,
        });
    }
    Ok(())
}

impl<T: UsbTransport> Bridge<T> {
    /// Wrap an opened, claimed transport. Does no I/O.
    pub fn new(usb: T) -> Self {
        Bridge { usb }
    }

    /// The transport (e.g. the emulator, for counters).
    pub fn transport(&self) -> &T {
        &self.usb
    }

    /// The transport, mutably.
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.usb
    }

    /// Give the transport back.
    pub fn into_inner(self) -> T {
        self.usb
    }

    fn control_in_exact(
        &mut self,
        op: &'static str,
        req: u8,
        value: u16,
        index: u16,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<(), BridgeError> {
        let n = self
            .usb
            .control_in(req, value, index, buf, timeout)
            .map_err(usb(op))?;
        if n != buf.len() {
            return Err(BridgeError::ShortControl {
                op,
                expected: buf.len(),
                actual: n,
            });
        }
        Ok(())
    }

    /// Read `buf.len()` XDATA bytes from `addr` (0xE4, ≤255 bytes per transfer).
    pub fn xdata_read(&mut self, addr: u16, buf: &mut [u8]) -> Result<(), BridgeError> {
        if addr as usize + buf.len() > 0x10000 {
            return Err(BridgeError::OutOfRange {
                what: "XDATA",
                offset: addr as u64,
                len: buf.len() as u64,
            });
        }
        for (i, chunk) in buf.chunks_mut(XDATA_READ_MAX).enumerate() {
            let a = addr + (i * XDATA_READ_MAX) as u16;
            self.control_in_exact(
                "XDATA read (0xE4)",
                request::XDATA_READ,
                a,
                0,
                chunk,
                timeout::CONTROL,
            )?;
        }
        Ok(())
    }

    /// Write XDATA bytes at `addr` (0xE5, one control transfer per byte).
    pub fn xdata_write(&mut self, addr: u16, data: &[u8]) -> Result<(), BridgeError> {
        if addr as usize + data.len() > 0x10000 {
            return Err(BridgeError::OutOfRange {
                what: "XDATA",
                offset: addr as u64,
                len: data.len() as u64,
            });
        }
        for (i, b) in data.iter().enumerate() {
            self.usb
                .control_out(
                    request::XDATA_WRITE,
                    addr + i as u16,
                    *b as u16,
                    &[],
                    timeout::CONTROL,
                )
                .map_err(usb("XDATA write (0xE5)"))?;
        }
        Ok(())
    }

    /// Current LTSSM byte (XDATA 0xB450; 0x78 = L0, link up).
    pub fn ltssm(&mut self) -> Result<u8, BridgeError> {
        let mut b = [0u8; 1];
        self.xdata_read(XDATA_LTSSM, &mut b)?;
        Ok(b[0])
    }

    /// Switch the downstream PCIe power/link (0xF3); the firmware returns after training.
    pub fn set_power(&mut self, on: bool) -> Result<(), BridgeError> {
        self.usb
            .control_out(request::PCIE_POWER, on as u16, 0, &[], timeout::POWER)
            .map_err(usb("PCIe power (0xF3)"))
    }

    /// Open sequence of docs/hw/asm24-bridge.md §6: if LTSSM ≠ 0x78, power on once and check again (no polling loop).
    pub fn ensure_link(&mut self) -> Result<(), BridgeError> {
        if self.ltssm()? == LTSSM_L0 {
            return Ok(());
        }
        self.set_power(true)?;
        let ltssm = self.ltssm()?;
        if ltssm != LTSSM_L0 {
            return Err(BridgeError::LinkDown { ltssm });
        }
        Ok(())
    }

    /// Issue a mode-0 TLP; returns the completion when the TLP has one (docs/hw/asm24-bridge.md §3.6 retry rule:
    /// ret_status ≠ 0 → 1 ms pause, re-issue OUT+IN, ≤ 10 retries; completion errors never retried).
    pub fn tlp(&mut self, req: &TlpRequest) -> Result<Option<Completion>, BridgeError> {
        let payload = req.payload();
        let mut attempt = 0;
        loop {
            self.usb
                .control_out(
                    request::TLP,
                    req.value(),
                    req.index(),
                    &payload,
                    timeout::TLP,
                )
                .map_err(usb("TLP request (0xF0 OUT)"))?;
            if !req.expects_completion() {
                return Ok(None);
            }
            let mut raw = [0u8; COMPLETION_LEN];
            self.control_in_exact(
                "TLP completion (0xF0 IN)",
                request::TLP,
                0,
                0,
                &mut raw,
                timeout::TLP,
            )?;
            let cpl = Completion::from_bytes(&raw);
            if cpl.ret_status != 0 {
                if attempt >= TLP_RETRIES {
                    return Err(BridgeError::TlpEngine {
                        ret_status: cpl.ret_status,
                        address: req.address,
                    });
                }
                attempt += 1;
                self.usb.sleep(TLP_RETRY_PAUSE);
                continue;
            }
            return match cpl.status() {
                CplStatus::Success => Ok(Some(cpl)),
                status => Err(BridgeError::Completion {
                    status,
                    address: req.address,
                }),
            };
        }
    }

    fn tlp_read(&mut self, req: &TlpRequest, offset: u8, size: u8) -> Result<u32, BridgeError> {
        match self.tlp(req)? {
            Some(cpl) => Ok(proto::extract_lanes(cpl.data, offset, size)),
            None => Err(BridgeError::Encode(proto::EncodeError::BadMode(
                req.index(),
            ))),
        }
    }

    /// Mode-0 memory read of 1..4 bytes (byte enables from the address's low bits).
    pub fn mem_read(&mut self, address: u64, size: u8) -> Result<u32, BridgeError> {
        let req = proto::mem_read(address, size)?;
        self.tlp_read(&req, (address & 3) as u8, size)
    }

    /// Mode-0 posted memory write of 1..4 bytes.
    pub fn mem_write(&mut self, address: u64, size: u8, value: u32) -> Result<(), BridgeError> {
        let req = proto::mem_write(address, size, value)?;
        self.tlp(&req).map(|_| ())
    }

    /// Mode-1 streaming write: `data.len()` (multiple of 4) bytes to consecutive addresses.
    /// Empty writes are skipped (docs/hw/asm24-bridge.md §3.7).
    pub fn stream_write(&mut self, address: u64, data: &[u8]) -> Result<(), BridgeError> {
        if data.is_empty() {
            return Ok(());
        }
        let req = proto::stream_write(address, data.len())?;
        self.tlp(&req)?;
        self.bulk_out_exact("stream write bulk OUT 0x02", data, timeout::BULK_OUT)
    }

    /// Mode-2 streaming read of `buf.len()` (multiple of 4) bytes. Unlike the reference host,
    /// a short bulk IN is an error.
    pub fn stream_read(&mut self, address: u64, buf: &mut [u8]) -> Result<(), BridgeError> {
        if buf.is_empty() {
            return Ok(());
        }
        let req = proto::stream_read(address, buf.len())?;
        self.tlp(&req)?;
        self.bulk_in_exact("stream read bulk IN 0x81", buf, timeout::STREAM_READ)
    }

    fn bulk_out_exact(
        &mut self,
        op: &'static str,
        data: &[u8],
        t: Duration,
    ) -> Result<(), BridgeError> {
        let n = self.usb.bulk_out(EP_BULK_OUT, data, t).map_err(usb(op))?;
        whole_bulk(op, data.len(), n)
    }

    fn bulk_in_exact(
        &mut self,
        op: &'static str,
        buf: &mut [u8],
        t: Duration,
    ) -> Result<(), BridgeError> {
        let n = self.usb.bulk_in(EP_BULK_IN, buf, t).map_err(usb(op))?;
        whole_bulk(op, buf.len(), n)
    }

    fn check_padded(what: &'static str, len: usize) -> Result<(), BridgeError> {
        if len == 0 || !len.is_multiple_of(SECTOR) {
            return Err(BridgeError::OutOfRange {
                what,
                offset: 0,
                len: len as u64,
            });
        }
        Ok(())
    }

    /// Host → SRAM (docs/hw/asm24-bridge.md §5.1): 0xF2 write arm, then one bulk OUT of `wire` (already padded to
    /// 512-byte sectors) landing at `first_slot * 16 KiB`. No landing notification exists.
    pub fn sram_write(&mut self, first_slot: usize, wire: &[u8]) -> Result<(), BridgeError> {
        Self::check_padded("SRAM write (wire image must be sector-padded)", wire.len())?;
        let arm = proto::sram_write_arm(first_slot, wire.len())?;
        self.sram_arm(&arm)?;
        self.bulk_out_exact("SRAM write bulk OUT 0x02", wire, timeout::BULK_OUT)
    }

    /// Pipelined host → SRAM: the arm completes first (it overlaps the previous window's bulk OUT,
    /// which may still be in flight), then this window's bulk OUT is submitted without waiting —
    /// the reference pipeline's order (amd sheet §9.1: wait for the arm, then submit the bulk), so
    /// the firmware never sees data before its arm. Bulk errors show up in
    /// [`Bridge::wait_pipelined`]. The firmware consumes data in arm order (docs/hw/asm24-bridge.md §5.1).
    pub fn sram_write_async(&mut self, first_slot: usize, wire: &[u8]) -> Result<(), BridgeError> {
        Self::check_padded("SRAM write (wire image must be sector-padded)", wire.len())?;
        let arm = proto::sram_write_arm(first_slot, wire.len())?;
        self.sram_arm(&arm)?;
        self.usb
            .submit_bulk_out(EP_BULK_OUT, wire, timeout::BULK_OUT_ASYNC)
            .map_err(usb("async bulk OUT 0x02"))
    }

    /// Wait for all pipelined transfers; reports the first failure.
    pub fn wait_pipelined(&mut self) -> Result<(), BridgeError> {
        self.usb.wait_all().map_err(usb("async transfer"))
    }

    /// Send one 0xF2 arm.
    pub fn sram_arm(&mut self, arm: &SramArm) -> Result<(), BridgeError> {
        self.usb
            .control_out(
                request::SRAM_DMA,
                arm.value(),
                arm.index(),
                &[],
                timeout::CONTROL,
            )
            .map_err(usb("SRAM arm (0xF2)"))
    }

    /// Arm an SRAM → host read of `len` bytes from SRAM offset 0 (docs/hw/asm24-bridge.md §5.2). The data is released
    /// on bulk IN only after the GPU writes the completion-queue dword (PCIe 0x82200C).
    pub fn sram_read_arm(&mut self, len: usize) -> Result<(), BridgeError> {
        let arm = proto::sram_read_arm(len)?;
        self.sram_arm(&arm)
    }

    /// Bulk IN of an armed SRAM read into `buf` (length = the armed length rounded up to sectors).
    pub fn sram_read(&mut self, buf: &mut [u8]) -> Result<(), BridgeError> {
        Self::check_padded("SRAM read (buffer must be sector-padded)", buf.len())?;
        self.bulk_in_exact("SRAM read bulk IN 0x81", buf, timeout::SRAM_READ)
    }

    /// Bytes an SRAM read of `len` moves on the wire.
    pub fn sram_wire_len(len: usize) -> usize {
        sector_padded(len)
    }
}

impl<T: UsbTransport> PciConfig for Bridge<T> {
    type Error = BridgeError;

    fn config_read(&mut self, bdf: Bdf, offset: u16, size: u8) -> Result<u32, BridgeError> {
        let req = proto::config_read(bdf, offset, size)?;
        self.tlp_read(&req, (offset & 3) as u8, size)
    }

    fn config_write(
        &mut self,
        bdf: Bdf,
        offset: u16,
        size: u8,
        value: u32,
    ) -> Result<(), BridgeError> {
        let req = proto::config_write(bdf, offset, size, value)?;
        self.tlp(&req).map(|_| ())
    }
}
