//! [`Inline`]: small uploads held back until the next submission and written by the compute queue
//! itself — `WRITE_DATA` packets in front of the `INDIRECT_BUFFER` in that submission's ring write —
//! so a step's small inputs cost no USB transfer of their own (docs/hw/amd-driver.md §5.2).
//!
//! Only whole dwords at dword-aligned VRAM addresses are held, up to [`MAX_DWORDS`] data dwords in
//! at most [`MAX_FRAGMENTS`] ranges; anything else is written at once (after the held ones, so the
//! order of uploads is kept). The buffers are allocated once; holding and encoding never allocate.
use super::bus::GpuBus;
use super::error::AmdError;
use super::mem::VA_BASE;
use super::pm4;
use modelrt_hal::usb::UsbTransport;

/// Data dwords one submission carries inline (3 KiB).
pub const MAX_DWORDS: usize = 768;
/// Separate ranges one submission carries inline.
pub const MAX_FRAGMENTS: usize = 16;
/// Largest ring image of one submission: the inline writes (every fragment may split once more at
/// [`pm4::WRITE_DATA_MAX`]) plus INDIRECT_BUFFER and RELEASE_MEM. It stays below 1024 dwords, one
/// BAR0 stream of the ring writer.
pub const RING_DWORDS_MAX: usize = MAX_DWORDS
    + 4 * (MAX_FRAGMENTS + MAX_DWORDS / pm4::WRITE_DATA_MAX + 1)
    + pm4::INDIRECT_BUFFER_DWORDS
    + pm4::RELEASE_MEM_DWORDS;
const _: () = assert!(RING_DWORDS_MAX <= 1024);

/// One held range: VRAM physical address and its dwords in [`Inline::data`].
#[derive(Clone, Copy, Debug)]
struct Fragment {
    paddr: u64,
    start: usize,
    len: usize,
}

/// The held-back uploads.
#[derive(Debug)]
pub struct Inline {
    data: Vec<u32>,
    frags: Vec<Fragment>,
}

impl Default for Inline {
    fn default() -> Self {
        Self::new()
    }
}

impl Inline {
    /// Empty, with the fixed capacity allocated.
    pub fn new() -> Inline {
        Inline {
            data: Vec::with_capacity(MAX_DWORDS),
            frags: Vec::with_capacity(MAX_FRAGMENTS),
        }
    }

    /// Nothing held.
    pub fn is_empty(&self) -> bool {
        self.frags.is_empty()
    }

    /// Hold `bytes` for VRAM physical address `paddr` if it fits the rules above; `false` means
    /// the caller must write it now.
    pub fn hold(&mut self, paddr: u64, bytes: &[u8]) -> bool {
        let n = bytes.len() / 4;
        if bytes.is_empty()
            || !bytes.len().is_multiple_of(4)
            || !paddr.is_multiple_of(4)
            || self.data.len() + n > MAX_DWORDS
            || self.frags.len() == MAX_FRAGMENTS
        {
            return false;
        }
        let start = self.data.len();
        for w in bytes.chunks_exact(4) {
            self.data.push(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
        self.frags.push(Fragment {
            paddr,
            start,
            len: n,
        });
        true
    }

    /// Append the `WRITE_DATA` packets of everything held to `ring` (identity-mapped VAs).
    pub fn encode(&self, ring: &mut Vec<u32>) {
        for f in &self.frags {
            pm4::write_data_mem(
                ring,
                VA_BASE + f.paddr,
                &self.data[f.start..f.start + f.len],
            );
        }
    }

    /// Write everything held through BAR0 (one stream per range) — when something other than a
    /// submission comes first.
    pub fn flush<T: UsbTransport>(
        &self,
        bus: &mut GpuBus<T>,
        step: &'static str,
    ) -> Result<(), AmdError> {
        for f in &self.frags {
            bus.vram_write_dwords(step, f.paddr, &self.data[f.start..f.start + f.len])?;
        }
        Ok(())
    }

    /// Forget everything held.
    pub fn clear(&mut self) {
        self.data.clear();
        self.frags.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_aligned_dwords_within_budget_and_encodes_write_data() {
        let mut i = Inline::new();
        assert!(!i.hold(0x1002, &[0; 4]), "unaligned address");
        assert!(!i.hold(0x1000, &[0; 6]), "partial dword");
        assert!(!i.hold(0x1000, &[]), "empty");
        assert!(i.hold(0x1000, &[1, 0, 0, 0, 2, 0, 0, 0]));
        assert!(i.hold(0x8000, &[3, 0, 0, 0]));
        assert!(!i.hold(0x9000, &vec![0; 4 * MAX_DWORDS]), "over budget");
        let mut ring = Vec::new();
        i.encode(&mut ring);
        // header(WRITE_DATA, 3 + n), control, VA lo/hi, data — docs/hw/amd-gpu.md §7.1.
        let va = VA_BASE + 0x1000;
        let va2 = VA_BASE + 0x8000;
        assert_eq!(
            ring,
            [
                0xC004_3700,
                pm4::WRITE_DATA_MEM,
                va as u32,
                (va >> 32) as u32,
                1,
                2,
                0xC003_3700,
                pm4::WRITE_DATA_MEM,
                va2 as u32,
                (va2 >> 32) as u32,
                3
            ]
        );
        i.clear();
        assert!(i.is_empty());
        for k in 0..MAX_FRAGMENTS {
            assert!(i.hold(0x100 * k as u64, &[0; 4]));
        }
        assert!(!i.hold(0x10_0000, &[0; 4]), "fragment limit");
    }
}
