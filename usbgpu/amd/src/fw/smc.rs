//! SMU firmware (Linux `smc_firmware_header_v1_0/_v2_0/_v2_1`): the ucode array plus its start
//! address; v2.0 adds one power-play table, v2.1 a table of {id, offset, size} soft power-play
//! entries (offsets from the start of the file).
use super::bytes::{span, u32_at, u32s, Span};
use super::common::CommonHeader;
use super::FwError;

/// Most soft power-play tables a v2.1 file may declare.
pub const MAX_PPTABLES: u32 = 64;

/// One soft power-play table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PpTable {
    pub id: u32,
    pub span: Span,
}

/// A checked SMC firmware file.
#[derive(Clone, Copy, Debug)]
pub struct Smc<'a> {
    blob: &'a [u8],
    pub common: CommonHeader,
    pub ucode_start_addr: u32,
    count: u32,
    entries: u32,
}

impl<'a> Smc<'a> {
    pub fn parse(blob: &'a [u8]) -> Result<Self, FwError> {
        const FORMAT: &str = "SMC";
        let common = CommonHeader::parse(blob, FORMAT, 36)?;
        let ucode_start_addr = u32_at(blob, 32, "ucode_start_addr")?;
        let (count, entries) = match (common.header_version_major, common.header_version_minor) {
            (1, 0) => (0, 0),
            (2, 0) => {
                common.require_header(FORMAT, 44)?;
                let off = u32_at(blob, 36, "ppt_offset_bytes")?;
                let size = u32_at(blob, 40, "ppt_size_bytes")?;
                span(blob, off.into(), size.into(), "power-play table")?;
                (0, 0)
            }
            (2, 1) => {
                common.require_header(FORMAT, 44)?;
                let count = u32_at(blob, 36, "pptable_count")?;
                if count > MAX_PPTABLES {
                    return Err(FwError::Count {
                        what: "power-play table",
                        count,
                        max: MAX_PPTABLES,
                    });
                }
                let entries = u32_at(blob, 40, "pptable_entry_offset")?;
                span(
                    blob,
                    entries.into(),
                    u64::from(count) * 12,
                    "power-play entry table",
                )?;
                (count, entries)
            }
            (major, minor) => {
                return Err(FwError::Version {
                    format: FORMAT,
                    major,
                    minor,
                })
            }
        };
        let smc = Smc {
            blob,
            common,
            ucode_start_addr,
            count,
            entries,
        };
        for i in 0..count as usize {
            smc.read(i)?;
        }
        Ok(smc)
    }

    fn read(&self, i: usize) -> Result<PpTable, FwError> {
        let [id, off, size] = u32s(
            self.blob,
            self.entries as usize + i * 12,
            "power-play entry",
        )?;
        Ok(PpTable {
            id,
            span: span(self.blob, off.into(), size.into(), "power-play table")?,
        })
    }

    /// The SMU ucode (what PSP loads as the SMU firmware).
    pub fn ucode(&self) -> &'a [u8] {
        self.common.ucode.of(self.blob)
    }

    /// The v2.1 soft power-play tables (none for v1.0/v2.0).
    pub fn pptables(&self) -> impl Iterator<Item = PpTable> + '_ {
        (0..self.count as usize).filter_map(|i| self.read(i).ok())
    }
}
