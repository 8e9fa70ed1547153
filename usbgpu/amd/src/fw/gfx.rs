//! RS64 command-processor firmware, header v2.0 (Linux `gfx_firmware_header_v2_0`): GC 11's PFP, ME
//! and MEC each ship an instruction image, a data (stack) image and the program-counter start address
//! the driver writes to `CP_*_RS64_PRGRM_CNTR_START`. Offsets are from the start of the file.
use super::bytes::{span, u32_at, Span};
use super::common::CommonHeader;
use super::FwError;

/// A checked RS64 GFX firmware file.
#[derive(Clone, Copy, Debug)]
pub struct Rs64Gfx<'a> {
    blob: &'a [u8],
    pub common: CommonHeader,
    pub ucode_feature_version: u32,
    /// Instruction image.
    pub ucode: Span,
    /// Data/stack image.
    pub data: Span,
    /// Byte address the CP starts executing at.
    pub ucode_start_addr: u64,
}

impl<'a> Rs64Gfx<'a> {
    pub fn parse(blob: &'a [u8]) -> Result<Self, FwError> {
        const FORMAT: &str = "RS64 GFX";
        let common = CommonHeader::parse(blob, FORMAT, 60)?;
        common.expect_version(FORMAT, 2, &[0])?;
        let r = |off, what| u32_at(blob, off, what);
        let ucode = span(
            blob,
            r(40, "ucode_offset_bytes")?.into(),
            r(36, "ucode_size_bytes")?.into(),
            "RS64 ucode",
        )?;
        let data = span(
            blob,
            r(48, "data_offset_bytes")?.into(),
            r(44, "data_size_bytes")?.into(),
            "RS64 data",
        )?;
        Ok(Rs64Gfx {
            blob,
            common,
            ucode_feature_version: r(32, "ucode_feature_version")?,
            ucode,
            data,
            ucode_start_addr: u64::from(r(52, "ucode_start_addr_lo")?)
                | u64::from(r(56, "ucode_start_addr_hi")?) << 32,
        })
    }

    pub fn ucode_bytes(&self) -> &'a [u8] {
        self.ucode.of(self.blob)
    }

    pub fn data_bytes(&self) -> &'a [u8] {
        self.data.of(self.blob)
    }
}
