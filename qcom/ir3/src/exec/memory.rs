//! What a dispatch reads and writes besides registers: [`GpuMemory`] (checked global memory, every access can
//! fault), its thread-shareable read-only view [`SharedMemory`] (for the parallel run), and [`Image`] (a texture
//! or UAV as its descriptor describes it; docs/hw/adreno-kgsl-pm4.md §16.5).

/// GPU memory as the shader sees it. Every access is checked: an address outside the mapped objects is a
/// GPU fault (the error text names the address).
pub trait GpuMemory {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), String>;
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String>;
    /// A read-only view of this memory that several threads may use at once while `self` is borrowed, so the
    /// work groups of a dispatch can run in parallel ([`crate::exec::run_threads`]); `None` (the default) keeps every
    /// dispatch on the calling thread.
    fn shared_view(&self) -> Option<Box<dyn SharedMemory + '_>> {
        None
    }
    /// Whether a store instruction may read the byte range its fibers cover and write it back whole (the same
    /// bytes as fiber-by-fiber stores when nothing else writes in between). Memory that logs writes says no,
    /// so only the bytes actually stored are logged.
    fn span_stores(&self) -> bool {
        true
    }
}

/// A read-only, thread-shareable view of a [`GpuMemory`]: the same bytes and the same error texts.
pub trait SharedMemory: Sync {
    /// What [`GpuMemory::read`] would return.
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String>;
    /// The error [`GpuMemory::write`] would return for `len` bytes at `addr`, without writing.
    fn check_write(&self, addr: u64, len: usize) -> Result<(), String>;
}

/// A 2-D RGBA image as its texture/UAV descriptor describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image {
    pub base: u64,
    pub width: u32,
    pub height: u32,
    /// Bytes per row.
    pub pitch: u32,
    /// RGBA16F (true) or RGBA32F.
    pub half: bool,
}

/// A uniform buffer as its a6xx UBO descriptor describes it (docs/hw/adreno-kgsl-pm4.md §16.12): what `ldc`
/// and `ldc.k` read. Reads past `size_vec4` × 16 bytes are GPU faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ubo {
    pub base: u64,
    /// Size in vec4 (16-byte) units.
    pub size_vec4: u32,
}

impl Ubo {
    /// The two descriptor dwords: dword 0 = address bits 0–31; dword 1 = address bits 32–48 (bits 0–16) and
    /// the size in vec4 units (bits 17–31).
    pub fn from_descriptor(d: [u32; 2]) -> Ubo {
        Ubo {
            base: d[0] as u64 | ((d[1] & 0x1_FFFF) as u64) << 32,
            size_vec4: d[1] >> 17,
        }
    }
}
