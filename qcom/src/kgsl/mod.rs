//! The KGSL layer: a small trait over the nine ioctls (plus mmap/munmap) the backend uses, so everything above it
//! runs unchanged against the real driver ([`real::KgslNode`], Linux) or the model (`crate::emu::kgsl`).
pub mod abi;
mod obj;
#[cfg(target_os = "linux")]
pub mod real;

pub use abi::{CommandObject, DevInfo};
pub use obj::GpuObj;

/// A KGSL call failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum KgslError {
    #[error("cannot open {path}: {reason}")]
    Open { path: String, reason: String },
    #[error("KGSL {call} failed: errno {errno} ({reason})")]
    Errno {
        call: &'static str,
        errno: i32,
        reason: String,
    },
    #[error("KGSL timestamp {timestamp} did not retire within {timeout_ms} ms")]
    Timeout { timestamp: u32, timeout_ms: u32 },
    /// The KGSL model rejected a call or a command stream (only from `emu`).
    #[error("KGSL model: {0}")]
    Model(String),
    /// A [`GpuObj`] access outside the object (refused, nothing was read or written).
    #[error("GPU object access {offset:#x}+{len:#x} is outside the {size:#x}-byte object")]
    OutOfRange { offset: u64, len: u64, size: u64 },
    /// A volatile [`GpuObj`] access at an offset that is not a multiple of the access size.
    #[error("GPU object access at {offset:#x} is not aligned to {size} bytes")]
    Misaligned { offset: u64, size: usize },
}

impl KgslError {
    /// The error number, if the kernel returned one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            KgslError::Errno { errno, .. } => Some(*errno),
            _ => None,
        }
    }
}

/// Reply of GPUOBJ_ALLOC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjAlloc {
    pub id: u32,
    pub mmapsize: u64,
}

/// The KGSL ioctl surface. GPU addresses equal CPU addresses of the `mmap`ed objects (USE_CPU_MAP).
///
/// # Safety
/// [`GpuObj`] reads and writes the memory behind the addresses this trait hands out, so an implementation
/// must guarantee:
/// - [`mmap_obj`](Self::mmap_obj) returns the address of a fresh readable and writable mapping of `len`
///   bytes, page-aligned, that nothing else owns, and that stays mapped until it is passed to
///   [`munmap`](Self::munmap) — also after the implementation itself is dropped (a real `mmap` outlives
///   its file descriptor; the model leaks what was not unmapped);
/// - [`munmap`](Self::munmap) releases only a range that is exactly one live mapping this implementation
///   created, and refuses any other range with an error (so an object freed through the wrong
///   implementation is leaked, never unmapped under someone else).
pub unsafe trait KgslIo {
    /// DEVICE_GETPROPERTY(KGSL_PROP_DEVICE_INFO).
    fn device_info(&mut self) -> Result<DevInfo, KgslError>;
    /// SETPROPERTY(KGSL_PROP_PWR_CONSTRAINT, {PWRLEVEL, ctx, → PWR_MAX}).
    fn set_power_max(&mut self, ctx: u32) -> Result<(), KgslError>;
    /// DRAWCTXT_CREATE; returns the context id.
    fn drawctxt_create(&mut self, flags: u32) -> Result<u32, KgslError>;
    /// GPUOBJ_ALLOC with `flags`, size and mmapsize = `size` (already page-rounded).
    fn gpuobj_alloc(&mut self, size: u64, flags: u64) -> Result<ObjAlloc, KgslError>;
    /// `mmap(NULL, len, RW, SHARED, fd, id << 12)`; the returned address is also the GPU VA.
    fn mmap_obj(&mut self, id: u32, len: u64) -> Result<u64, KgslError>;
    /// GPUOBJ_FREE(id).
    fn gpuobj_free(&mut self, id: u32) -> Result<(), KgslError>;
    /// `munmap(va, len)` of a mapping returned by [`KgslIo::mmap_obj`].
    ///
    /// # Safety
    /// `va..va+len` must be exactly one mapping returned by `mmap_obj`, and nothing may access it
    /// afterwards (use [`free_obj`], which consumes the owning [`GpuObj`]).
    unsafe fn munmap(&mut self, va: u64, len: u64) -> Result<(), KgslError>;
    /// MAP_USER_MEM(hostptr, len, memtype ADDR); returns the GPU address.
    ///
    /// # Safety
    /// The GPU may read and write `hostptr..hostptr+len` until [`sharedmem_free`](Self::sharedmem_free):
    /// the range must be memory of this process that the caller owns for that long and that no Rust
    /// reference reads or writes while the GPU may.
    unsafe fn map_user_mem(&mut self, hostptr: u64, len: u64) -> Result<u64, KgslError>;
    /// SHAREDMEM_FREE(gpuaddr).
    fn sharedmem_free(&mut self, gpuaddr: u64) -> Result<(), KgslError>;
    /// GPU_COMMAND with the given IBs; returns the context timestamp of the submission.
    fn gpu_command(&mut self, ctx: u32, ibs: &[CommandObject]) -> Result<u32, KgslError>;
    /// DEVICE_WAITTIMESTAMP_CTXTID; [`KgslError::Timeout`] when it does not retire in time.
    fn wait_timestamp(
        &mut self,
        ctx: u32,
        timestamp: u32,
        timeout_ms: u32,
    ) -> Result<(), KgslError>;
    /// Name the shader code loaded at `gpuaddr`, for diagnostics (the KGSL model's interpreter errors name
    /// the kernel); a real node ignores it.
    fn label_shader(&mut self, _gpuaddr: u64, _name: &str) {}
}

/// Allocate and map one object the way tinygrad's `_gpu_alloc` does (size rounded to 4 KiB, flags 0x100C0000).
pub fn alloc_obj<K: KgslIo + ?Sized>(k: &mut K, size: u64) -> Result<GpuObj, KgslError> {
    let bosz = size
        .max(1)
        .checked_next_multiple_of(abi::PAGE)
        .ok_or(KgslError::OutOfRange {
            offset: 0,
            len: size,
            size: u64::MAX,
        })?;
    let a = k.gpuobj_alloc(bosz, abi::ALLOC_FLAGS)?;
    match k.mmap_obj(a.id, bosz) {
        // SAFETY: `va` is a fresh `bosz`-byte RW mapping of object `a.id` that stays mapped until
        // munmap (the `unsafe impl KgslIo` contract); the new `GpuObj` is its only owner.
        Ok(va) => Ok(unsafe { GpuObj::from_mapping(a.id, va, bosz) }),
        Err(e) => {
            let _ = k.gpuobj_free(a.id);
            Err(e)
        }
    }
}

/// GPUOBJ_FREE then munmap (tinygrad's order). `k` should be the implementation `obj` was allocated
/// with: any other refuses the mapping it did not make (trait contract), and the object — consumed
/// either way — is then leaked, never unmapped under its owner.
pub fn free_obj<K: KgslIo + ?Sized>(k: &mut K, mut obj: GpuObj) -> Result<(), KgslError> {
    obj.release(k)
}
