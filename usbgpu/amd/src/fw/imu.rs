//! IMU firmware, header v1.0 (Linux `imu_firmware_header_v1_0`): an instruction-RAM image and a
//! data-RAM image, both inside the ucode array, their offsets counted from the array's start.
use super::bytes::{span, u32_at, Span};
use super::common::CommonHeader;
use super::FwError;

/// A checked IMU firmware file.
#[derive(Clone, Copy, Debug)]
pub struct Imu<'a> {
    blob: &'a [u8],
    pub common: CommonHeader,
    pub iram: Span,
    pub dram: Span,
}

impl<'a> Imu<'a> {
    pub fn parse(blob: &'a [u8]) -> Result<Self, FwError> {
        const FORMAT: &str = "IMU";
        let common = CommonHeader::parse(blob, FORMAT, 48)?;
        common.expect_version(FORMAT, 1, &[0])?;
        let array = common.ucode.of(blob);
        let base = u64::from(common.ucode.offset);
        let region = |size_at, off_at, what| -> Result<Span, FwError> {
            let size = u32_at(blob, size_at, what)?;
            let off = u32_at(blob, off_at, what)?;
            span(array, off.into(), size.into(), what)?;
            span(blob, base + u64::from(off), size.into(), what)
        };
        let iram = region(32, 36, "IMU IRAM image")?;
        let dram = region(40, 44, "IMU DRAM image")?;
        Ok(Imu {
            blob,
            common,
            iram,
            dram,
        })
    }

    pub fn iram_bytes(&self) -> &'a [u8] {
        self.iram.of(self.blob)
    }

    pub fn dram_bytes(&self) -> &'a [u8] {
        self.dram.of(self.blob)
    }
}
