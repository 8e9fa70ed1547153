//! The real KGSL: `libc` ioctls on `/dev/kgsl-3d0` (Linux/Android).
use super::abi::{self, *};
use super::{KgslError, KgslIo, ObjAlloc};
use std::os::fd::{AsRawFd, OwnedFd};

/// Default device node.
pub const NODE: &str = "/dev/kgsl-3d0";

/// An open KGSL device node.
pub struct KgslNode {
    fd: OwnedFd,
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
        Ok(KgslNode { fd: f.into() })
    }

    fn ioctl<T>(&self, call: &'static str, req: u32, arg: &mut T) -> Result<(), KgslError> {
        // SAFETY: `req` encodes size_of::<T>() (the abi constants are built from the struct sizes) and `arg` is a
        // valid, exclusively borrowed #[repr(C)] struct for the duration of the call.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), req as _, arg as *mut T) };
        if rc != 0 {
            return Err(errno_err(call));
        }
        Ok(())
    }
}

impl KgslIo for KgslNode {
    fn device_info(&mut self) -> Result<DevInfo, KgslError> {
        let mut info = DevInfo::default();
        let mut p = DeviceGetProperty {
            type_: PROP_DEVICE_INFO,
            value: &mut info as *mut DevInfo as u64,
            sizebytes: core::mem::size_of::<DevInfo>() as u64,
        };
        self.ioctl("DEVICE_GETPROPERTY", IOCTL_DEVICE_GETPROPERTY, &mut p)?;
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
        self.ioctl("SETPROPERTY", IOCTL_SETPROPERTY, &mut p)
    }

    fn drawctxt_create(&mut self, flags: u32) -> Result<u32, KgslError> {
        let mut c = DrawctxtCreate {
            flags,
            drawctxt_id: 0,
        };
        self.ioctl("DRAWCTXT_CREATE", IOCTL_DRAWCTXT_CREATE, &mut c)?;
        Ok(c.drawctxt_id)
    }

    fn gpuobj_alloc(&mut self, size: u64, flags: u64) -> Result<ObjAlloc, KgslError> {
        let mut a = GpuobjAlloc {
            size,
            flags,
            mmapsize: size,
            ..Default::default()
        };
        self.ioctl("GPUOBJ_ALLOC", IOCTL_GPUOBJ_ALLOC, &mut a)?;
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
        Ok(p as u64)
    }

    fn gpuobj_free(&mut self, id: u32) -> Result<(), KgslError> {
        let mut f = GpuobjFree {
            id,
            ..Default::default()
        };
        self.ioctl("GPUOBJ_FREE", IOCTL_GPUOBJ_FREE, &mut f)
    }

    fn munmap(&mut self, va: u64, len: u64) -> Result<(), KgslError> {
        // SAFETY: `va/len` is a mapping returned by `mmap_obj` that the caller gives up (GpuObj consumed).
        if unsafe { libc::munmap(va as *mut libc::c_void, len as usize) } != 0 {
            return Err(errno_err("munmap"));
        }
        Ok(())
    }

    fn map_user_mem(&mut self, hostptr: u64, len: u64) -> Result<u64, KgslError> {
        let mut m = MapUserMem {
            hostptr,
            len,
            memtype: USER_MEM_TYPE_ADDR,
            ..Default::default()
        };
        self.ioctl("MAP_USER_MEM", IOCTL_MAP_USER_MEM, &mut m)?;
        Ok(m.gpuaddr)
    }

    fn sharedmem_free(&mut self, gpuaddr: u64) -> Result<(), KgslError> {
        let mut f = SharedmemFree { gpuaddr };
        self.ioctl("SHAREDMEM_FREE", IOCTL_SHAREDMEM_FREE, &mut f)
    }

    fn gpu_command(&mut self, ctx: u32, ibs: &[CommandObject]) -> Result<u32, KgslError> {
        let mut c = GpuCommand {
            cmdlist: ibs.as_ptr() as u64,
            cmdsize: core::mem::size_of::<CommandObject>() as u32,
            numcmds: ibs.len() as u32,
            context_id: ctx,
            ..Default::default()
        };
        self.ioctl("GPU_COMMAND", IOCTL_GPU_COMMAND, &mut c)?;
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
        match self.ioctl(
            "DEVICE_WAITTIMESTAMP_CTXTID",
            IOCTL_DEVICE_WAITTIMESTAMP_CTXTID,
            &mut w,
        ) {
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
