//! Bounds-checked little-endian reads and region checks over a blob, shared by the format parsers.
use super::FwError;

/// A region of a blob: `size` bytes from `offset` (both from the start of the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    pub offset: u32,
    pub size: u32,
}

impl Span {
    /// The region's bytes in `blob` (the parsers only hand out spans they have checked against it).
    pub fn of<'a>(&self, blob: &'a [u8]) -> &'a [u8] {
        let start = self.offset as usize;
        blob.get(start..start.saturating_add(self.size as usize))
            .unwrap_or(&[])
    }

    /// One past the region's last byte.
    pub fn end(&self) -> u64 {
        u64::from(self.offset) + u64::from(self.size)
    }
}

/// `u32` at `off`, or [`FwError::Truncated`] naming `what`.
pub fn u32_at(b: &[u8], off: usize, what: &'static str) -> Result<u32, FwError> {
    let need = off.saturating_add(4);
    match b.get(off..need) {
        Some(s) => Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]])),
        None => Err(FwError::Truncated {
            what,
            need,
            have: b.len(),
        }),
    }
}

/// `N` consecutive `u32`s from `off`, or [`FwError::Truncated`] naming `what`.
pub fn u32s<const N: usize>(b: &[u8], off: usize, what: &'static str) -> Result<[u32; N], FwError> {
    let mut out = [0u32; N];
    for (i, v) in out.iter_mut().enumerate() {
        *v = u32_at(b, off + 4 * i, what)?;
    }
    Ok(out)
}

/// `u16` at `off`, or [`FwError::Truncated`] naming `what`.
pub fn u16_at(b: &[u8], off: usize, what: &'static str) -> Result<u16, FwError> {
    let need = off.saturating_add(2);
    match b.get(off..need) {
        Some(s) => Ok(u16::from_le_bytes([s[0], s[1]])),
        None => Err(FwError::Truncated {
            what,
            need,
            have: b.len(),
        }),
    }
}

/// `offset`/`size` as a [`Span`] checked to lie inside `b`.
pub fn span(b: &[u8], offset: u64, size: u64, what: &'static str) -> Result<Span, FwError> {
    let bad = FwError::Range {
        what,
        offset,
        size,
        file: b.len(),
    };
    match offset.checked_add(size) {
        Some(end) if end <= b.len() as u64 => Ok(Span {
            offset: u32::try_from(offset).map_err(|_| bad)?,
            size: u32::try_from(size).map_err(|_| bad)?,
        }),
        _ => Err(bad),
    }
}
