//! PSP early-boot flash mailbox (docs/hw/navi31-spi-flash.md §8): the command handshake, the error-code table, the
//! read-only `probe`, payload streaming and `ifwi_all` (the one enabled firmware write path; the
//! CLI guards it with `--yes`). The other firmware-write paths of the reference tool (`stream`,
//! `ifwi-step`, `live-flash`) stay disabled there and are not offered here.
use modelrt_hal::embedded_hal::delay::DelayNs;
use modelrt_hal::mmio::Mmio;

use super::ifwi::{self, IfwiError};
use super::regs::{ALL_ONES, PSP_COMMAND, PSP_COMMAND_DATA, PSP_DOORBELL};

/// Mailbox command ids.
pub mod cmd {
    /// Boot partition (raw).
    pub const GET_BOOT_PARTITION: u8 = 0x01;
    /// Frame-buffer state (raw).
    pub const GET_FB_STATE: u8 = 0x06;
    /// `(phase << 8) | requested_item`.
    pub const GET_TRANSFER_TYPE: u8 = 0x07;
    /// `(payload_len << 8) | item`.
    pub const START_TRANSFER: u8 = 0x08;
    /// Next payload dword.
    pub const DATA_TRANSFER: u8 = 0x09;
    /// `(bytes_sent << 8) | item`.
    pub const END_TRANSFER: u8 = 0x0A;
    /// SPI model id (raw).
    pub const SPI_GET_MODEL_ID: u8 = 0x0B;
}

/// Default handshake timeout (ms).
pub const TIMEOUT_MS: u32 = 10_000;
/// END_TRANSFER / LIVE_UPDATE timeout (ms).
pub const LONG_TIMEOUT_MS: u32 = 60_000;
/// Poll interval (µs).
pub const POLL_US: u32 = 1000;
/// ROMItemCount of Navi31 (AMDVBFlash ASIC table): most items one `ifwi_all` run streams.
pub const MAX_ITEMS: usize = 19;
/// Mailbox error 0x0A, which GET_TRANSFER_TYPE returns once SOS owns the PSP.
pub const ERR_PARTITION_UPDATE: u16 = 0x0A;

/// Text of a mailbox error code (docs/hw/navi31-spi-flash.md §8 table).
pub fn error_text(code: u16) -> &'static str {
    match code {
        0x00 => "ok",
        0x01 => "generic error",
        0x02 => "out of bounds",
        0x03 => "invalid parameter",
        0x04 => "off-chip boot error",
        0x05 => "address not set",
        0x06 => "parse off-chip error",
        0x07 => "address map error",
        0x08 => "parse on-chip error",
        0x09 => "full update error",
        0x0A => "partition update error",
        0x0B => "map on-chip error",
        0x0C => "write to SPI error",
        0x0D => "signature validation error",
        0x0E => "invalid command",
        0x0F => "signature not found",
        0x10 => "state machine not initialized",
        0x11 => "state machine transfer error",
        0x12 => "initialization error",
        _ => "unknown error",
    }
}

/// Outcome of one completed mailbox command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    /// Low 16 bits of COMMAND (0 = ok).
    pub error: u16,
    /// COMMAND_DATA after completion.
    pub response: u32,
}

/// Mailbox failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PspError<E> {
    /// BAR5 access failed.
    Mmio(E),
    /// COMMAND bit 31 clear before submitting.
    NotReady { command: u8, status: u32 },
    /// Completion not seen in time.
    Timeout { command: u8 },
    /// BAR5 reads all-ones.
    DeviceGone,
    /// A `require`d command returned an error code.
    Failed { name: &'static str, error: u16 },
    /// Payload empty, not a multiple of 4, or longer than 0xFFFFFF.
    BadPayload(usize),
    /// Image is not 2 MiB.
    ImageSize(usize),
    /// Item resolution failed.
    Ifwi(IfwiError),
    /// No terminal phase within the item budget.
    NoTerminalPhase,
}

impl<E: core::fmt::Display> core::fmt::Display for PspError<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PspError::Mmio(e) => write!(f, "BAR5 access failed: {e}"),
            PspError::NotReady { command, status } => write!(
                f,
                "PSP mailbox is not ready before command 0x{command:02X}: status=0x{status:08X}"
            ),
            PspError::Timeout { command } => {
                write!(f, "PSP mailbox command 0x{command:02X} timed out")
            }
            PspError::DeviceGone => write!(f, "GPU stopped responding (BAR5 reads all-ones)"),
            PspError::Failed { name, error } => {
                write!(
                    f,
                    "PSP {name} failed: error=0x{error:02X} ({})",
                    error_text(*error)
                )?;
                if *error == ERR_PARTITION_UPDATE && *name == "GET_TRANSFER_TYPE" {
                    write!(
                        f,
                        "; update commands gated: reset card and do not initialize AMDev/SOS"
                    )?;
                }
                Ok(())
            }
            PspError::BadPayload(n) => {
                write!(
                    f,
                    "payload of {n} bytes must be 4..0xFFFFFF bytes and a multiple of 4"
                )
            }
            PspError::ImageSize(n) => write!(f, "image is {n} bytes, must be exactly 2097152"),
            PspError::Ifwi(e) => write!(f, "{e}"),
            PspError::NoTerminalPhase => {
                write!(f, "no terminal phase after {MAX_ITEMS} items; stopping")
            }
        }
    }
}

/// Result of `probe`: each command's reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// GET_BOOT_PARTITION.
    pub boot_partition: Reply,
    /// GET_FB_STATE.
    pub fb_state: Reply,
    /// SPI_GET_MODEL_ID.
    pub spi_model_id: Reply,
    /// GET_TRANSFER_TYPE.
    pub transfer_type: Reply,
}

/// Progress of `ifwi_all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// Starting an item of `len` bytes in `phase`.
    Item { item: u8, phase: u8, len: usize },
    /// `sent` of the current item's bytes went out.
    Bytes { sent: usize },
}

/// The PSP mailbox on a BAR5 [`Mmio`].
pub struct Mailbox<M, D> {
    mmio: M,
    delay: D,
}

impl<M: Mmio, D: DelayNs> Mailbox<M, D> {
    /// Wrap a BAR5 MMIO.
    pub fn new(mmio: M, delay: D) -> Self {
        Mailbox { mmio, delay }
    }

    /// The underlying MMIO.
    pub fn mmio(&self) -> &M {
        &self.mmio
    }

    fn read(&mut self, off: u64) -> Result<u32, PspError<M::Error>> {
        let v = self.mmio.read32(off).map_err(PspError::Mmio)?;
        if v == ALL_ONES {
            return Err(PspError::DeviceGone);
        }
        Ok(v)
    }

    /// One handshake (docs/hw/navi31-spi-flash.md §8 steps 1–6). Error codes are returned, not raised.
    pub fn command(
        &mut self,
        id: u8,
        arg: Option<u32>,
        timeout_ms: u32,
    ) -> Result<Reply, PspError<M::Error>> {
        let status = self.read(PSP_COMMAND)?;
        if status & 0x8000_0000 == 0 {
            return Err(PspError::NotReady {
                command: id,
                status,
            });
        }
        if let Some(a) = arg {
            self.mmio
                .write32_posted(PSP_COMMAND_DATA, a)
                .map_err(PspError::Mmio)?;
        }
        self.mmio
            .write32_posted(PSP_COMMAND, (id as u32) << 16)
            .map_err(PspError::Mmio)?;
        self.mmio
            .write32_posted(PSP_DOORBELL, 1)
            .map_err(PspError::Mmio)?;
        let polls = (timeout_ms as u64 * 1000).div_ceil(POLL_US as u64) + 1;
        for i in 0..polls {
            if i > 0 {
                self.delay.delay_us(POLL_US);
            }
            let v = self.read(PSP_COMMAND)?;
            if v & 0x8000_0000 != 0 {
                let response = self.mmio.read32(PSP_COMMAND_DATA).map_err(PspError::Mmio)?;
                return Ok(Reply {
                    error: (v & 0xFFFF) as u16,
                    response,
                });
            }
        }
        Err(PspError::Timeout { command: id })
    }

    fn require(
        &mut self,
        name: &'static str,
        id: u8,
        arg: Option<u32>,
        timeout_ms: u32,
    ) -> Result<u32, PspError<M::Error>> {
        let r = self.command(id, arg, timeout_ms)?;
        if r.error != 0 {
            return Err(PspError::Failed {
                name,
                error: r.error,
            });
        }
        Ok(r.response)
    }

    /// GET_BOOT_PARTITION, GET_FB_STATE, SPI_GET_MODEL_ID, GET_TRANSFER_TYPE; error codes are
    /// reported, not raised.
    pub fn probe(&mut self) -> Result<Probe, PspError<M::Error>> {
        Ok(Probe {
            boot_partition: self.command(cmd::GET_BOOT_PARTITION, None, TIMEOUT_MS)?,
            fb_state: self.command(cmd::GET_FB_STATE, None, TIMEOUT_MS)?,
            spi_model_id: self.command(cmd::SPI_GET_MODEL_ID, None, TIMEOUT_MS)?,
            transfer_type: self.command(cmd::GET_TRANSFER_TYPE, None, TIMEOUT_MS)?,
        })
    }

    /// Stream one item: START, one DATA per dword, END. After a successful START, any failure
    /// while bytes are still missing sends one best-effort END with the bytes sent so far.
    fn stream(
        &mut self,
        payload: &[u8],
        item: u8,
        progress: &mut impl FnMut(StreamEvent),
    ) -> Result<(), PspError<M::Error>> {
        if payload.is_empty() || !payload.len().is_multiple_of(4) || payload.len() > 0xFF_FFFF {
            return Err(PspError::BadPayload(payload.len()));
        }
        let start = ((payload.len() as u32) << 8) | item as u32;
        self.require(
            "START_TRANSFER",
            cmd::START_TRANSFER,
            Some(start),
            TIMEOUT_MS,
        )?;
        let mut sent = 0usize;
        let res = (|| {
            for word in payload.chunks(4) {
                let v = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
                self.require("DATA_TRANSFER", cmd::DATA_TRANSFER, Some(v), TIMEOUT_MS)?;
                sent += 4;
                if sent.is_multiple_of(4096) {
                    progress(StreamEvent::Bytes { sent });
                }
            }
            Ok(())
        })();
        if let Err(e) = res {
            let end = ((sent as u32) << 8) | item as u32;
            let _ = self.command(cmd::END_TRANSFER, Some(end), TIMEOUT_MS);
            return Err(e);
        }
        progress(StreamEvent::Bytes { sent });
        let end = ((sent as u32) << 8) | item as u32;
        self.require(
            "END_TRANSFER",
            cmd::END_TRANSFER,
            Some(end),
            LONG_TIMEOUT_MS,
        )?;
        Ok(())
    }

    /// Stream the items the PSP requests from `image` until it reports phase 2 (done; the board
    /// then needs a hard power cycle). Returns the streamed item ids in order.
    pub fn ifwi_all(
        &mut self,
        image: &[u8],
        mut progress: impl FnMut(StreamEvent),
    ) -> Result<heapless::Vec<u8, MAX_ITEMS>, PspError<M::Error>> {
        if image.len() != ifwi::IMAGE_SIZE {
            return Err(PspError::ImageSize(image.len()));
        }
        let mut done = heapless::Vec::new();
        let mut state = self.require(
            "GET_TRANSFER_TYPE",
            cmd::GET_TRANSFER_TYPE,
            None,
            TIMEOUT_MS,
        )?;
        for _ in 0..MAX_ITEMS {
            let item = (state & 0xFF) as u8;
            let phase = (state >> 8) as u8;
            let range = ifwi::resolve(image, item).map_err(PspError::Ifwi)?;
            progress(StreamEvent::Item {
                item,
                phase,
                len: range.len(),
            });
            self.stream(&image[range], item, &mut progress)?;
            let _ = done.push(item);
            if phase == 2 {
                return Ok(done);
            }
            state = self.require(
                "GET_TRANSFER_TYPE",
                cmd::GET_TRANSFER_TYPE,
                None,
                TIMEOUT_MS,
            )?;
        }
        Err(PspError::NoTerminalPhase)
    }
}
