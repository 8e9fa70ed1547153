//! SDMA firmware, header v2.0 (two threads: TH0 "context" image at the ucode array, TH1 "control"
//! image at an absolute offset) and v3.0 (one image) — Linux `sdma_firmware_header_v2_0/_v3_0`.
use super::bytes::{span, u32_at, u32s, Span};
use super::common::CommonHeader;
use super::FwError;

/// A checked SDMA firmware file.
#[derive(Clone, Copy, Debug)]
pub struct Sdma<'a> {
    blob: &'a [u8],
    pub common: CommonHeader,
    pub ucode_feature_version: u32,
    /// Thread 0 (context) image.
    pub th0: Span,
    /// Thread 1 (control) image; `None` for v3.0.
    pub th1: Option<Span>,
    /// Jump-table offset and size (dwords) of TH0, as stored (v2.0).
    pub th0_jt: (u32, u32),
}

impl<'a> Sdma<'a> {
    pub fn parse(blob: &'a [u8]) -> Result<Self, FwError> {
        const FORMAT: &str = "SDMA";
        let common = CommonHeader::parse(blob, FORMAT, 44)?;
        let r = |off, what| u32_at(blob, off, what);
        let (th0, th1, th0_jt) = match (common.header_version_major, common.header_version_minor) {
            (2, 0) => {
                common.require_header(FORMAT, 64)?;
                let ctx_size = r(36, "ctx_ucode_size_bytes")?;
                let th0 = span(
                    blob,
                    common.ucode.offset.into(),
                    ctx_size.into(),
                    "SDMA TH0 image",
                )?;
                let [ctl_off, ctl_size] = u32s(blob, 48, "ctl_ucode_offset/size")?;
                let th1 = span(blob, ctl_off.into(), ctl_size.into(), "SDMA TH1 image")?;
                let [jt_off, jt_size] = u32s(blob, 40, "ctx_jt_offset/size")?;
                (th0, Some(th1), (jt_off, jt_size))
            }
            (3, 0) => {
                let [off, size] = u32s(blob, 36, "ucode_offset/size_bytes")?;
                (
                    span(blob, off.into(), size.into(), "SDMA image")?,
                    None,
                    (0, 0),
                )
            }
            (major, minor) => {
                return Err(FwError::Version {
                    format: FORMAT,
                    major,
                    minor,
                })
            }
        };
        Ok(Sdma {
            blob,
            common,
            ucode_feature_version: r(32, "ucode_feature_version")?,
            th0,
            th1,
            th0_jt,
        })
    }

    pub fn th0_bytes(&self) -> &'a [u8] {
        self.th0.of(self.blob)
    }

    pub fn th1_bytes(&self) -> Option<&'a [u8]> {
        self.th1.map(|s| s.of(self.blob))
    }
}
