//! SPI NOR flash driver over any [`SpiDevice`] (docs/hw/navi31-spi-flash.md §5): JEDEC identification
//! against the chip table, status registers 1–3, SFDP, checked write enable, 4 KiB sector erase,
//! page program that never crosses a page, reads, bounded busy polling and the SR2.CMP bit.
//!
//! Writes are refused for chips not in the table. CMP is cleared only through
//! [`SpiNor::clear_cmp`], which preserves every other protection/QE bit.
use modelrt_hal::embedded_hal::delay::DelayNs;
use modelrt_hal::embedded_hal::spi::{Operation, SpiDevice};

use super::chips::{identify, ChipInfo, Identify};

/// Opcodes used (GD25-family standard SPI NOR set).
pub mod op {
    /// Read JEDEC id.
    pub const RDID: u8 = 0x9F;
    /// Read status register 1.
    pub const RDSR1: u8 = 0x05;
    /// Read status register 2.
    pub const RDSR2: u8 = 0x35;
    /// Read status register 3.
    pub const RDSR3: u8 = 0x15;
    /// Read SFDP.
    pub const RDSFDP: u8 = 0x5A;
    /// Write enable.
    pub const WREN: u8 = 0x06;
    /// Write status registers 1+2.
    pub const WRSR: u8 = 0x01;
    /// 4 KiB sector erase.
    pub const SE: u8 = 0x20;
    /// Page program.
    pub const PP: u8 = 0x02;
    /// Read data.
    pub const READ: u8 = 0x03;
}

/// SR1 bit 0: write in progress.
pub const SR1_BUSY: u8 = 0x01;
/// SR1 bit 1: write enable latch.
pub const SR1_WEL: u8 = 0x02;
/// Busy polling interval (docs/hw/navi31-spi-flash.md §5: 2 ms).
pub const BUSY_POLL_US: u32 = 2000;

/// Flash driver failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlashError<E> {
    /// The SPI transport failed.
    Spi(E),
    /// RDID returned all 0xFF / all 0x00.
    NoResponse { capture: [u8; 4] },
    /// RDID matched no chip in the table: writes refused.
    UnknownChip { capture: [u8; 4] },
    /// WREN did not set WEL.
    WrenFailed { sr1: u8 },
    /// BUSY stayed set past the timeout.
    Busy { ms: u32 },
    /// Address/length outside the array or misaligned.
    Range { address: u32, len: u32 },
    /// A page program would cross a page boundary.
    CrossesPage { address: u32, len: u32 },
    /// The chip has CMP set; clearing it needs explicit authorization.
    CmpSet,
    /// CMP still set after WRSR.
    CmpClearFailed { sr2: u8 },
}

impl<E: core::fmt::Display> core::fmt::Display for FlashError<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FlashError::Spi(e) => write!(f, "{e}"),
            FlashError::NoResponse { capture } => write!(
                f,
                "no flash answered (JEDEC capture {:02X?}): check connection",
                capture
            ),
            FlashError::UnknownChip { capture } => write!(
                f,
                "unexpected JEDEC capture {:02X?}: unknown flash chip, refusing to write",
                capture
            ),
            FlashError::WrenFailed { sr1 } => write!(f, "WREN failed (SR1=0x{sr1:02X})"),
            FlashError::Busy { ms } => {
                write!(f, "flash remained busy for {}s", *ms as f32 / 1000.0)
            }
            FlashError::Range { address, len } => {
                write!(
                    f,
                    "range 0x{address:X}+0x{len:X} is outside the flash or misaligned"
                )
            }
            FlashError::CrossesPage { address, len } => {
                write!(
                    f,
                    "page program 0x{address:X}+0x{len:X} crosses a page boundary"
                )
            }
            FlashError::CmpSet => write!(
                f,
                "flash is write-protected (SR2.CMP set); pass --clear-cmp to clear it"
            ),
            FlashError::CmpClearFailed { sr2 } => {
                write!(f, "failed to clear CMP (SR2=0x{sr2:02X})")
            }
        }
    }
}

/// A flash chip behind a [`SpiDevice`].
pub struct SpiNor<S, D> {
    spi: S,
    delay: D,
    chip: Option<&'static ChipInfo>,
    jedec: [u8; 4],
}

impl<S: SpiDevice, D: DelayNs> SpiNor<S, D> {
    /// Read RDID and identify the chip. All-0xFF/all-0x00 captures fail ("check connection");
    /// an unknown id is accepted for reading only ([`SpiNor::chip`] is `None`, writes refused).
    pub fn probe(mut spi: S, delay: D) -> Result<Self, FlashError<S::Error>> {
        let mut jedec = [0u8; 4];
        spi.transaction(&mut [Operation::Write(&[op::RDID]), Operation::Read(&mut jedec)])
            .map_err(FlashError::Spi)?;
        let chip = match identify(&jedec) {
            Identify::Known(c) => Some(c),
            Identify::NoResponse => return Err(FlashError::NoResponse { capture: jedec }),
            Identify::Unknown => None,
        };
        Ok(SpiNor {
            spi,
            delay,
            chip,
            jedec,
        })
    }

    /// The identified chip, or `None` if the JEDEC id is not in the table.
    pub fn chip(&self) -> Option<&'static ChipInfo> {
        self.chip
    }

    /// Raw RDID capture.
    pub fn jedec_capture(&self) -> [u8; 4] {
        self.jedec
    }

    /// The SPI device (e.g. to close a session).
    pub fn spi_mut(&mut self) -> &mut S {
        &mut self.spi
    }

    fn known(&self) -> Result<&'static ChipInfo, FlashError<S::Error>> {
        self.chip.ok_or(FlashError::UnknownChip {
            capture: self.jedec,
        })
    }

    fn reg(&mut self, opcode: u8) -> Result<u8, FlashError<S::Error>> {
        let mut b = [0u8; 1];
        self.spi
            .transaction(&mut [Operation::Write(&[opcode]), Operation::Read(&mut b)])
            .map_err(FlashError::Spi)?;
        Ok(b[0])
    }

    /// Status register 1 (bit 0 BUSY, bit 1 WEL, BP bits).
    pub fn status1(&mut self) -> Result<u8, FlashError<S::Error>> {
        self.reg(op::RDSR1)
    }

    /// Status register 2 (CMP, QE, ...).
    pub fn status2(&mut self) -> Result<u8, FlashError<S::Error>> {
        self.reg(op::RDSR2)
    }

    /// Status register 3.
    pub fn status3(&mut self) -> Result<u8, FlashError<S::Error>> {
        self.reg(op::RDSR3)
    }

    /// Whether SR2.CMP is set (false for chips without CMP).
    pub fn cmp_set(&mut self) -> Result<bool, FlashError<S::Error>> {
        match self.known()?.sr2_cmp {
            Some(bit) => Ok(self.status2()? & bit != 0),
            None => Ok(false),
        }
    }

    /// Read SFDP bytes starting at `address` (the dummy byte is not part of `out`).
    pub fn read_sfdp(&mut self, address: u32, out: &mut [u8]) -> Result<(), FlashError<S::Error>> {
        let dummy = self.chip.map(|c| c.sfdp_dummy).unwrap_or(1).min(4) as usize;
        let mut header = [0u8; 8];
        header[..4].copy_from_slice(&command(op::RDSFDP, address));
        self.spi
            .transaction(&mut [Operation::Write(&header[..4 + dummy]), Operation::Read(out)])
            .map_err(FlashError::Spi)
    }

    /// Read `out.len()` bytes at `address` (0x03, no dummy).
    pub fn read(&mut self, address: u32, out: &mut [u8]) -> Result<(), FlashError<S::Error>> {
        let size = self.chip.map(|c| c.size).unwrap_or(1 << 24);
        check_range(address, out.len(), size)?;
        let cmd = command(op::READ, address);
        self.spi
            .transaction(&mut [Operation::Write(&cmd), Operation::Read(out)])
            .map_err(FlashError::Spi)
    }

    /// Write enable, then check SR1.WEL.
    pub fn write_enable(&mut self) -> Result<(), FlashError<S::Error>> {
        self.spi.write(&[op::WREN]).map_err(FlashError::Spi)?;
        let sr1 = self.status1()?;
        if sr1 & SR1_WEL == 0 {
            return Err(FlashError::WrenFailed { sr1 });
        }
        Ok(())
    }

    /// Poll SR1 every 2 ms until BUSY clears; bounded by `timeout_ms`.
    pub fn wait_idle(&mut self, timeout_ms: u32) -> Result<(), FlashError<S::Error>> {
        let polls = (timeout_ms as u64 * 1000).div_ceil(BUSY_POLL_US as u64) + 1;
        for i in 0..polls {
            if i > 0 {
                self.delay.delay_us(BUSY_POLL_US);
            }
            if self.status1()? & SR1_BUSY == 0 {
                return Ok(());
            }
        }
        Err(FlashError::Busy { ms: timeout_ms })
    }

    /// Erase the sector containing `address` (must be sector aligned).
    pub fn erase_sector(&mut self, address: u32) -> Result<(), FlashError<S::Error>> {
        let chip = self.known()?;
        if !address.is_multiple_of(chip.sector_size) || address >= chip.size {
            return Err(FlashError::Range {
                address,
                len: chip.sector_size,
            });
        }
        self.write_enable()?;
        self.spi
            .write(&command(op::SE, address))
            .map_err(FlashError::Spi)?;
        self.wait_idle(chip.erase_timeout_ms)
    }

    /// Program `data` (1..=page size bytes) at `address`, which must not cross a page boundary.
    pub fn program_page(&mut self, address: u32, data: &[u8]) -> Result<(), FlashError<S::Error>> {
        let chip = self.known()?;
        check_range(address, data.len(), chip.size)?;
        let len = data.len() as u32;
        if data.is_empty() || (address % chip.page_size) + len > chip.page_size {
            return Err(FlashError::CrossesPage { address, len });
        }
        self.write_enable()?;
        let cmd = command(op::PP, address);
        self.spi
            .transaction(&mut [Operation::Write(&cmd), Operation::Write(data)])
            .map_err(FlashError::Spi)?;
        self.wait_idle(chip.program_timeout_ms)
    }

    /// Clear SR2.CMP, preserving every other SR1/SR2 protection and QE bit. Calling this *is* the
    /// authorization; callers gate it behind an explicit user flag.
    pub fn clear_cmp(&mut self) -> Result<(), FlashError<S::Error>> {
        let chip = self.known()?;
        let Some(cmp) = chip.sr2_cmp else {
            return Ok(());
        };
        let sr1 = self.status1()?;
        let sr2 = self.status2()?;
        if sr2 & cmp == 0 {
            return Ok(());
        }
        self.write_enable()?;
        self.spi
            .write(&[op::WRSR, sr1 & !(SR1_BUSY | SR1_WEL), sr2 & !cmp])
            .map_err(FlashError::Spi)?;
        self.wait_idle(chip.wrsr_timeout_ms)?;
        let after = self.status2()?;
        if after & cmp != 0 {
            return Err(FlashError::CmpClearFailed { sr2: after });
        }
        Ok(())
    }
}

/// `opcode` followed by the 24-bit big-endian `address` (the header of every addressed command).
fn command(opcode: u8, address: u32) -> [u8; 4] {
    [
        opcode,
        (address >> 16) as u8,
        (address >> 8) as u8,
        address as u8,
    ]
}

fn check_range<E>(address: u32, len: usize, size: u32) -> Result<(), FlashError<E>> {
    let end = address as u64 + len as u64;
    if end > size as u64 {
        return Err(FlashError::Range {
            address,
            len: len as u32,
        });
    }
    Ok(())
}
