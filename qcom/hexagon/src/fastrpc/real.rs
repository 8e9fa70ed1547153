//! The real device (Linux): `/dev/ion` for buffers and `/dev/adsprpc-smd` for FastRPC, through `ioctl`. Host
//! mappings of ION buffers are kept here and reached only through bounds-checked copies. Written from the
//! documented ABI (docs/hw/fastrpc.md); **never run on a Snapdragon device**.
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

use super::abi::*;
use super::{check_args, Arg, FastRpcError, FastRpcIo, IonBuf};

/// The FastRPC channel node of the compute DSP.
pub const RPC_NODE: &str = "/dev/adsprpc-smd";
/// The legacy ION allocator node.
pub const ION_NODE: &str = "/dev/ion";

/// Most remote arguments one call carries here (a launch: 3 + 15 handles).
const MAX_ARGS: usize = super::layout::LAUNCH_FIXED_ARGS + super::scalars::MAX_LAUNCH_BUFFERS;

/// `/dev/ion` + `/dev/adsprpc-smd`.
pub struct RealFastRpc {
    ion: i32,
    rpc: AtomicI32,
    maps: Mutex<HashMap<i32, (usize, usize)>>,
}

fn errno_err(call: &str) -> FastRpcError {
    let e = std::io::Error::last_os_error();
    FastRpcError::Errno {
        call: call.into(),
        errno: e.raw_os_error().unwrap_or(0),
        reason: e.to_string(),
    }
}

fn open_node(path: &str, flags: i32) -> Result<i32, FastRpcError> {
    let c = CString::new(path).map_err(|_| FastRpcError::invalid("open", "path has a NUL"))?;
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(FastRpcError::Open {
            path: path.into(),
            reason: std::io::Error::last_os_error().to_string(),
        });
    }
    Ok(fd)
}

/// `ioctl(fd, nr, arg)` on a `repr(C)` argument struct.
///
/// # Safety
/// `T` must be the struct the driver expects for `nr`, and every pointer inside it must be valid for what the
/// driver reads or writes during the call.
unsafe fn ioctl<T>(fd: i32, nr: u32, arg: &mut T, call: &str) -> Result<(), FastRpcError> {
    // SAFETY: forwarded from the caller; `arg` is a live exclusive reference.
    let r = unsafe { libc::ioctl(fd, nr as _, arg as *mut T) };
    if r < 0 {
        Err(errno_err(call))
    } else {
        Ok(())
    }
}

impl RealFastRpc {
    /// Open `/dev/ion` (the FastRPC node is opened by [`FastRpcIo::rpc_open`]).
    pub fn open() -> Result<Self, FastRpcError> {
        Ok(RealFastRpc {
            ion: open_node(ION_NODE, libc::O_RDONLY)?,
            rpc: AtomicI32::new(-1),
            maps: Mutex::new(HashMap::new()),
        })
    }

    fn rpc(&self, call: &str) -> Result<i32, FastRpcError> {
        match self.rpc.load(Ordering::SeqCst) {
            fd if fd >= 0 => Ok(fd),
            _ => Err(FastRpcError::invalid(
                call,
                "the FastRPC channel is not open",
            )),
        }
    }

    fn mapping(&self, fd: i32, off: u64, len: usize, call: &str) -> Result<usize, FastRpcError> {
        let maps = self
            .maps
            .lock()
            .map_err(|_| FastRpcError::invalid(call, "poisoned"))?;
        let &(va, size) = maps.get(&fd).ok_or_else(|| {
            FastRpcError::invalid(call, format!("fd {fd} is not an ION buffer of this device"))
        })?;
        match usize::try_from(off)
            .ok()
            .and_then(|o| o.checked_add(len).map(|e| (o, e)))
        {
            Some((o, end)) if end <= size => Ok(va + o),
            _ => Err(FastRpcError::invalid(
                call,
                format!("{len} bytes at {off:#x} are outside the {size}-byte buffer"),
            )),
        }
    }

    /// Build the raw remote-arg array (no allocation): buffers point into the borrowed slices, handle slots
    /// stay zero.
    fn raw_args(call: &str, args: &mut [Arg<'_>]) -> Result<[RemoteArg; MAX_ARGS], FastRpcError> {
        let mut raw = [RemoteArg::default(); MAX_ARGS];
        if args.len() > MAX_ARGS {
            return Err(FastRpcError::invalid(
                call,
                format!("{} arguments (at most {MAX_ARGS})", args.len()),
            ));
        }
        for (r, a) in raw.iter_mut().zip(args.iter_mut()) {
            *r = match a {
                Arg::In(b) if !b.is_empty() => RemoteArg {
                    pv: b.as_ptr() as u64,
                    len: b.len() as u64,
                },
                Arg::Out(b) if !b.is_empty() => RemoteArg {
                    pv: b.as_mut_ptr() as u64,
                    len: b.len() as u64,
                },
                _ => RemoteArg::default(),
            };
        }
        Ok(raw)
    }
}

impl Drop for RealFastRpc {
    fn drop(&mut self) {
        self.rpc_close();
        // SAFETY: the ION fd is owned by this value and closed once.
        unsafe { libc::close(self.ion) };
    }
}

// SAFETY: the driver writes only the `Out` buffers of an invoke (their pointers and lengths come from the
// borrowed slices) and DSP-side mappings of ION buffers this value allocated; `ion_*` copies are bounds-checked
// against the recorded mapping length.
unsafe impl FastRpcIo for RealFastRpc {
    fn ion_alloc(
        &self,
        len: u64,
        align: u64,
        heap_mask: u32,
        flags: u32,
    ) -> Result<IonBuf, FastRpcError> {
        let mut a = IonAllocationData {
            len,
            align,
            heap_id_mask: heap_mask,
            flags,
            handle: 0,
        };
        // SAFETY: ION_IOC_ALLOC takes an `ion_allocation_data`.
        unsafe { ioctl(self.ion, ION_IOC_ALLOC, &mut a, "ION_IOC_ALLOC")? };
        let mut s = IonFdData {
            handle: a.handle,
            fd: -1,
        };
        // SAFETY: ION_IOC_SHARE takes an `ion_fd_data`.
        unsafe { ioctl(self.ion, ION_IOC_SHARE, &mut s, "ION_IOC_SHARE")? };
        let size =
            usize::try_from(len).map_err(|_| FastRpcError::invalid("mmap", "length too large"))?;
        // SAFETY: a fresh shared mapping of the dma-buf; no existing memory is affected.
        let va = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                s.fd,
                0,
            )
        };
        if va == libc::MAP_FAILED {
            return Err(errno_err("mmap of an ION buffer"));
        }
        self.maps
            .lock()
            .map_err(|_| FastRpcError::invalid("ion_alloc", "poisoned"))?
            .insert(s.fd, (va as usize, size));
        Ok(IonBuf {
            handle: a.handle,
            fd: s.fd,
            len,
        })
    }

    fn ion_free(&self, buf: IonBuf) -> Result<(), FastRpcError> {
        let (va, size) = self
            .maps
            .lock()
            .map_err(|_| FastRpcError::invalid("ion_free", "poisoned"))?
            .remove(&buf.fd)
            .ok_or_else(|| {
                FastRpcError::invalid("ion_free", format!("fd {} is not an ION buffer", buf.fd))
            })?;
        // SAFETY: exactly the mapping created in `ion_alloc`, now removed from the table so nothing reaches it.
        unsafe {
            libc::munmap(va as *mut libc::c_void, size);
            libc::close(buf.fd);
        }
        let mut h = IonHandleData { handle: buf.handle };
        // SAFETY: ION_IOC_FREE takes an `ion_handle_data`.
        unsafe { ioctl(self.ion, ION_IOC_FREE, &mut h, "ION_IOC_FREE") }
    }

    fn ion_write(&self, fd: i32, offset: u64, data: &[u8]) -> Result<(), FastRpcError> {
        let p = self.mapping(fd, offset, data.len(), "ion_write")?;
        // SAFETY: `p..p+len` lies inside a live mapping owned by this value (checked above).
        unsafe { std::ptr::copy(data.as_ptr(), p as *mut u8, data.len()) };
        Ok(())
    }

    fn ion_read(&self, fd: i32, offset: u64, out: &mut [u8]) -> Result<(), FastRpcError> {
        let p = self.mapping(fd, offset, out.len(), "ion_read")?;
        // SAFETY: as in `ion_write`.
        unsafe { std::ptr::copy(p as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    fn ion_copy(
        &self,
        dst_fd: i32,
        dst: u64,
        src_fd: i32,
        src: u64,
        len: u64,
    ) -> Result<(), FastRpcError> {
        let n = usize::try_from(len)
            .map_err(|_| FastRpcError::invalid("ion_copy", "length too large"))?;
        let d = self.mapping(dst_fd, dst, n, "ion_copy")?;
        let s = self.mapping(src_fd, src, n, "ion_copy")?;
        // SAFETY: both ranges lie inside live mappings owned by this value; `copy` allows overlap.
        unsafe { std::ptr::copy(s as *const u8, d as *mut u8, n) };
        Ok(())
    }

    fn rpc_open(&self) -> Result<(), FastRpcError> {
        let fd = open_node(RPC_NODE, libc::O_RDONLY | libc::O_NONBLOCK)?;
        if self
            .rpc
            .compare_exchange(-1, fd, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            // SAFETY: `fd` was just opened and is not shared.
            unsafe { libc::close(fd) };
            return Err(FastRpcError::invalid(
                "open",
                "a FastRPC channel is already open",
            ));
        }
        Ok(())
    }

    fn rpc_close(&self) {
        let fd = self.rpc.swap(-1, Ordering::SeqCst);
        if fd >= 0 {
            // SAFETY: the channel fd is owned by this value and taken out of `rpc` before closing.
            unsafe { libc::close(fd) };
        }
    }

    fn getinfo(&self, value: u32) -> Result<u32, FastRpcError> {
        let mut v = value;
        // SAFETY: GETINFO takes a u32.
        unsafe {
            ioctl(
                self.rpc("GETINFO")?,
                FASTRPC_IOCTL_GETINFO,
                &mut v,
                "GETINFO",
            )?
        };
        Ok(v)
    }

    fn control(&self, req: u32, words: [u32; 2]) -> Result<(), FastRpcError> {
        let mut c = ControlArgs { req, words };
        // SAFETY: CONTROL takes a `fastrpc_ioctl_control`.
        unsafe {
            ioctl(
                self.rpc("CONTROL")?,
                FASTRPC_IOCTL_CONTROL,
                &mut c,
                "CONTROL",
            )
        }
    }

    fn init(&self, flags: u32, shell: IonBuf) -> Result<(), FastRpcError> {
        let len = usize::try_from(shell.len)
            .map_err(|_| FastRpcError::invalid("INIT", "shell too large"))?;
        let va = self.mapping(shell.fd, 0, len, "INIT")?;
        let mut a = InitArgs {
            flags,
            file: va as u64,
            filelen: u32::try_from(shell.len)
                .map_err(|_| FastRpcError::invalid("INIT", "shell too large"))?,
            filefd: shell.fd,
            ..Default::default()
        };
        // SAFETY: INIT takes a `fastrpc_ioctl_init`; `file` is a live mapping of `filelen` bytes.
        unsafe { ioctl(self.rpc("INIT")?, FASTRPC_IOCTL_INIT, &mut a, "INIT") }
    }

    fn invoke(&self, handle: u32, sc: u32, args: &mut [Arg<'_>]) -> Result<(), FastRpcError> {
        check_args("INVOKE", sc, args)?;
        let mut raw = Self::raw_args("INVOKE", args)?;
        let mut a = InvokeArgs {
            handle,
            sc,
            pra: if args.is_empty() {
                0
            } else {
                raw.as_mut_ptr() as u64
            },
        };
        // SAFETY: INVOKE takes a `fastrpc_ioctl_invoke`; `pra` points at `raw`, whose buffer entries point into
        // slices borrowed (exclusively for outputs) for the duration of this call.
        unsafe { ioctl(self.rpc("INVOKE")?, FASTRPC_IOCTL_INVOKE, &mut a, "INVOKE") }
    }

    fn invoke_attrs(
        &self,
        handle: u32,
        sc: u32,
        args: &mut [Arg<'_>],
        fds: &[i32],
        attrs: &[u32],
    ) -> Result<(), FastRpcError> {
        check_args("INVOKE_ATTRS", sc, args)?;
        if fds.len() != args.len() || attrs.len() != args.len() {
            return Err(FastRpcError::invalid(
                "INVOKE_ATTRS",
                "fds/attrs must have one entry per argument",
            ));
        }
        let mut raw = Self::raw_args("INVOKE_ATTRS", args)?;
        let mut a = InvokeAttrsArgs {
            inv: InvokeArgs {
                handle,
                sc,
                pra: raw.as_mut_ptr() as u64,
            },
            fds: fds.as_ptr() as u64,
            attrs: attrs.as_ptr() as u64,
        };
        // SAFETY: INVOKE_ATTRS takes a `fastrpc_ioctl_invoke_attrs`; `pra`, `fds` and `attrs` point at arrays with
        // one entry per argument that outlive the call; buffer entries point into borrowed slices.
        unsafe {
            ioctl(
                self.rpc("INVOKE_ATTRS")?,
                FASTRPC_IOCTL_INVOKE_ATTRS,
                &mut a,
                "INVOKE_ATTRS",
            )
        }
    }

    fn mmap(&self, fd: i32, flags: u32, vaddrin: u64, size: u64) -> Result<u64, FastRpcError> {
        let mut m = MmapArgs {
            fd,
            flags,
            vaddrin,
            size,
            vaddrout: 0,
        };
        // SAFETY: MMAP takes a `fastrpc_ioctl_mmap`.
        unsafe { ioctl(self.rpc("MMAP")?, FASTRPC_IOCTL_MMAP, &mut m, "MMAP")? };
        Ok(m.vaddrout)
    }
}
