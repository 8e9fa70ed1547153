//! The one error type of the firmware header parsers: what was wrong with a blob, in one line.
//! A caller that knows the file name prints `<file>: <error>` (see [`super::Named`]).
use core::fmt;

/// Why a firmware blob was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FwError {
    /// The blob ends before a header field (`need` bytes needed, `have` present).
    Truncated {
        what: &'static str,
        need: usize,
        have: usize,
    },
    /// The common header's `size_bytes` disagrees with the blob's length.
    SizeMismatch { header: u32, file: usize },
    /// `header_size_bytes` is smaller than the format's header or larger than the blob.
    HeaderSize {
        format: &'static str,
        header: u32,
        min: usize,
        file: usize,
    },
    /// The header version is not one this format knows.
    Version {
        format: &'static str,
        major: u16,
        minor: u16,
    },
    /// A region (`offset`, `size`) does not lie inside the blob.
    Range {
        what: &'static str,
        offset: u64,
        size: u64,
        file: usize,
    },
    /// A descriptor count is out of bounds.
    Count {
        what: &'static str,
        count: u32,
        max: u32,
    },
    /// A required component is absent.
    Missing { what: &'static str },
}

impl fmt::Display for FwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FwError::Truncated { what, need, have } => {
                write!(
                    f,
                    "truncated: {what} needs {need} bytes, the file has {have}"
                )
            }
            FwError::SizeMismatch { header, file } => {
                write!(f, "header says {header} bytes, the file has {file}")
            }
            FwError::HeaderSize {
                format,
                header,
                min,
                file,
            } => write!(
                f,
                "{format} header_size_bytes {header} is not within {min}..={file}"
            ),
            FwError::Version {
                format,
                major,
                minor,
            } => {
                write!(
                    f,
                    "{format} header version {major}.{minor} is not supported"
                )
            }
            FwError::Range {
                what,
                offset,
                size,
                file,
            } => write!(
                f,
                "{what} at offset {offset:#x} size {size:#x} lies outside the {file}-byte file"
            ),
            FwError::Count { what, count, max } => {
                write!(f, "{what} count {count} exceeds {max}")
            }
            FwError::Missing { what } => write!(f, "no {what} in the file"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for FwError {}

/// A [`FwError`] with the name of the file it came from: `"<file>: <error>"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named<'a> {
    pub file: &'a str,
    pub error: FwError,
}

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.error)
    }
}
