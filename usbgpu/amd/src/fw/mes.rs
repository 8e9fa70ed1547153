//! MES scheduler firmware, header v1.0 (Linux `mes_firmware_header_v1_0`): an instruction image and a
//! data image (offsets from the start of the file) with their start addresses. The AM driver does not
//! load MES; it is parsed so every GC 11 blob in the firmware package is checked.
use super::bytes::{span, u32_at, Span};
use super::common::CommonHeader;
use super::FwError;

/// A checked MES firmware file.
#[derive(Clone, Copy, Debug)]
pub struct Mes<'a> {
    blob: &'a [u8],
    pub common: CommonHeader,
    pub ucode: Span,
    pub data: Span,
    pub ucode_start_addr: u64,
    pub data_start_addr: u64,
}

impl<'a> Mes<'a> {
    pub fn parse(blob: &'a [u8]) -> Result<Self, FwError> {
        const FORMAT: &str = "MES";
        let common = CommonHeader::parse(blob, FORMAT, 72)?;
        common.expect_version(FORMAT, 1, &[0])?;
        let r = |off| u32_at(blob, off, "MES header");
        let addr = |lo: usize| -> Result<u64, FwError> {
            Ok(u64::from(r(lo)?) | u64::from(r(lo + 4)?) << 32)
        };
        Ok(Mes {
            blob,
            common,
            ucode: span(blob, r(40)?.into(), r(36)?.into(), "MES ucode")?,
            data: span(blob, r(52)?.into(), r(48)?.into(), "MES data")?,
            ucode_start_addr: addr(56)?,
            data_start_addr: addr(64)?,
        })
    }

    pub fn ucode_bytes(&self) -> &'a [u8] {
        self.ucode.of(self.blob)
    }

    pub fn data_bytes(&self) -> &'a [u8] {
        self.data.of(self.blob)
    }
}
