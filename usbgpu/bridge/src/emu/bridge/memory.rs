//! Plain-memory BAR models for the bridge emulator: [`SparseMemory`] backs VRAM-sized BARs (4 KiB
//! pages allocated on first write; unwritten memory reads 0) and plain register files without side
//! effects (the default BAR2/BAR5 until a device model such as Navi31's is plugged in).
use super::super::RegisterModel;
use std::collections::HashMap;

const PAGE: u64 = 4096;

/// Sparse byte-addressable memory exposed as a [`RegisterModel`].
pub struct SparseMemory {
    size: u64,
    pages: HashMap<u64, Box<[u8; PAGE as usize]>>,
}

impl SparseMemory {
    /// `size` bytes, all zero.
    pub fn new(size: u64) -> Self {
        SparseMemory {
            size,
            pages: HashMap::new(),
        }
    }

    /// Bytes actually allocated (for tests/diagnostics).
    pub fn resident_bytes(&self) -> u64 {
        self.pages.len() as u64 * PAGE
    }
}

impl RegisterModel for SparseMemory {
    fn size(&self) -> u64 {
        self.size
    }

    fn read32(&mut self, offset: u64) -> u32 {
        let o = (offset % PAGE) as usize;
        self.pages.get(&(offset / PAGE)).map_or(0, |p| {
            u32::from_le_bytes([p[o], p[o + 1], p[o + 2], p[o + 3]])
        })
    }

    fn write32(&mut self, offset: u64, value: u32) {
        if offset + 4 > self.size {
            return;
        }
        let o = (offset % PAGE) as usize;
        let page = self
            .pages
            .entry(offset / PAGE)
            .or_insert_with(|| Box::new([0u8; PAGE as usize]));
        page[o..o + 4].copy_from_slice(&value.to_le_bytes());
    }
}
