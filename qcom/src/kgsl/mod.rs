//! The KGSL layer: a small trait over the nine ioctls (plus mmap/munmap) the backend uses, so everything above it
//! runs unchanged against the real driver ([`real::KgslNode`], Linux) or the model (`crate::emu::kgsl`).
pub mod abi;
#[cfg(target_os = "linux")]
pub mod real;

pub use abi::{CommandObject, DevInfo};

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
pub trait KgslIo {
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
    fn munmap(&mut self, va: u64, len: u64) -> Result<(), KgslError>;
    /// MAP_USER_MEM(hostptr, len, memtype ADDR); returns the GPU address.
    fn map_user_mem(&mut self, hostptr: u64, len: u64) -> Result<u64, KgslError>;
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
}

/// A mapped GPU object (CPU VA == GPU VA).
#[derive(Debug, PartialEq, Eq)]
pub struct GpuObj {
    pub id: u32,
    pub va: u64,
    /// Mapped bytes (page-rounded).
    pub size: u64,
}

impl GpuObj {
    fn check(&self, off: u64, len: usize) {
        assert!(
            off.checked_add(len as u64)
                .is_some_and(|end| end <= self.size),
            "GpuObj access out of bounds"
        );
    }

    /// Copy `data` into the object at byte `off`.
    ///
    /// Panics if the range is outside the object (callers bound-check first; this is an internal invariant).
    pub fn write(&self, off: u64, data: &[u8]) {
        self.check(off, data.len());
        // SAFETY: `va..va+size` is a live RW mapping owned by this object (mmap_obj succeeded and it is only
        // unmapped when the object is freed, which consumes it); the range was checked above.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), (self.va + off) as *mut u8, data.len())
        }
    }

    /// Copy bytes at `off` into `out`. Panics on an out-of-range access (internal invariant).
    pub fn read(&self, off: u64, out: &mut [u8]) {
        self.check(off, out.len());
        // SAFETY: as in `write`; the GPU may write concurrently, bytes are plain data.
        unsafe {
            core::ptr::copy_nonoverlapping(
                (self.va + off) as *const u8,
                out.as_mut_ptr(),
                out.len(),
            )
        }
    }

    /// A volatile cell over `size_of::<T>()` bytes at `off`. This is RAM shared with the GPU (a KGSL
    /// mapping), not device MMIO, so handing out a reference to it is sound; `volatile_register`
    /// keeps every access volatile because the GPU writes it behind the compiler's back.
    fn cell<T: Copy>(&self, off: u64) -> &volatile_register::RW<T> {
        let size = core::mem::size_of::<T>();
        self.check(off, size);
        assert!(off.is_multiple_of(size as u64), "unaligned GpuObj cell");
        // SAFETY: in-bounds (checked), naturally aligned (the mapping is page-aligned and `off` is a
        // multiple of the size), and the mapping lives as long as `self`, which the returned
        // reference borrows. `RW<T>` is `repr(transparent)` over `VolatileCell<T>`, itself over `T`.
        unsafe { &*((self.va + off) as *const volatile_register::RW<T>) }
    }

    /// Volatile read of a u32 the GPU writes (signals, progress).
    pub fn read_u32(&self, off: u64) -> u32 {
        self.cell::<u32>(off).read()
    }

    /// Volatile read of a u64 (timestamps).
    pub fn read_u64(&self, off: u64) -> u64 {
        self.cell::<u64>(off).read()
    }

    /// Volatile write of a u32 (patching IBs, resetting signals).
    pub fn write_u32(&self, off: u64, v: u32) {
        // SAFETY: `RW::write` is unsafe only because writes to device registers can have side
        // effects; this is plain shared RAM inside a live, checked mapping.
        unsafe { self.cell::<u32>(off).write(v) }
    }

    /// Move `len` bytes inside the object (CPU copy; overlapping ranges allowed).
    pub fn copy_within(&self, dst: u64, src: u64, len: u64) {
        self.check(dst, len as usize);
        self.check(src, len as usize);
        // SAFETY: both ranges in-bounds of the live mapping; `copy` handles overlap.
        unsafe {
            core::ptr::copy(
                (self.va + src) as *const u8,
                (self.va + dst) as *mut u8,
                len as usize,
            )
        }
    }
}

/// Allocate and map one object the way tinygrad's `_gpu_alloc` does (size rounded to 4 KiB, flags 0x100C0000).
pub fn alloc_obj<K: KgslIo + ?Sized>(k: &mut K, size: u64) -> Result<GpuObj, KgslError> {
    let bosz = size.max(1).div_ceil(abi::PAGE) * abi::PAGE;
    let a = k.gpuobj_alloc(bosz, abi::ALLOC_FLAGS)?;
    match k.mmap_obj(a.id, bosz) {
        Ok(va) => Ok(GpuObj {
            id: a.id,
            va,
            size: bosz,
        }),
        Err(e) => {
            let _ = k.gpuobj_free(a.id);
            Err(e)
        }
    }
}

/// GPUOBJ_FREE then munmap (tinygrad's order).
pub fn free_obj<K: KgslIo + ?Sized>(k: &mut K, obj: GpuObj) -> Result<(), KgslError> {
    k.gpuobj_free(obj.id)?;
    k.munmap(obj.va, obj.size)
}
