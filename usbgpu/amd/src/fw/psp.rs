//! PSP bundles, header v2.x (Linux `psp_firmware_header_v2_0/_v2_1`, `ta_firmware_header_v2_0`): a
//! count of 16-byte descriptors {fw_type, fw_version, offset, size}, offsets counted from the start of
//! the ucode array. `psp_13_0_0_sos.bin` holds the PSP's own components (sys drv, sOS, TOC, KDB, SPL,
//! …); `psp_13_0_0_ta.bin` uses the same layout for trusted applications.
use super::bytes::{span, u32_at, u32s, Span};
use super::common::CommonHeader;
use super::FwError;

/// Most descriptors a bundle may declare (Linux knows 11 sOS component types).
pub const MAX_DESCRIPTORS: u32 = 32;
const DESC_BYTES: usize = 16;

/// The sOS bundle's component types (Linux `enum psp_fw_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PspComponent {
    Sos,
    SysDrv,
    Kdb,
    Toc,
    Spl,
    Rl,
    SocDrv,
    IntfDrv,
    DbgDrv,
    RasDrv,
    IpKeyMgrDrv,
    /// A type this table does not name.
    Other(u32),
}

impl PspComponent {
    /// The component a descriptor's `fw_type` names.
    pub fn from_type(t: u32) -> Self {
        match t {
            1 => Self::Sos,
            2 => Self::SysDrv,
            3 => Self::Kdb,
            4 => Self::Toc,
            5 => Self::Spl,
            6 => Self::Rl,
            7 => Self::SocDrv,
            8 => Self::IntfDrv,
            9 => Self::DbgDrv,
            10 => Self::RasDrv,
            11 => Self::IpKeyMgrDrv,
            other => Self::Other(other),
        }
    }
}

/// One component of a bundle; `span` is from the start of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PspDescriptor {
    pub fw_type: u32,
    pub fw_version: u32,
    pub span: Span,
}

/// A checked PSP v2.x bundle.
#[derive(Clone, Copy, Debug)]
pub struct PspBundle<'a> {
    blob: &'a [u8],
    pub common: CommonHeader,
    count: u32,
    table: usize,
}

impl<'a> PspBundle<'a> {
    /// Parse a bundle (sOS or TA); every descriptor must lie inside the ucode array.
    pub fn parse(blob: &'a [u8]) -> Result<Self, FwError> {
        const FORMAT: &str = "PSP bundle";
        let common = CommonHeader::parse(blob, FORMAT, 36)?;
        common.expect_version(FORMAT, 2, &[0, 1])?;
        let count = u32_at(blob, 32, "psp_fw_bin_count")?;
        if count == 0 || count > MAX_DESCRIPTORS {
            return Err(FwError::Count {
                what: "PSP descriptor",
                count,
                max: MAX_DESCRIPTORS,
            });
        }
        // v2.1 inserts psp_aux_fw_bin_index before the table.
        let table = if common.header_version_minor == 0 {
            36
        } else {
            40
        };
        let bundle = PspBundle {
            blob,
            common,
            count,
            table,
        };
        for i in 0..count as usize {
            bundle.read(i)?;
        }
        Ok(bundle)
    }

    fn read(&self, i: usize) -> Result<PspDescriptor, FwError> {
        let at = self.table + i * DESC_BYTES;
        let [fw_type, fw_version, offset, size] = u32s(self.blob, at, "PSP descriptor")?;
        let array = self.common.ucode;
        // Inside the ucode array, then as a file span.
        span(
            array.of(self.blob),
            offset.into(),
            size.into(),
            "PSP component",
        )?;
        let span = span(
            self.blob,
            u64::from(array.offset) + u64::from(offset),
            size.into(),
            "PSP component",
        )?;
        Ok(PspDescriptor {
            fw_type,
            fw_version,
            span,
        })
    }

    /// Number of descriptors.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the bundle has no descriptors (never true for a parsed bundle).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The descriptors in file order.
    pub fn descriptors(&self) -> impl Iterator<Item = PspDescriptor> + '_ {
        (0..self.len()).filter_map(|i| self.read(i).ok())
    }

    /// The first descriptor of sOS component `c`.
    pub fn component(&self, c: PspComponent) -> Option<PspDescriptor> {
        self.descriptors()
            .find(|d| PspComponent::from_type(d.fw_type) == c)
    }

    /// The bytes of descriptor `d`.
    pub fn bytes(&self, d: &PspDescriptor) -> &'a [u8] {
        d.span.of(self.blob)
    }
}
