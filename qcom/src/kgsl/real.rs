//! The real KGSL: `libc` ioctls on `/dev/kgsl-3d0` (Linux/Android).
use super::abi::{self, *};
use super::{KgslError, KgslIo, ObjAlloc};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};

/// Default device node.
pub const NODE: &str = "/dev/kgsl-3d0";

/// An open KGSL device node.
pub struct KgslNode {
    fd: OwnedFd,
    /// Live mappings made by `mmap_obj` (address → length): `munmap` releases only these.
    maps: BTreeMap<u64, u64>,
}

fn errno_err(call: &'static str) -> KgslError {
    let e = std::io::Error::last_os_error();
    KgslError::Errno {
        call,
        errno: e.raw_os_error().unwrap_or(0),
        reason: e.to_string(),
    }
}

impl KgslNode {
    /// Open `path` read/write.
    pub fn open(path: &str) -> Result<Self, KgslError> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| KgslError::Open {
                path: path.to_string(),
                reason: e.to_string(),
            })?;
        Ok(KgslNode {
            fd: f.into(),
            maps: BTreeMap::new(),
        })
    }

    /// Issue KGSL ioctl `req` with argument `arg`.
    ///
    /// # Safety
    /// `req` must be the `abi` ioctl number whose argument struct is `T` (the numbers encode the
    /// struct size), and every address stored inside `arg` must be valid for the kernel to read or
    /// write as that ioctl defines, for the duration of the call (or longer where the ioctl says so).
    unsafe fn ioctl<T>(&self, call: &'static str, req: u32, arg: &mut T) -> Result<(), KgslError> {
        // SAFETY: `req` encodes size_of::<T>() and `arg` is a valid, exclusively borrowed #[repr(C)]
        // struct for the duration of the call (and its embedded addresses are valid: fn contract).
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), req as _, arg as *mut T) };
        if rc != 0 {
            return Err(errno_err(call));
        }
        Ok(())
    }
}

// SAFETY: `mmap_obj` returns fresh `MAP_SHARED` RW mappings that stay mapped until `munmap`
// (closing the fd does not unmap them), and `munmap` releases only ranges recorded in `maps`.
unsafe impl KgslIo for KgslNode {
    fn device_info(&mut self) -> Result<DevInfo, KgslError> {
        let mut info = DevInfo::default();
        let mut p = DeviceGetProperty {
            type_: PROP_DEVICE_INFO,
            value: &mut info as *mut DevInfo as u64,
            sizebytes: core::mem::size_of::<DevInfo>() as u64,
        };
        // SAFETY: the GETPROPERTY struct; `value` points at `info`, `sizebytes` is its size.
        unsafe { self.ioctl("DEVICE_GETPROPERTY", IOCTL_DEVICE_GETPROPERTY, &mut p)? };
        Ok(info)
    }

    fn set_power_max(&mut self, ctx: u32) -> Result<(), KgslError> {
        let mut level: u32 = CONSTRAINT_PWR_MAX;
        let mut c = DeviceConstraint {
            type_: CONSTRAINT_PWRLEVEL,
            context_id: ctx,
            data: &mut level as *mut u32 as u64,
            size: 4,
        };
        let mut p = DeviceGetProperty {
            type_: PROP_PWR_CONSTRAINT,
            value: &mut c as *mut DeviceConstraint as u64,
            sizebytes: core::mem::size_of::<DeviceConstraint>() as u64,
        };
        // SAFETY: the property struct; `value` points at `c`, whose `data` points at `level`, all
        // live locals for the call.
        unsafe { self.ioctl("SETPROPERTY", IOCTL_SETPROPERTY, &mut p) }
    }

    fn drawctxt_create(&mut self, flags: u32) -> Result<u32, KgslError> {
        let mut c = DrawctxtCreate {
            flags,
            drawctxt_id: 0,
        };
        // SAFETY: the DRAWCTXT_CREATE struct; it holds no addresses.
        unsafe { self.ioctl("DRAWCTXT_CREATE", IOCTL_DRAWCTXT_CREATE, &mut c)? };
        Ok(c.drawctxt_id)
    }

    fn gpuobj_alloc(&mut self, size: u64, flags: u64) -> Result<ObjAlloc, KgslError> {
        let mut a = GpuobjAlloc {
            size,
            flags,
            mmapsize: size,
            ..Default::default()
        };
        // SAFETY: the GPUOBJ_ALLOC struct; it holds no addresses.
        unsafe { self.ioctl("GPUOBJ_ALLOC", IOCTL_GPUOBJ_ALLOC, &mut a)? };
        Ok(ObjAlloc {
            id: a.id,
            mmapsize: a.mmapsize,
        })
    }

    fn mmap_obj(&mut self, id: u32, len: u64) -> Result<u64, KgslError> {
        // SAFETY: a fresh shared mapping of the KGSL object at offset id<<12; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.fd.as_raw_fd(),
                (id as u64 * abi::PAGE) as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(errno_err("mmap"));
        }
        self.maps.insert(p as u64, len);
        Ok(p as u64)
    }

    fn gpuobj_free(&mut self, id: u32) -> Result<(), KgslError> {
        let mut f = GpuobjFree {
            id,
            ..Default::default()
        };
        // SAFETY: the GPUOBJ_FREE struct; it holds no addresses.
        unsafe { self.ioctl("GPUOBJ_FREE", IOCTL_GPUOBJ_FREE, &mut f) }
    }

    unsafe fn munmap(&mut self, va: u64, len: u64) -> Result<(), KgslError> {
        if self.maps.get(&va) != Some(&len) {
            return Err(KgslError::Errno {
                call: "munmap",
                errno: libc::EINVAL,
                reason: format!("{va:#x}+{len:#x} is not a mapping of this KGSL node"),
            });
        }
        // SAFETY: `va/len` is exactly a mapping `mmap_obj` made (checked against `maps`), and the
        // caller gives it up (function contract: its `GpuObj` is consumed).
        if unsafe { libc::munmap(va as *mut libc::c_void, len as usize) } != 0 {
            return Err(errno_err("munmap"));
        }
        self.maps.remove(&va);
        Ok(())
    }

    unsafe fn map_user_mem(&mut self, hostptr: u64, len: u64) -> Result<u64, KgslError> {
        let mut m = MapUserMem {
            hostptr,
            len,
            memtype: USER_MEM_TYPE_ADDR,
            ..Default::default()
        };
        // SAFETY: the MAP_USER_MEM struct; `hostptr..+len` is memory the caller lends to the GPU
        // until SHAREDMEM_FREE (this function's contract).
        unsafe { self.ioctl("MAP_USER_MEM", IOCTL_MAP_USER_MEM, &mut m)? };
        Ok(m.gpuaddr)
    }

    fn sharedmem_free(&mut self, gpuaddr: u64) -> Result<(), KgslError> {
        let mut f = SharedmemFree { gpuaddr };
        // SAFETY: the SHAREDMEM_FREE struct; `gpuaddr` is a GPU address the kernel validates.
        unsafe { self.ioctl("SHAREDMEM_FREE", IOCTL_SHAREDMEM_FREE, &mut f) }
    }

    fn gpu_command(&mut self, ctx: u32, ibs: &[CommandObject]) -> Result<u32, KgslError> {
        let mut c = GpuCommand {
            cmdlist: ibs.as_ptr() as u64,
            cmdsize: core::mem::size_of::<CommandObject>() as u32,
            numcmds: ibs.len() as u32,
            context_id: ctx,
            ..Default::default()
        };
        // SAFETY: the GPU_COMMAND struct; `cmdlist` points at `ibs.len()` CommandObjects of
        // `cmdsize` bytes each, borrowed for the call. The IB addresses are GPU addresses the kernel
        // and IOMMU check.
        unsafe { self.ioctl("GPU_COMMAND", IOCTL_GPU_COMMAND, &mut c)? };
        Ok(c.timestamp)
    }

    fn wait_timestamp(
        &mut self,
        ctx: u32,
        timestamp: u32,
        timeout_ms: u32,
    ) -> Result<(), KgslError> {
        let mut w = WaitTimestamp {
            context_id: ctx,
            timestamp,
            timeout: timeout_ms,
        };
        // SAFETY: the WAITTIMESTAMP_CTXTID struct; it holds no addresses.
        let r = unsafe {
            self.ioctl(
                "DEVICE_WAITTIMESTAMP_CTXTID",
                IOCTL_DEVICE_WAITTIMESTAMP_CTXTID,
                &mut w,
            )
        };
        match r {
            Err(KgslError::Errno { errno, .. })
                if errno == libc::ETIMEDOUT || errno == libc::EBUSY =>
            {
                Err(KgslError::Timeout {
                    timestamp,
                    timeout_ms,
                })
            }
            r => r,
        }
    }
}
