//! [`GpuObj`]: an owned, bounds-checked CPU mapping of one KGSL GPU object (CPU VA == GPU VA).
//!
//! The invariant every method relies on — `va..va+size` is a live read/write mapping that nothing else
//! frees — is established in one place: [`crate::kgsl::alloc_obj`], from a [`KgslIo`] whose `unsafe impl`
//! promises exactly that. The fields are private, so safe code cannot name another address, and the
//! mapping is released only by [`crate::kgsl::free_obj`], which consumes the object. Every access is
//! range-checked and refused with [`KgslError::OutOfRange`], never performed out of bounds.
//!
//! `GpuObj` is `Send` (it owns its mapping) but not `Sync`: its writes take `&self` (the GPU shares the
//! memory anyway), so two threads must not hold it at once.
use core::cell::Cell;
use core::marker::PhantomData;

use super::{KgslError, KgslIo};

/// A mapped GPU object (CPU VA == GPU VA).
#[derive(Debug, PartialEq, Eq)]
pub struct GpuObj {
    id: u32,
    va: u64,
    /// Mapped bytes (page-rounded).
    size: u64,
    _not_sync: PhantomData<Cell<()>>,
}

impl GpuObj {
    /// Wrap a mapping.
    ///
    /// # Safety
    /// `va..va+size` must be a live, readable and writable mapping returned by [`KgslIo::mmap_obj`] for
    /// object `id`, not owned by any other `GpuObj`, and it must stay mapped until this object releases it.
    pub(crate) unsafe fn from_mapping(id: u32, va: u64, size: u64) -> Self {
        GpuObj {
            id,
            va,
            size,
            _not_sync: PhantomData,
        }
    }

    /// The KGSL object id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The GPU address of byte 0 (also its CPU address: KGSL USE_CPU_MAP).
    pub fn gpu_addr(&self) -> u64 {
        self.va
    }

    /// Mapped bytes (page-rounded).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// GPUOBJ_FREE then munmap with `k` (tinygrad's order). Afterwards the object is empty (size 0),
    /// so every later access is refused. A `k` that did not create the mapping refuses to unmap it
    /// (trait contract); it is then leaked, never released while in use.
    pub(crate) fn release<K: KgslIo + ?Sized>(&mut self, k: &mut K) -> Result<(), KgslError> {
        if self.size == 0 {
            return Ok(());
        }
        k.gpuobj_free(self.id)?;
        let size = core::mem::replace(&mut self.size, 0);
        // SAFETY: `va..va+size` is exactly one mapping `mmap_obj` returned (type invariant), and with
        // `size` now 0 no method of this object can reach it again.
        unsafe { k.munmap(self.va, size) }
    }

    /// CPU pointer to byte `off` of a checked `len`-byte range.
    fn at(&self, off: u64, len: usize) -> Result<*mut u8, KgslError> {
        let len = len as u64;
        if off.checked_add(len).is_none_or(|end| end > self.size) {
            return Err(KgslError::OutOfRange {
                offset: off,
                len,
                size: self.size,
            });
        }
        // `va + off` is inside the mapping, so it neither overflows nor leaves the address space.
        Ok((self.va + off) as *mut u8)
    }

    /// Copy `data` into the object at byte `off`.
    pub fn write(&self, off: u64, data: &[u8]) -> Result<(), KgslError> {
        let dst = self.at(off, data.len())?;
        // SAFETY: `dst..dst+len` lies inside the live RW mapping this object owns (checked by `at`;
        // type invariant), which no Rust reference aliases (`data` is host memory, not the mapping).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }

    /// Copy bytes at `off` into `out`.
    pub fn read(&self, off: u64, out: &mut [u8]) -> Result<(), KgslError> {
        let src = self.at(off, out.len())?;
        // SAFETY: as in `write`; the GPU may write concurrently, bytes are plain data.
        unsafe { core::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// A volatile cell over `size_of::<T>()` bytes at `off`. This is RAM shared with the GPU (a KGSL
    /// mapping), not device MMIO, so handing out a reference to it is sound; `volatile_register`
    /// keeps every access volatile because the GPU writes it behind the compiler's back.
    fn cell<T: Copy>(&self, off: u64) -> Result<&volatile_register::RW<T>, KgslError> {
        let size = core::mem::size_of::<T>();
        let p = self.at(off, size)?;
        if !off.is_multiple_of(size as u64) {
            return Err(KgslError::Misaligned { offset: off, size });
        }
        // SAFETY: in-bounds (checked), naturally aligned (the mapping is page-aligned and `off` is a
        // multiple of the size), and the mapping lives as long as `self`, which the returned
        // reference borrows. `RW<T>` is `repr(transparent)` over `VolatileCell<T>`, itself over `T`.
        Ok(unsafe { &*(p as *const volatile_register::RW<T>) })
    }

    /// Volatile read of a u32 the GPU writes (signals, progress).
    pub fn read_u32(&self, off: u64) -> Result<u32, KgslError> {
        Ok(self.cell::<u32>(off)?.read())
    }

    /// Volatile read of a u64 (timestamps).
    pub fn read_u64(&self, off: u64) -> Result<u64, KgslError> {
        Ok(self.cell::<u64>(off)?.read())
    }

    /// Volatile write of a u32 (patching IBs, resetting signals).
    pub fn write_u32(&self, off: u64, v: u32) -> Result<(), KgslError> {
        let cell = self.cell::<u32>(off)?;
        // SAFETY: `RW::write` is unsafe only because writes to device registers can have side
        // effects; this is plain shared RAM inside a live, checked mapping.
        unsafe { cell.write(v) };
        Ok(())
    }

    /// Move `len` bytes inside the object (CPU copy; overlapping ranges allowed).
    pub fn copy_within(&self, dst: u64, src: u64, len: u64) -> Result<(), KgslError> {
        let n = usize::try_from(len).map_err(|_| KgslError::OutOfRange {
            offset: src,
            len,
            size: self.size,
        })?;
        let d = self.at(dst, n)?;
        let s = self.at(src, n)?;
        // SAFETY: both ranges lie inside the live mapping (checked); `copy` handles overlap.
        unsafe { core::ptr::copy(s, d, n) };
        Ok(())
    }
}
