//! Bundle bytes from a file: a read-only private mapping of a regular file, or the file read into
//! memory when it cannot be mapped (pipes, character devices, empty files, a failed `mmap`) or the
//! caller asks for a copy.
//!
//! Mapping instead of reading means load time and peak RSS stop scaling with a copy of the file:
//! only the pages something touches become resident, they are the page cache's own (shared with
//! every other process mapping the bundle, reclaimable), and the CPU backend reads weights in place
//! from them (`modelrt_cpu::weights`).
//!
//! **Hazard: the file changing underneath.** A private mapping does not snapshot the file: until a
//! page is copied on write (never, here: the mapping is `PROT_READ`), other writers to the file are
//! visible through it, and if the file is truncated, touching a page past the new end raises
//! `SIGBUS` and the process dies. The bundle is checked once (CRC, validation) when it is parsed, so
//! a file rewritten in place afterwards could also run weights that were never checked. Bundles are
//! therefore to be replaced the way package managers replace files — write a new file and
//! `rename(2)` it over the old one, which leaves this mapping on the old inode — and never
//! rewritten or truncated in place while a `modelrt` runs it. `--no-mmap` (CLI) reads the file
//! instead, for bundles on storage where that cannot be guaranteed.
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use anyhow::Context;

/// A read-only private mapping of a whole regular file, unmapped when the last owner drops it.
/// It exposes only `&[u8]`.
#[derive(Debug)]
pub struct FileMap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is read-only memory owned by this value; nothing writes it through this
// type, so sharing and sending it between threads is like sharing a `&[u8]`.
unsafe impl Send for FileMap {}
// SAFETY: as above.
unsafe impl Sync for FileMap {}

impl FileMap {
    /// Map all `len` (> 0) bytes of `file`, or `None` if the OS refuses.
    fn new(file: &File, len: usize) -> Option<FileMap> {
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh mapping with a null hint aliases no existing Rust object; `file` is an
        // open descriptor and `len` its current size. PROT_READ + MAP_PRIVATE: nothing can write
        // through the mapping, and the file is never modified through it. The file changing
        // underneath is the hazard the module doc describes. The result is checked against
        // MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        Some(FileMap {
            ptr: NonNull::new(p.cast())?,
            len,
        })
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr+len` is a live readable mapping owned by `self` for the borrow's
        // lifetime; nothing in this process writes it (PROT_READ).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: the mapping was created by `new` with this address and length and no slice of it
        // outlives `self` (every `bytes()` borrow ends before drop; owners hold the `Arc`).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// How the bytes of a [`BundleFile`] were obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Mapped read-only (weights can be read in place).
    Mapped,
    /// Read into memory because the caller asked to.
    ReadByRequest,
    /// Read into memory because the file is not a regular file (a pipe, a device).
    ReadNotRegular,
    /// Read into memory because `mmap` refused (or the file is empty).
    ReadMapFailed,
}

impl Source {
    /// One phrase for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Source::Mapped => "mapped read-only",
            Source::ReadByRequest => "read into memory (--no-mmap)",
            Source::ReadNotRegular => "read into memory (not a regular file)",
            Source::ReadMapFailed => "read into memory (mmap failed)",
        }
    }
}

enum Bytes {
    Mapped(Arc<FileMap>),
    Read(Vec<u8>),
}

/// The bytes of a bundle file, mapped or read.
pub struct BundleFile {
    bytes: Bytes,
    source: Source,
}

impl BundleFile {
    /// Map `path` if it is a regular file that `mmap` accepts, else read it; `map: false` always
    /// reads.
    pub fn open(path: &Path, map: bool) -> anyhow::Result<BundleFile> {
        let mut file =
            File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        let meta = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?;
        let source = if !map {
            Source::ReadByRequest
        } else if !meta.is_file() {
            Source::ReadNotRegular
        } else {
            match usize::try_from(meta.len())
                .ok()
                .and_then(|len| FileMap::new(&file, len))
            {
                Some(m) => {
                    return Ok(BundleFile {
                        bytes: Bytes::Mapped(Arc::new(m)),
                        source: Source::Mapped,
                    })
                }
                None => Source::ReadMapFailed,
            }
        };
        let mut v = Vec::new();
        file.read_to_end(&mut v)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(BundleFile {
            bytes: Bytes::Read(v),
            source,
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => m.bytes(),
            Bytes::Read(v) => v,
        }
    }

    /// The mapping, when the file is mapped (what the CPU backend binds weights to).
    pub fn mapping(&self) -> Option<&Arc<FileMap>> {
        match &self.bytes {
            Bytes::Mapped(m) => Some(m),
            Bytes::Read(_) => None,
        }
    }

    /// How the bytes were obtained.
    pub fn source(&self) -> Source {
        self.source
    }
}
