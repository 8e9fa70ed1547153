//! Typed errors for bundle parsing, validation and writing.
use core::fmt;

/// Why a byte string is not a valid bundle. Every variant says which rule failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BundleError {
    /// Shorter than the fixed header.
    TooShort { len: usize },
    /// The magic bytes are wrong: not a modelrt bundle.
    BadMagic,
    /// The header's own CRC does not match: the header bytes are damaged.
    HeaderCorrupt,
    /// A major version this reader does not read.
    UnsupportedMajor { found: u16, supported: u16 },
    /// The header length field is not one this reader understands.
    BadHeaderLen(u32),
    /// The file is shorter (truncated) or longer than the header says.
    LengthMismatch { header: u64, actual: u64 },
    /// The body checksum does not match.
    ChecksumMismatch { stored: u32, computed: u32 },
    /// Same version but a different schema hash: produced by an incompatible build.
    SchemaMismatch { stored: u64, expected: u64 },
    /// The header's region layout is inconsistent.
    Layout(&'static str),
    /// The postcard body does not decode.
    BodyDecode,
    /// A table's index or record is corrupt.
    Table { table: &'static str, index: u32 },
    /// A cross-reference or size check failed.
    Invalid { what: &'static str, index: u32 },
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::TooShort { len } => {
                write!(f, "not a bundle: {len} bytes is shorter than the bundle header")
            }
            BundleError::BadMagic => write!(f, "not a modelrt bundle (bad magic)"),
            BundleError::HeaderCorrupt => write!(
                f,
                "bundle header is corrupt (checksum mismatch): the file was damaged in storage or \
                 transfer; copy or download it again"
            ),
            BundleError::UnsupportedMajor { found, supported } => write!(
                f,
                "bundle format version {found}.x is not supported (this modelrt reads {supported}.x \
                 and 1.x)"
            ),
            BundleError::BadHeaderLen(n) => write!(f, "corrupt bundle: header length {n}"),
            BundleError::LengthMismatch { header, actual } if actual < header => write!(
                f,
                "truncated bundle: header says {header} bytes, file has {actual}"
            ),
            BundleError::LengthMismatch { header, actual } => write!(
                f,
                "corrupt bundle: header says {header} bytes, file has {actual}"
            ),
            BundleError::ChecksumMismatch { stored, computed } => write!(
                f,
                "corrupt bundle: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            ),
            BundleError::SchemaMismatch { stored, expected } => write!(
                f,
                "bundle schema hash {stored:#018x} differs from this reader's {expected:#018x}"
            ),
            BundleError::Layout(what) => write!(f, "corrupt bundle: {what}"),
            BundleError::BodyDecode => write!(f, "corrupt bundle: body does not decode"),
            BundleError::Table { table, index } => {
                write!(f, "corrupt bundle: {table} record {index} does not decode")
            }
            BundleError::Invalid { what, index } => {
                write!(f, "invalid bundle: {what} (record {index})")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for BundleError {}
