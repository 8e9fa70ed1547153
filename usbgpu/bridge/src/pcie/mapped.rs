//! [`MappedMmio`]: a native PCI BAR mapped from Linux sysfs (`/sys/bus/pci/devices/<bdf>/resourceN`)
//! and accessed with volatile raw-pointer loads/stores (never through references, see hal::mmio).
//! Needs root (or write access to the resource file) and a BAR with memory decode enabled.
use modelrt_hal::mmio::Mmio;
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Why a BAR could not be mapped or accessed.
#[derive(Debug, thiserror::Error)]
pub enum MappedMmioError {
    #[error("cannot open {path}: {source}{hint}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
        hint: &'static str,
    },
    #[error("{path} is empty (BAR not implemented or not assigned)")]
    Empty { path: PathBuf },
    #[error("mmap of {path} failed: {source}")]
    Map {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "MMIO access of {len} bytes at {offset:#x} outside the {size:#x}-byte BAR (or unaligned)"
    )]
    OutOfRange { offset: u64, len: u64, size: u64 },
}

/// A mapped BAR. Unmapped on drop.
pub struct MappedMmio {
    ptr: *mut u8,
    size: usize,
}

// SAFETY: the mapping is owned exclusively by this value; MMIO through it has no thread affinity.
unsafe impl Send for MappedMmio {}

impl MappedMmio {
    /// Map BAR `bar` of the PCI function `bdf` (e.g. `0000:03:00.0`).
    pub fn open_sysfs(bdf: &str, bar: u8) -> Result<Self, MappedMmioError> {
        let path = Path::new("/sys/bus/pci/devices")
            .join(bdf)
            .join(format!("resource{bar}"));
        Self::open_path(&path)
    }

    /// Map a sysfs resource file (or any mmap-able file) read-write, whole.
    pub fn open_path(path: &Path) -> Result<Self, MappedMmioError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|source| {
                let hint = if source.kind() == std::io::ErrorKind::PermissionDenied {
                    " (run as root)"
                } else {
                    ""
                };
                MappedMmioError::Open {
                    path: path.to_owned(),
                    source,
                    hint,
                }
            })?;
        let size = file
            .metadata()
            .map_err(|source| MappedMmioError::Map {
                path: path.to_owned(),
                source,
            })?
            .len() as usize;
        if size == 0 {
            return Err(MappedMmioError::Empty {
                path: path.to_owned(),
            });
        }
        // SAFETY: FFI call with a valid fd and length; a shared mapping of the resource file. The
        // result is checked for MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(MappedMmioError::Map {
                path: path.to_owned(),
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(MappedMmio {
            ptr: ptr.cast(),
            size,
        })
    }

    /// Size of the mapping in bytes.
    pub fn size(&self) -> u64 {
        self.size as u64
    }

    fn at(&self, offset: u64) -> Result<*mut u32, MappedMmioError> {
        if !offset.is_multiple_of(4)
            || offset
                .checked_add(4)
                .is_none_or(|end| end > self.size as u64)
        {
            return Err(MappedMmioError::OutOfRange {
                offset,
                len: 4,
                size: self.size as u64,
            });
        }
        // SAFETY: offset + 4 ≤ size was checked, so the pointer stays inside the mapping.
        Ok(unsafe { self.ptr.add(offset as usize) }.cast())
    }
}

impl Mmio for MappedMmio {
    type Error = MappedMmioError;

    fn read32(&mut self, offset: u64) -> Result<u32, MappedMmioError> {
        let p = self.at(offset)?;
        // SAFETY: `p` is an aligned, in-bounds pointer into our live MMIO mapping.
        Ok(unsafe { p.read_volatile() })
    }

    fn write32(&mut self, offset: u64, value: u32) -> Result<(), MappedMmioError> {
        let p = self.at(offset)?;
        // SAFETY: `p` is an aligned, in-bounds pointer into our live MMIO mapping.
        unsafe { p.write_volatile(value) };
        Ok(())
    }
}

impl Drop for MappedMmio {
    fn drop(&mut self) {
        // SAFETY: ptr/size are exactly what mmap returned; nothing uses the mapping after drop.
        unsafe { libc::munmap(self.ptr.cast(), self.size) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_a_file_and_round_trips() {
        let dir = std::env::temp_dir().join(format!("mapped_mmio_{}", std::process::id()));
        std::fs::write(&dir, vec![0u8; 4096]).unwrap();
        let mut m = MappedMmio::open_path(&dir).unwrap();
        m.write32(8, 0xDEAD_BEEF).unwrap();
        assert_eq!(m.read32(8).unwrap(), 0xDEAD_BEEF);
        assert!(matches!(
            m.read32(4096),
            Err(MappedMmioError::OutOfRange { .. })
        ));
        assert!(matches!(
            m.read32(2),
            Err(MappedMmioError::OutOfRange { .. })
        ));
        drop(m);
        let bytes = std::fs::read(&dir).unwrap();
        assert_eq!(&bytes[8..12], &0xDEAD_BEEFu32.to_le_bytes());
        std::fs::remove_file(&dir).unwrap();
    }
}
