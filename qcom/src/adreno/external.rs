//! Zero-copy inputs: external GPU buffers (user memory imported with MAP_USER_MEM, or GPU addresses from
//! elsewhere) that stand in for an arena range of a recorded queue. Binding rewrites only the pointers and
//! descriptor bases in the queue's args regions; unbinding restores the arena addresses.
use super::{AdrenoDevice, AdrenoError, AdrenoQueue};
use crate::kgsl::KgslIo;
use std::rc::Rc;

/// An external GPU buffer that can stand in for an arena range (see [`AdrenoDevice::bind_external`]).
///
/// Only the `unsafe` constructors ([`ExternalBuffer::from_gpu_addr`], [`AdrenoDevice::import_user_memory`])
/// make one, and its fields are private, so the range a bound queue makes the GPU access is always one
/// a caller vouched for. It is neither `Clone` nor `Copy`: [`AdrenoDevice::release_external`] consumes it.
#[derive(Debug, PartialEq, Eq)]
pub struct ExternalBuffer {
    gpuaddr: u64,
    len: u64,
    /// MAP_USER_MEM mapping to release with [`AdrenoDevice::release_external`] (None for raw GPU addresses).
    user_map: Option<u64>,
}

impl ExternalBuffer {
    /// Use a GPU address that is already mapped in this process's GPU address space (e.g. from another KGSL
    /// allocation or OpenCL interop). `None` if `gpuaddr + len` overflows.
    ///
    /// # Safety
    /// `gpuaddr..gpuaddr+len` must be GPU-mapped memory that the GPU may read and write, valid for as long
    /// as any queue has it bound (until [`AdrenoDevice::unbind_external`]), and that no Rust reference
    /// reads or writes while a bound queue runs.
    pub unsafe fn from_gpu_addr(gpuaddr: u64, len: u64) -> Option<Self> {
        gpuaddr.checked_add(len)?;
        Some(ExternalBuffer {
            gpuaddr,
            len,
            user_map: None,
        })
    }

    /// GPU address of the first byte.
    pub fn gpu_addr(&self) -> u64 {
        self.gpuaddr
    }

    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True if the buffer is a MAP_USER_MEM import (released with SHAREDMEM_FREE).
    pub fn is_user_mapping(&self) -> bool {
        self.user_map.is_some()
    }
}

impl<K: KgslIo> AdrenoDevice<K> {
    /// Import `len` bytes of CPU memory at `ptr` (MAP_USER_MEM, page-aligned as tinygrad does). On aarch64 the
    /// CPU data cache is cleaned for the range first (`dc cvac` + `dsb sy`). If KGSL answers EFAULT the pointer
    /// is taken to already be a GPU address (tinygrad's OpenCL-interop rule).
    ///
    /// # Safety
    /// `ptr..ptr+len` must be memory of this process (or, for the EFAULT rule, a GPU address as in
    /// [`ExternalBuffer::from_gpu_addr`]) that the caller owns until the buffer is unbound from every queue
    /// and released with [`AdrenoDevice::release_external`]; the GPU may read and write it meanwhile, so no
    /// Rust reference may read or write it while a bound queue runs.
    pub unsafe fn import_user_memory(
        &mut self,
        ptr: u64,
        len: u64,
    ) -> Result<ExternalBuffer, AdrenoError> {
        let base = ptr & !0xFFF;
        let mapped = len
            .checked_add(ptr & 0xFFF)
            .and_then(|n| n.checked_next_multiple_of(0x1000))
            .filter(|_| ptr.checked_add(len).is_some())
            .ok_or(AdrenoError::BadExternal { ptr, len })?;
        // SAFETY: `ptr..ptr+len` is mapped memory of this process (this function's contract).
        unsafe { clean_dcache(ptr, len) };
        // SAFETY: the page-rounded range covers only pages of the caller's buffer, which the caller
        // lends to the GPU until `release_external` (this function's contract).
        let r = unsafe { self.sh.borrow_mut().k.map_user_mem(base, mapped) };
        match r {
            Ok(gpuaddr) => Ok(ExternalBuffer {
                gpuaddr: gpuaddr
                    .checked_add(ptr - base)
                    .ok_or(AdrenoError::BadExternal { ptr, len })?,
                len,
                user_map: Some(gpuaddr),
            }),
            Err(e) if e.errno() == Some(14) => {
                // SAFETY: the caller vouched for `ptr..ptr+len` as a GPU address under this rule.
                unsafe { ExternalBuffer::from_gpu_addr(ptr, len) }
                    .ok_or(AdrenoError::BadExternal { ptr, len })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Release a buffer from [`AdrenoDevice::import_user_memory`] (SHAREDMEM_FREE). Unbind it first.
    pub fn release_external(&mut self, buf: ExternalBuffer) -> Result<(), AdrenoError> {
        if let Some(g) = buf.user_map {
            self.sh.borrow_mut().k.sharedmem_free(g)?;
        }
        Ok(())
    }

    /// Point every argument of `queue` that lies in arena range `[arena_offset, arena_offset + buf.len)` at the
    /// corresponding bytes of `buf` instead (zero copy). Returns how many argument slots were rewritten.
    pub fn bind_external(
        &mut self,
        queue: &mut AdrenoQueue<K>,
        arena_offset: u64,
        buf: &ExternalBuffer,
    ) -> Result<usize, AdrenoError> {
        self.rebind(queue, arena_offset, buf.len, Some(buf.gpuaddr))
    }

    /// Undo [`AdrenoDevice::bind_external`] for the arena range.
    pub fn unbind_external(
        &mut self,
        queue: &mut AdrenoQueue<K>,
        arena_offset: u64,
        len: u64,
    ) -> Result<usize, AdrenoError> {
        self.rebind(queue, arena_offset, len, None)
    }

    fn rebind(
        &mut self,
        q: &mut AdrenoQueue<K>,
        off: u64,
        len: u64,
        to: Option<u64>,
    ) -> Result<usize, AdrenoError> {
        if !Rc::ptr_eq(&self.sh, &q.sh) {
            return Err(AdrenoError::ForeignQueue);
        }
        let s = self.sh.borrow();
        let arena = s.arena_range(off, len)?;
        let mut n = 0;
        for r in q
            .arg_refs
            .iter()
            .filter(|r| r.arena_off >= off && r.arena_off - off < len)
        {
            let addr = match to {
                // In range: `r.arena_off - off < len` and `g + len` does not overflow (constructors).
                Some(g) => g + (r.arena_off - off),
                None => arena.gpu_addr() + r.arena_off,
            };
            let mut b = [0u8; 8];
            r.kind.write(&mut b, 0, addr);
            q.args_chunks[r.chunk as usize].write(r.at, &b)?;
            n += 1;
        }
        Ok(n)
    }
}

/// Clean the CPU data cache over `[ptr, ptr+len)` so the GPU sees CPU writes (aarch64 only; docs/hw/adreno-kgsl-pm4.md §4.3).
///
/// # Safety
/// `ptr..ptr+len` must be mapped memory of this process (`dc cvac` faults on unmapped addresses), and
/// `ptr + len` must not overflow.
unsafe fn clean_dcache(ptr: u64, len: u64) {
    #[cfg(target_arch = "aarch64")]
    {
        let mut line = ptr & !63;
        while line < ptr + len {
            // SAFETY: `dc cvac` only cleans the cache line containing `line`; it does not write memory contents
            // and faults only for unmapped addresses, which the caller's buffer is not (fn contract).
            unsafe { core::arch::asm!("dc cvac, {0}", in(reg) line, options(nostack)) };
            line += 64;
        }
        // SAFETY: a full-system data synchronisation barrier has no memory-safety effect.
        unsafe { core::arch::asm!("dsb sy", options(nostack)) };
    }
    #[cfg(not(target_arch = "aarch64"))]
    let _ = (ptr, len);
}
