//! RLC firmware, header v2.0–v2.4 (Linux `rlc_firmware_header_v2_0` … `_v2_4`). Each minor version
//! extends the previous header: v2.0 the RLC_G image (the ucode array) and the register-list arrays,
//! v2.1 the save/restore lists (CNTL, GPM, SRM), v2.2 the IRAM/DRAM images, v2.3 the RLC_P and RLC_V
//! images, v2.4 the tap-delay tables. Every offset except RLC_G's is from the start of the file.
use super::bytes::{span, u32_at, Span};
use super::common::CommonHeader;
use super::FwError;

/// A sub-image with its version fields where the header has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RlcImage {
    pub span: Span,
    pub ucode_version: u32,
    pub feature_version: u32,
}

/// A checked RLC firmware file.
#[derive(Clone, Copy, Debug)]
pub struct Rlc<'a> {
    blob: &'a [u8],
    pub common: CommonHeader,
    pub ucode_feature_version: u32,
    /// Register-list arrays (format, list, format separate, list separate) — v2.0.
    pub reg_lists: [Span; 4],
    /// Save/restore lists CNTL, GPM, SRM — v2.1 and later.
    pub restore_lists: Option<[RlcImage; 3]>,
    /// IRAM and DRAM images — v2.2 and later.
    pub iram_dram: Option<[Span; 2]>,
    /// RLC_P and RLC_V images — v2.3 and later.
    pub rlcp_rlcv: Option<[RlcImage; 2]>,
    /// Tap-delay tables (global, SE0..SE3) — v2.4.
    pub tap_delays: Option<[Span; 5]>,
}

/// Header bytes each minor version needs.
const MIN_HEADER: [usize; 5] = [104, 156, 172, 204, 244];

impl<'a> Rlc<'a> {
    pub fn parse(blob: &'a [u8]) -> Result<Self, FwError> {
        const FORMAT: &str = "RLC";
        let common = CommonHeader::parse(blob, FORMAT, MIN_HEADER[0])?;
        common.expect_version(FORMAT, 2, &[0, 1, 2, 3, 4])?;
        let minor = usize::from(common.header_version_minor);
        common.require_header(FORMAT, MIN_HEADER[minor])?;
        let r = |off| u32_at(blob, off, "RLC header");
        // (size, offset) pair at `at` as a file span.
        let region = |at: usize, what| -> Result<Span, FwError> {
            span(blob, r(at + 4)?.into(), r(at)?.into(), what)
        };
        let reg_lists = [
            region(72, "RLC register-list format array")?,
            region(80, "RLC register-list array")?,
            region(88, "RLC separate format array")?,
            region(96, "RLC separate list array")?,
        ];
        let restore_lists = if minor >= 1 {
            let img = |at: usize, what| -> Result<RlcImage, FwError> {
                Ok(RlcImage {
                    span: region(at + 8, what)?,
                    ucode_version: r(at)?,
                    feature_version: r(at + 4)?,
                })
            };
            Some([
                img(108, "RLC restore list CNTL")?,
                img(124, "RLC restore list GPM")?,
                img(140, "RLC restore list SRM")?,
            ])
        } else {
            None
        };
        let iram_dram = if minor >= 2 {
            Some([
                region(156, "RLC IRAM image")?,
                region(164, "RLC DRAM image")?,
            ])
        } else {
            None
        };
        let rlcp_rlcv = if minor >= 3 {
            let img = |at: usize, what| -> Result<RlcImage, FwError> {
                Ok(RlcImage {
                    span: region(at + 8, what)?,
                    ucode_version: r(at)?,
                    feature_version: r(at + 4)?,
                })
            };
            Some([img(172, "RLC_P image")?, img(188, "RLC_V image")?])
        } else {
            None
        };
        let tap_delays = if minor >= 4 {
            Some([
                region(204, "RLC global tap delays")?,
                region(212, "RLC SE0 tap delays")?,
                region(220, "RLC SE1 tap delays")?,
                region(228, "RLC SE2 tap delays")?,
                region(236, "RLC SE3 tap delays")?,
            ])
        } else {
            None
        };
        Ok(Rlc {
            blob,
            common,
            ucode_feature_version: r(32)?,
            reg_lists,
            restore_lists,
            iram_dram,
            rlcp_rlcv,
            tap_delays,
        })
    }

    /// The RLC_G image (the ucode array).
    pub fn rlc_g(&self) -> &'a [u8] {
        self.common.ucode.of(self.blob)
    }

    /// The bytes of a span of this file.
    pub fn bytes(&self, s: Span) -> &'a [u8] {
        s.of(self.blob)
    }
}
