//! Sparse VRAM: 64 KiB pages allocated on first write, unwritten bytes read 0 (docs/hw/amd-gpu.md §3).
use std::collections::HashMap;

const PAGE: u64 = 64 << 10;

/// Byte-addressable sparse memory of a fixed size.
pub struct Vram {
    size: u64,
    pages: HashMap<u64, Box<[u8]>>,
}

impl Vram {
    /// `size` bytes of zeroed VRAM.
    pub fn new(size: u64) -> Self {
        Vram {
            size,
            pages: HashMap::new(),
        }
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether `[addr, addr + len)` lies inside VRAM.
    pub fn contains(&self, addr: u64, len: usize) -> bool {
        addr.checked_add(len as u64)
            .is_some_and(|end| end <= self.size)
    }

    /// Read bytes; the caller checked the range with [`Vram::contains`] (bytes outside read 0).
    pub fn read(&self, addr: u64, out: &mut [u8]) {
        let mut done = 0usize;
        while done < out.len() {
            let a = addr + done as u64;
            let o = (a % PAGE) as usize;
            let n = (PAGE as usize - o).min(out.len() - done);
            match self.pages.get(&(a / PAGE)) {
                Some(p) => out[done..done + n].copy_from_slice(&p[o..o + n]),
                None => out[done..done + n].fill(0),
            }
            done += n;
        }
    }

    /// Write bytes; parts outside VRAM are dropped.
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let o = (a % PAGE) as usize;
            let n = (PAGE as usize - o).min(data.len() - done);
            if a + n as u64 <= self.size {
                let page = self
                    .pages
                    .entry(a / PAGE)
                    .or_insert_with(|| vec![0u8; PAGE as usize].into_boxed_slice());
                page[o..o + n].copy_from_slice(&data[done..done + n]);
            }
            done += n;
        }
    }

    /// Little-endian dword at `addr`.
    pub fn read32(&self, addr: u64) -> u32 {
        let mut b = [0u8; 4];
        self.read(addr, &mut b);
        u32::from_le_bytes(b)
    }

    /// Store a little-endian dword at `addr`.
    pub fn write32(&mut self, addr: u64, value: u32) {
        self.write(addr, &value.to_le_bytes());
    }
}
