//! A flat GPU address space for driving the interpreter without the GPU model: a few mapped
//! regions with unmapped holes between them, so a wild shader address is a fault, as through the
//! GPU's page tables.
use modelrt_rdna3::shader::{GpuMemory, MemFault};

/// Mapped regions `(base, bytes)`; everything else faults.
#[derive(Default)]
pub struct FlatMemory {
    pub regions: Vec<(u64, Vec<u8>)>,
    pub reads: u64,
    pub writes: u64,
}

impl FlatMemory {
    /// Map `size` zero bytes at `base`.
    pub fn map(&mut self, base: u64, size: usize) {
        self.regions.push((base, vec![0; size]));
    }

    fn find(&mut self, va: u64, len: usize) -> Option<&mut [u8]> {
        self.regions.iter_mut().find_map(|(base, bytes)| {
            let off = va.checked_sub(*base)? as usize;
            let end = off.checked_add(len)?;
            (end <= bytes.len()).then(|| &mut bytes[off..end])
        })
    }

    /// Host-side copy in (panics on an unmapped range: a harness bug).
    pub fn put(&mut self, va: u64, data: &[u8]) {
        self.find(va, data.len())
            .unwrap_or_else(|| panic!("harness wrote unmapped {va:#x}"))
            .copy_from_slice(data);
    }

    /// Host-side copy out.
    pub fn get(&mut self, va: u64, len: usize) -> Vec<u8> {
        self.find(va, len)
            .unwrap_or_else(|| panic!("harness read unmapped {va:#x}"))
            .to_vec()
    }
}

impl GpuMemory for FlatMemory {
    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), MemFault> {
        self.reads += 1;
        let src = self
            .find(va, out.len())
            .ok_or(MemFault { va, write: false })?;
        out.copy_from_slice(src);
        Ok(())
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        self.writes += 1;
        let dst = self
            .find(va, data.len())
            .ok_or(MemFault { va, write: true })?;
        dst.copy_from_slice(data);
        Ok(())
    }
}
