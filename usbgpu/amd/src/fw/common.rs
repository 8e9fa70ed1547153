//! The 32-byte header every amdgpu firmware blob starts with (Linux `common_firmware_header`):
//! total size, header size, header version, IP version, ucode version, and the main ucode array.
use super::bytes::{span, u16_at, u32_at, Span};
use super::FwError;

/// Bytes of the common header.
pub const COMMON_HEADER_BYTES: usize = 32;

/// The common header, checked against the blob it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommonHeader {
    /// `size_bytes`: the whole file.
    pub size_bytes: u32,
    /// `header_size_bytes`: the format-specific header including this one.
    pub header_size_bytes: u32,
    pub header_version_major: u16,
    pub header_version_minor: u16,
    pub ip_version_major: u16,
    pub ip_version_minor: u16,
    pub ucode_version: u32,
    /// The main ucode array (`ucode_array_offset_bytes`, `ucode_size_bytes`).
    pub ucode: Span,
    /// `crc32` as stored (not checked by the driver; see docs/hw/amd-firmware.md).
    pub crc32: u32,
}

impl CommonHeader {
    /// Parse and check the common header of `blob`: `size_bytes` equals the blob length,
    /// `header_size_bytes` covers at least `min_header` bytes (the format's own header) and lies
    /// inside the blob, and the ucode array lies inside the blob.
    pub fn parse(blob: &[u8], format: &'static str, min_header: usize) -> Result<Self, FwError> {
        if blob.len() < COMMON_HEADER_BYTES {
            return Err(FwError::Truncated {
                what: "common header",
                need: COMMON_HEADER_BYTES,
                have: blob.len(),
            });
        }
        let size_bytes = u32_at(blob, 0, "size_bytes")?;
        if size_bytes as usize != blob.len() {
            return Err(FwError::SizeMismatch {
                header: size_bytes,
                file: blob.len(),
            });
        }
        let header_size_bytes = u32_at(blob, 4, "header_size_bytes")?;
        if (header_size_bytes as usize) < min_header || header_size_bytes as usize > blob.len() {
            return Err(FwError::HeaderSize {
                format,
                header: header_size_bytes,
                min: min_header,
                file: blob.len(),
            });
        }
        let ucode_size = u32_at(blob, 20, "ucode_size_bytes")?;
        let ucode_off = u32_at(blob, 24, "ucode_array_offset_bytes")?;
        Ok(CommonHeader {
            size_bytes,
            header_size_bytes,
            header_version_major: u16_at(blob, 8, "header_version_major")?,
            header_version_minor: u16_at(blob, 10, "header_version_minor")?,
            ip_version_major: u16_at(blob, 12, "ip_version_major")?,
            ip_version_minor: u16_at(blob, 14, "ip_version_minor")?,
            ucode_version: u32_at(blob, 16, "ucode_version")?,
            ucode: span(blob, ucode_off.into(), ucode_size.into(), "ucode array")?,
            crc32: u32_at(blob, 28, "crc32")?,
        })
    }

    /// [`FwError::HeaderSize`] unless `header_size_bytes` covers `min` bytes (for formats whose header
    /// grows with its version).
    pub fn require_header(&self, format: &'static str, min: usize) -> Result<(), FwError> {
        if (self.header_size_bytes as usize) < min {
            return Err(FwError::HeaderSize {
                format,
                header: self.header_size_bytes,
                min,
                file: self.size_bytes as usize,
            });
        }
        Ok(())
    }

    /// [`FwError::Version`] unless the header version is `major` with a minor in `minors`.
    pub fn expect_version(
        &self,
        format: &'static str,
        major: u16,
        minors: &[u16],
    ) -> Result<(), FwError> {
        if self.header_version_major == major && minors.contains(&self.header_version_minor) {
            Ok(())
        } else {
            Err(FwError::Version {
                format,
                major: self.header_version_major,
                minor: self.header_version_minor,
            })
        }
    }
}
