//! Page-aligned anonymous memory mappings: the zeroed arena and W^X kernel code pages.
use std::ptr::NonNull;

use super::error::CpuError;

/// An anonymous private mapping, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain process memory owned by this value; moving the owner between threads
// is fine. Shared access only hands out the base pointer; users synchronise their own accesses.
unsafe impl Send for Mapping {}
// SAFETY: `&Mapping` only exposes the address and length; see above.
unsafe impl Sync for Mapping {}

fn os_error(op: &'static str) -> CpuError {
    CpuError::Os {
        op,
        errno: std::io::Error::last_os_error().kind(),
    }
}

impl Mapping {
    /// Map `len` bytes (rounded up to whole pages, at least one) of zeroed read-write memory.
    pub fn new_rw(len: usize) -> Result<Mapping, CpuError> {
        let len = len
            .max(1)
            .checked_next_multiple_of(page_size())
            .ok_or(CpuError::ArenaTooLarge(len as u64))?;
        // SAFETY: an anonymous private mapping with a null hint has no preconditions; the result is
        // checked against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(|| os_error("mmap"))?;
        Ok(Mapping { ptr, len })
    }

    /// Base address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Mapped length in bytes (whole pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: mappings are at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of the mapping the OS holds resident right now (whole pages, `mincore`), `None` if
    /// the query fails. Untouched pages of an anonymous mapping are not resident.
    pub fn resident_bytes(&self) -> Option<u64> {
        let page = page_size();
        let mut vec = vec![0u8; self.len.div_ceil(page)];
        // SAFETY: `ptr..ptr+len` is this live, page-aligned mapping; `vec` has one byte per page
        // of it, which is what mincore writes.
        let rc = unsafe { libc::mincore(self.ptr.as_ptr().cast(), self.len, vec.as_mut_ptr()) };
        (rc == 0).then(|| vec.iter().filter(|&&v| v & 1 != 0).count() as u64 * page as u64)
    }

    /// The mapping as a byte slice, for writing while it is still read-write.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes of readable, writable memory owned by `self`, and the
        // `&mut self` borrow makes this the only reference for the slice's lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Turn the first `code_len` bytes (rounded up to whole pages) of a freshly written read-write
    /// mapping into read-execute code and make the instruction stream see the new bytes. The rest
    /// stays read-write (kernel `.data`/`.bss`); no page is ever writable and executable at once.
    pub fn into_code(self, code_len: usize) -> Result<CodeMapping, CpuError> {
        let code_len = code_len.max(1).next_multiple_of(page_size()).min(self.len);
        // SAFETY: `ptr..ptr+code_len` is a prefix of the live mapping owned by `self`.
        unsafe { flush_icache(self.ptr.as_ptr(), code_len) };
        // SAFETY: `ptr..ptr+code_len` is a page-aligned prefix of the mapping owned by `self`.
        let rc = unsafe {
            libc::mprotect(
                self.ptr.as_ptr().cast(),
                code_len,
                libc::PROT_READ | libc::PROT_EXEC,
            )
        };
        if rc != 0 {
            return Err(os_error("mprotect"));
        }
        Ok(CodeMapping(self))
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned, and nothing borrows the mapping any
        // more (every borrow is tied to `self`). A failure cannot be handled meaningfully here.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// A read-execute mapping holding linked kernel code.
#[derive(Debug)]
pub struct CodeMapping(Mapping);

impl CodeMapping {
    /// Base address of the code image.
    pub fn base(&self) -> *const u8 {
        self.0.as_ptr()
    }
}

/// The host page size (4096 on every supported Linux; queried so 16K-page aarch64 works too).
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|s| s.is_power_of_two())
        .unwrap_or(4096)
}

/// Make instruction fetch see the bytes just written to `start..start+len`.
///
/// # Safety
/// `start..start+len` must be memory mapped by this process (cache maintenance by VA faults otherwise).
#[cfg(target_arch = "aarch64")]
unsafe fn flush_icache(start: *mut u8, len: usize) {
    use std::arch::asm;
    // Same sequence as compiler-rt's __clear_cache: clean D-cache lines to the point of
    // unification, then invalidate I-cache lines, with barriers in between.
    let ctr: u64;
    // SAFETY: reading CTR_EL0 is permitted at EL0 on Linux (the kernel enables or emulates it).
    unsafe { asm!("mrs {0}, ctr_el0", out(reg) ctr, options(nomem, nostack, preserves_flags)) };
    let dline = 4usize << ((ctr >> 16) & 0xf);
    let iline = 4usize << (ctr & 0xf);
    let begin = start as usize;
    let end = begin + len;
    let mut addr = begin & !(dline - 1);
    while addr < end {
        // SAFETY: cache maintenance by VA on memory mapped by this process.
        unsafe { asm!("dc cvau, {0}", in(reg) addr, options(nostack, preserves_flags)) };
        addr += dline;
    }
    // SAFETY: barrier instructions have no operands.
    unsafe { asm!("dsb ish", options(nostack, preserves_flags)) };
    let mut addr = begin & !(iline - 1);
    while addr < end {
        // SAFETY: cache maintenance by VA on memory mapped by this process.
        unsafe { asm!("ic ivau, {0}", in(reg) addr, options(nostack, preserves_flags)) };
        addr += iline;
    }
    // SAFETY: barrier instructions have no operands.
    unsafe { asm!("dsb ish", "isb", options(nostack, preserves_flags)) };
}

/// Make instruction fetch see the bytes just written (nothing to do on this architecture).
///
/// # Safety
/// None needed here; `unsafe` only to match the aarch64 version's contract.
#[cfg(not(target_arch = "aarch64"))]
unsafe fn flush_icache(_start: *mut u8, _len: usize) {
    // x86 keeps instruction fetch coherent with data writes; mprotect serialises the change.
}
