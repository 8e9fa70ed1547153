//! The Navi31 SMUIO ROM_SW software SPI engine on BAR5 (docs/hw/navi31-spi-flash.md §3–§4), exposed as an
//! [`SpiDevice`] so flash drivers are written against the standard trait.
//!
//! # Session model (why it is fast over USB)
//! Every bridged MMIO access is a USB round trip, and the reference tool spends ~25 of them per
//! SPI transaction, mostly saving, forcing and restoring the same five pad/mirror/ROM_CNTL
//! registers. [`RomSw::open`] does the engine open (§3), saves those registers **once**, forces
//! them for the whole session and checks that ROM_SW_STATUS clears; [`RomSw::close`] (or `Drop`,
//! best effort) restores every register the session touched, including the pre-open ROM_CNTL
//! (the reference tool leaves the engine-open prescaler programmed; we restore it because the
//! tool must leave the controller as it found it).
//! This is safe because nothing else drives the SPI pads while the tool owns the board (the tools
//! never run beside a host driver; on a healthy boot the engine is gated anyway). On any
//! transaction error ROM_SW_CNTL/STATUS are cleared at once and the session registers are restored
//! when the session ends, so the board is never left in the forced state by an error path.
//!
//! One transaction is then: one burst write `{STATUS = 0, COMMAND}`, one burst write of the TX
//! data (big-endian dwords), one posted ROM_SW_CNTL start write, and the STATUS poll (a read, which
//! also flushes the posted writes; PCIe reads never pass posted writes, so no CNTL read-back is
//! needed). RX data is one burst read of the window.
//!
//! # RX lag (priming)
//! The data window shows the capture of the *preceding* transaction. A read of ≤ 256 bytes is a
//! priming transaction (count `max(2, n)`, docs/hw/navi31-spi-flash.md §4) followed by the same command with count `n`,
//! after which the window holds the prime's capture. A longer read with a 3-byte address (array
//! and SFDP reads auto-increment on the flash) is pipelined: chunk k+1 is started before the
//! capture of chunk k is fetched, so `N` chunks cost `N + 1` transactions instead of `2N`.
//!
//! # SpiDevice mapping
//! The engine sends an opcode, 0–3 address bytes, then either TX or RX data (never both), at most
//! 256 data bytes. A transaction is a run of `Write` operations, optionally followed by one `Read`:
//! * writes only: byte 0 = opcode; if ≥ 4 bytes, bytes 1..4 go out as a 3-byte address and the
//!   rest as TX data, else the rest is TX data (on the wire both are the same byte stream);
//! * writes then a read: byte 0 = opcode, up to 3 address bytes, and any further header bytes are
//!   *dummy* bytes: the engine clocks them as part of the RX phase and their captured bytes are
//!   dropped (the value of a dummy byte is not transmitted — flash chips ignore it).
//!
//! `Transfer`, `TransferInPlace`, `DelayNs` and reads that are not last are rejected
//! ([`RomSwError::Unsupported`]): the engine cannot do full duplex or hold chip select.
use modelrt_hal::embedded_hal::delay::DelayNs;
use modelrt_hal::embedded_hal::spi::{self, ErrorKind, ErrorType, Operation, SpiDevice};
use modelrt_hal::mmio::Mmio;

use super::regs::*;

/// Engine options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RomSwConfig {
    /// SCK prescaler 0..=15 (reference default 8, docs/hw/navi31-spi-flash.md §2).
    pub prescale: u8,
    /// Completion timeout per transaction in milliseconds (reference default 2000, docs/hw/navi31-spi-flash.md §3).
    pub timeout_ms: u32,
    /// STATUS poll interval in microseconds after the fast phase (reference: 1 ms, docs/hw/navi31-spi-flash.md §3).
    pub poll_interval_us: u32,
    /// Poll interval during the fast phase. The first poll is always immediate; a short fast
    /// phase keeps native PCI (where the first poll comes ~1 µs after the start, before a 256-byte
    /// transaction can finish) from paying a full 1 ms per transaction.
    pub fast_poll_us: u32,
    /// Length of the fast phase in microseconds.
    pub fast_phase_us: u32,
}

impl Default for RomSwConfig {
    fn default() -> Self {
        RomSwConfig {
            prescale: 8,
            timeout_ms: 2000,
            poll_interval_us: 1000,
            fast_poll_us: 20,
            fast_phase_us: 2000,
        }
    }
}

/// ROM_SW engine failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RomSwError<E> {
    /// The MMIO transport failed.
    Mmio(E),
    /// ROM_CNTL reads all-ones: no raw SMUIO ROM controller is reachable.
    Unavailable,
    /// The engine is gated by a healthy autonomous boot (ROM_SW_STATUS = 0x04000800).
    Gated,
    /// ROM_SW_STATUS did not read 0 after clearing.
    StatusNotCleared(u32),
    /// The transaction did not complete in time.
    Timeout { status: u32 },
    /// Registers read all-ones mid-session: the device fell off the bus (power loss, unplug).
    DeviceGone,
    /// A prescaler outside 0..=15 or a timeout of 0 / above 60 s.
    BadConfig,
    /// A transaction shape the engine cannot perform.
    Unsupported(&'static str),
    /// The session was already closed.
    Closed,
}

impl<E: core::fmt::Display> core::fmt::Display for RomSwError<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RomSwError::Mmio(e) => write!(f, "BAR5 access failed: {e}"),
            RomSwError::Unavailable => {
                write!(f, "raw SMUIO ROM controller is unavailable (ROM_CNTL reads 0xFFFFFFFF)")
            }
            RomSwError::Gated => write!(
                f,
                "ROM_SW engine is gated (ROM_SW_STATUS=0x04000800): a healthy PSP boot owns the \
                 flash; romless access works only when the PSP bootloader stalled"
            ),
            RomSwError::StatusNotCleared(s) => {
                write!(f, "ROM_SW_STATUS did not clear (status=0x{s:08X})")
            }
            RomSwError::Timeout { status } => write!(
                f,
                "ROM_SW transaction timeout (status=0x{status:08X}); engine may be gated after SOS boot"
            ),
            RomSwError::DeviceGone => {
                write!(f, "GPU stopped responding (BAR5 reads all-ones): power lost or unplugged")
            }
            RomSwError::BadConfig => {
                write!(f, "invalid ROM_SW options (prescale 0..15, timeout 1 ms..60 s)")
            }
            RomSwError::Unsupported(what) => write!(f, "ROM_SW engine cannot do this: {what}"),
            RomSwError::Closed => write!(f, "ROM_SW session already closed"),
        }
    }
}

impl<E: core::fmt::Debug> spi::Error for RomSwError<E> {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Other
    }
}

/// Counters of one session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RomSwStats {
    /// SPI transactions started.
    pub transactions: u64,
    /// Extra STATUS polls beyond the first one per transaction.
    pub extra_polls: u64,
}

#[derive(Clone, Copy, Debug)]
struct Saved {
    rom_cntl: u32,
    mirror: u32,
    pad_mask: u32,
    pad_a: u32,
    pad_en: u32,
}

/// Which registers the session has modified so far (restore only those).
#[derive(Clone, Copy, Debug, Default)]
struct Touched {
    rom_cntl: bool,
    pads: bool,
    mirror: bool,
    sw: bool,
}

/// Description of one engine transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Txn {
    opcode: u8,
    address: u32,
    address_len: u8,
}

/// An open ROM_SW session on a BAR5 [`Mmio`].
pub struct RomSw<M: Mmio, D: DelayNs> {
    mmio: M,
    delay: D,
    cfg: RomSwConfig,
    saved: Saved,
    touched: Touched,
    open: bool,
    stats: RomSwStats,
}

impl<M: Mmio, D: DelayNs> RomSw<M, D> {
    /// Engine open + session setup: save pad/mirror/ROM_CNTL, program the prescaler, force the
    /// transaction values, clear ROM_SW_CNTL/STATUS and check STATUS reads 0. On failure every
    /// register touched so far is restored.
    pub fn open(mmio: M, delay: D, cfg: RomSwConfig) -> Result<Self, RomSwError<M::Error>> {
        if cfg.prescale > 15 || cfg.timeout_ms == 0 || cfg.timeout_ms > 60_000 {
            return Err(RomSwError::BadConfig);
        }
        let saved = Saved {
            rom_cntl: 0,
            mirror: 0,
            pad_mask: 0,
            pad_a: 0,
            pad_en: 0,
        };
        let mut s = RomSw {
            mmio,
            delay,
            cfg,
            saved,
            touched: Touched::default(),
            open: true,
            stats: RomSwStats::default(),
        };
        match s.setup() {
            Ok(()) => Ok(s),
            Err(e) => {
                let _ = s.close();
                Err(e)
            }
        }
    }

    fn setup(&mut self) -> Result<(), RomSwError<M::Error>> {
        let rom_cntl = self.read(ROM_CNTL)?;
        if rom_cntl == ALL_ONES {
            return Err(RomSwError::Unavailable);
        }
        self.saved = Saved {
            rom_cntl,
            mirror: self.read(PAGE_MIRROR_CNTL)?,
            pad_mask: self.read(GPIO_PAD_MASK)?,
            pad_a: self.read(GPIO_PAD_A)?,
            pad_en: self.read(GPIO_PAD_EN)?,
        };
        let sv = self.saved;
        let open_value = rom_cntl_engine_open(sv.rom_cntl, self.cfg.prescale);
        self.touched.pads = true;
        self.post(GPIO_PAD_MASK, sv.pad_mask & !GPIO_SPI_PAD_BITS)?;
        self.post(GPIO_PAD_A, sv.pad_a & !GPIO_SPI_PAD_BITS)?;
        self.post(GPIO_PAD_EN, sv.pad_en & !GPIO_SPI_PAD_BITS)?;
        self.touched.mirror = true;
        self.post(PAGE_MIRROR_CNTL, mirror_transaction(sv.mirror))?;
        self.touched.rom_cntl = true;
        self.post(ROM_CNTL, rom_cntl_transaction(open_value))?;
        self.touched.sw = true;
        self.post(ROM_SW_CNTL, 0)?;
        self.post(ROM_SW_STATUS, 0)?;
        let status = self.read(ROM_SW_STATUS)?;
        match status {
            0 => Ok(()),
            SW_STATUS_GATED => Err(RomSwError::Gated),
            ALL_ONES => Err(RomSwError::DeviceGone),
            other => Err(RomSwError::StatusNotCleared(other)),
        }
    }

    /// Restore every register the session touched (ROM_SW_CNTL/STATUS cleared, then ROM_CNTL,
    /// PAGE_MIRROR_CNTL, GPIO_PAD_A, GPIO_PAD_EN, GPIO_PAD_MASK — the restore order of docs/hw/navi31-spi-flash.md §3).
    /// Idempotent; every restore write is attempted even if an earlier one fails.
    pub fn close(&mut self) -> Result<(), RomSwError<M::Error>> {
        if !self.open {
            return Ok(());
        }
        self.open = false;
        let sv = self.saved;
        let t = self.touched;
        let mut first_err = None;
        let mut w = |m: &mut M, off: u64, v: u32| {
            if let Err(e) = m.write32_posted(off, v) {
                first_err.get_or_insert(e);
            }
        };
        if t.sw {
            w(&mut self.mmio, ROM_SW_CNTL, 0);
            w(&mut self.mmio, ROM_SW_STATUS, 0);
        }
        if t.rom_cntl {
            w(&mut self.mmio, ROM_CNTL, sv.rom_cntl);
        }
        if t.mirror {
            w(&mut self.mmio, PAGE_MIRROR_CNTL, sv.mirror);
        }
        if t.pads {
            w(&mut self.mmio, GPIO_PAD_A, sv.pad_a);
            w(&mut self.mmio, GPIO_PAD_EN, sv.pad_en);
            w(&mut self.mmio, GPIO_PAD_MASK, sv.pad_mask);
        }
        if let Err(e) = self.mmio.flush() {
            first_err.get_or_insert(e);
        }
        match first_err {
            Some(e) => Err(RomSwError::Mmio(e)),
            None => Ok(()),
        }
    }

    /// Session counters.
    pub fn stats(&self) -> RomSwStats {
        self.stats
    }

    /// The underlying MMIO (for transport counters).
    pub fn mmio(&self) -> &M {
        &self.mmio
    }

    fn read(&mut self, off: u64) -> Result<u32, RomSwError<M::Error>> {
        self.mmio.read32(off).map_err(RomSwError::Mmio)
    }

    fn post(&mut self, off: u64, v: u32) -> Result<(), RomSwError<M::Error>> {
        self.mmio.write32_posted(off, v).map_err(RomSwError::Mmio)
    }

    /// Start one transaction and wait for done. `tx` = TX data (may be empty), or `rx` = RX count.
    fn run(&mut self, t: Txn, tx: &[u8], rx: Option<u16>) -> Result<(), RomSwError<M::Error>> {
        if !self.open {
            return Err(RomSwError::Closed);
        }
        let res = self.run_inner(t, tx, rx);
        if res.is_err() {
            // Leave the engine idle; the session registers are restored at close.
            let _ = self.mmio.write32_posted(ROM_SW_CNTL, 0);
            let _ = self.mmio.write32_posted(ROM_SW_STATUS, 0);
            let _ = self.mmio.flush();
        }
        res
    }

    fn run_inner(
        &mut self,
        t: Txn,
        tx: &[u8],
        rx: Option<u16>,
    ) -> Result<(), RomSwError<M::Error>> {
        self.mmio
            .write_block(ROM_SW_STATUS, &[0, sw_command(t.opcode, t.address)])
            .map_err(RomSwError::Mmio)?;
        let count = match rx {
            Some(n) => n,
            None => {
                if !tx.is_empty() {
                    let mut words = [0u32; ROM_SW_DATA_DWORDS];
                    let n = pack_tx(tx, &mut words);
                    self.mmio
                        .write_block(ROM_SW_DATA, &words[..n])
                        .map_err(RomSwError::Mmio)?;
                }
                tx.len() as u16
            }
        };
        self.post(ROM_SW_CNTL, sw_control(t.address_len, rx.is_some(), count))?;
        self.stats.transactions += 1;
        self.wait_done()
    }

    /// Poll STATUS.done: immediately, then every `fast_poll_us` during the fast phase, then every
    /// `poll_interval_us`, until `timeout_ms` of delay has passed (so the wait is bounded).
    fn wait_done(&mut self) -> Result<(), RomSwError<M::Error>> {
        let timeout_us = self.cfg.timeout_ms as u64 * 1000;
        let mut waited_us = 0u64;
        loop {
            let status = self.read(ROM_SW_STATUS)?;
            if status == ALL_ONES {
                return Err(RomSwError::DeviceGone);
            }
            if status & SW_STATUS_DONE != 0 {
                return Ok(());
            }
            if waited_us >= timeout_us {
                return Err(RomSwError::Timeout { status });
            }
            let step = if waited_us < self.cfg.fast_phase_us as u64 {
                self.cfg.fast_poll_us
            } else {
                self.cfg.poll_interval_us
            }
            .max(1);
            self.stats.extra_polls += 1;
            self.delay.delay_us(step);
            waited_us += step as u64;
        }
    }

    /// Fetch `out.len()` bytes of the RX window (capture of the previous transaction), skipping
    /// the first `skip` captured bytes.
    fn fetch(&mut self, skip: usize, out: &mut [u8]) -> Result<(), RomSwError<M::Error>> {
        let total = skip + out.len();
        let mut words = [0u32; ROM_SW_DATA_DWORDS];
        let n = total.div_ceil(4);
        self.mmio
            .read_block(ROM_SW_DATA, &mut words[..n])
            .map_err(RomSwError::Mmio)?;
        unpack_rx(&words[..n], skip, out);
        Ok(())
    }

    /// Primed/pipelined read: `header` = opcode + address bytes + dummy bytes.
    fn read_op(&mut self, header: &[u8], out: &mut [u8]) -> Result<(), RomSwError<M::Error>> {
        let address_len = (header.len() - 1).min(3);
        let dummy = header.len() - 1 - address_len;
        let address = be_address(&header[1..1 + address_len]);
        let t = Txn {
            opcode: header[0],
            address,
            address_len: address_len as u8,
        };
        if dummy + out.len() <= SW_MAX_DATA {
            let count = (dummy + out.len()) as u16;
            self.run(t, &[], Some(count.max(2)))?;
            self.run(t, &[], Some(count))?;
            return self.fetch(dummy, out);
        }
        if address_len != 3 {
            return Err(RomSwError::Unsupported(
                "reads over 256 bytes need a 3-byte address",
            ));
        }
        if dummy >= SW_MAX_DATA {
            return Err(RomSwError::Unsupported("too many dummy bytes"));
        }
        // Pipelined: chunk k's capture is fetched after chunk k+1 completed.
        let step = SW_MAX_DATA - dummy;
        let chunks = out.len().div_ceil(step);
        let txn = |k: usize| Txn {
            address: address.wrapping_add((k * step) as u32) & 0xFF_FFFF,
            ..t
        };
        let total = out.len();
        let len = |k: usize| (total - k * step).min(step);
        self.run(txn(0), &[], Some((dummy + len(0)).max(2) as u16))?;
        for k in 1..chunks {
            self.run(txn(k), &[], Some((dummy + len(k)).max(2) as u16))?;
            let start = (k - 1) * step;
            self.fetch(dummy, &mut out[start..start + len(k - 1)])?;
        }
        let last = chunks - 1;
        self.run(txn(last), &[], Some((dummy + len(last)) as u16))?;
        let start = last * step;
        self.fetch(dummy, &mut out[start..start + len(last)])
    }

    fn write_op(&mut self, bytes: &[u8]) -> Result<(), RomSwError<M::Error>> {
        let address_len = if bytes.len() >= 4 { 3 } else { 0 };
        let data = &bytes[1 + address_len..];
        if data.len() > SW_MAX_DATA {
            return Err(RomSwError::Unsupported("more than 256 TX data bytes"));
        }
        let t = Txn {
            opcode: bytes[0],
            address: be_address(&bytes[1..1 + address_len]),
            address_len: address_len as u8,
        };
        self.run(t, data, None)
    }
}

impl<M: Mmio, D: DelayNs> Drop for RomSw<M, D> {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Pack TX bytes into big-endian dwords (first SPI byte = bits 31:24), zero-padding the last one.
/// Returns the number of dwords used.
pub fn pack_tx(data: &[u8], words: &mut [u32]) -> usize {
    let n = data.len().div_ceil(4);
    for (i, w) in words.iter_mut().take(n).enumerate() {
        let mut b = [0u8; 4];
        for (j, slot) in b.iter_mut().enumerate() {
            *slot = data.get(4 * i + j).copied().unwrap_or(0);
        }
        *w = u32::from_be_bytes(b);
    }
    n
}

/// Unpack RX dwords: byte k = bits 8·(k%4)+7..8·(k%4) of dword k/4 (little-endian per dword).
pub fn unpack_rx(words: &[u32], skip: usize, out: &mut [u8]) {
    for (i, o) in out.iter_mut().enumerate() {
        let k = skip + i;
        *o = words
            .get(k / 4)
            .map(|w| w.to_le_bytes()[k % 4])
            .unwrap_or(0);
    }
}

fn be_address(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0u32, |a, &b| (a << 8) | b as u32)
}

/// Largest header (opcode + 3 address bytes + dummy bytes) accepted before a read.
const MAX_HEADER: usize = 4 + SW_MAX_DATA;

impl<M: Mmio, D: DelayNs> ErrorType for RomSw<M, D> {
    type Error = RomSwError<M::Error>;
}

impl<M: Mmio, D: DelayNs> SpiDevice for RomSw<M, D> {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), Self::Error> {
        let mut header = [0u8; MAX_HEADER];
        let mut hlen = 0usize;
        let count = operations.len();
        for (i, op) in operations.iter_mut().enumerate() {
            match op {
                Operation::Write(bytes) => {
                    if hlen + bytes.len() > MAX_HEADER {
                        return Err(RomSwError::Unsupported("more than 256 TX data bytes"));
                    }
                    header[hlen..hlen + bytes.len()].copy_from_slice(bytes);
                    hlen += bytes.len();
                }
                Operation::Read(buf) => {
                    if i + 1 != count {
                        return Err(RomSwError::Unsupported("a read must be the last operation"));
                    }
                    if hlen == 0 {
                        return Err(RomSwError::Unsupported("a read needs an opcode first"));
                    }
                    if buf.is_empty() {
                        return self.write_op(&header[..hlen]);
                    }
                    return self.read_op(&header[..hlen], buf);
                }
                Operation::Transfer(..) | Operation::TransferInPlace(..) => {
                    return Err(RomSwError::Unsupported("full-duplex transfers"));
                }
                Operation::DelayNs(_) => {
                    return Err(RomSwError::Unsupported("delays inside a transaction"));
                }
            }
        }
        if hlen == 0 {
            return Ok(());
        }
        self.write_op(&header[..hlen])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_packing_is_big_endian_and_zero_padded() {
        let mut w = [0u32; 4];
        assert_eq!(pack_tx(&[0x11, 0x22, 0x33, 0x44, 0x55], &mut w), 2);
        assert_eq!(w[0], 0x1122_3344);
        assert_eq!(w[1], 0x5500_0000);
    }

    #[test]
    fn rx_unpacking_is_little_endian_per_dword() {
        let mut out = [0u8; 5];
        unpack_rx(&[0x4433_2211, 0x0000_0055], 0, &mut out);
        assert_eq!(out, [0x11, 0x22, 0x33, 0x44, 0x55]);
        let mut skipped = [0u8; 3];
        unpack_rx(&[0x4433_2211, 0x0000_0055], 2, &mut skipped);
        assert_eq!(skipped, [0x33, 0x44, 0x55]);
    }
}
