//! The FastRPC device model behind [`FastRpcIo`]: the trait's calls, each checked as the documented driver would —
//! ION calls go to the [`super::ion`] model; channel bring-up (open, GETINFO, CONTROL, INIT in that order), the
//! fixed-handle invokes (listener, process exit, library open/close), launches and model-level runs, and MMAP
//! (docs/hw/fastrpc.md §1–§6). The one `unsafe impl` of the crate's device models lives here.
use super::{einval, err, Channel, FastRpcModel};
use crate::fastrpc::scalars::{self, Scalars};
use crate::fastrpc::{abi, Arg, FastRpcError, FastRpcIo, IonBuf};

// SAFETY: the model writes only the `Out` slices of a call (within their lengths, checked) and its own `Vec`
// backing stores of ION buffers; accessors are bounds-checked.
unsafe impl FastRpcIo for FastRpcModel {
    fn ion_alloc(
        &self,
        len: u64,
        align: u64,
        heap_mask: u32,
        flags: u32,
    ) -> Result<IonBuf, FastRpcError> {
        self.alloc_ion(len, align, heap_mask, flags)
    }

    fn ion_free(&self, buf: IonBuf) -> Result<(), FastRpcError> {
        self.free_ion(buf)
    }

    fn ion_write(&self, fd: i32, offset: u64, data: &[u8]) -> Result<(), FastRpcError> {
        self.write_ion(fd, offset, data)
    }

    fn ion_read(&self, fd: i32, offset: u64, out: &mut [u8]) -> Result<(), FastRpcError> {
        self.read_ion(fd, offset, out)
    }

    fn ion_copy(
        &self,
        dst_fd: i32,
        dst: u64,
        src_fd: i32,
        src: u64,
        len: u64,
    ) -> Result<(), FastRpcError> {
        self.copy_ion(dst_fd, dst, src_fd, src, len)
    }

    fn rpc_open(&self) -> Result<(), FastRpcError> {
        let mut st = self.lock();
        if st.chan.is_some() {
            return Err(err(
                "open",
                libc::EBUSY,
                "the FastRPC channel is already open",
            ));
        }
        st.chan = Some(Channel::default());
        Ok(())
    }

    fn rpc_close(&self) {
        let mut st = self.lock();
        st.chan = None;
        st.generation += 1;
        st.libs.clear();
        st.pending = None;
        st.taken = None;
        self.cv.notify_all();
    }

    fn getinfo(&self, value: u32) -> Result<u32, FastRpcError> {
        let mut st = self.lock();
        let c = Self::chan(&mut st, "GETINFO")?;
        if value != abi::CDSP_DOMAIN {
            return Err(einval(
                "GETINFO",
                format!("channel {value} (the cDSP is 3)"),
            ));
        }
        c.info = true;
        Ok(value)
    }

    fn control(&self, req: u32, words: [u32; 2]) -> Result<(), FastRpcError> {
        let mut st = self.lock();
        let c = Self::chan(&mut st, "CONTROL")?;
        if !c.info {
            return Err(einval("CONTROL", "CONTROL before GETINFO"));
        }
        if !(1..=3).contains(&req) || (req == abi::FASTRPC_CONTROL_KALLOC && words != [0, 0]) {
            return Err(einval("CONTROL", format!("request {req} {words:?}")));
        }
        c.kalloc |= req == abi::FASTRPC_CONTROL_KALLOC;
        Ok(())
    }

    fn init(&self, flags: u32, shell: IonBuf) -> Result<(), FastRpcError> {
        let mut st = self.lock();
        let o = Self::obj(&st, shell.fd, "INIT")?;
        if o.len != shell.len
            || !shell.len.is_multiple_of(4096)
            || o.data.get(..4) != Some(b"\x7fELF".as_slice())
        {
            return Err(einval(
                "INIT",
                "the shell must be a 4 KiB-rounded ION buffer holding an ELF",
            ));
        }
        let c = Self::chan(&mut st, "INIT")?;
        if flags != abi::FASTRPC_INIT_CREATE || !c.info || !c.kalloc || c.process {
            return Err(einval(
                "INIT",
                "INIT CREATE must follow GETINFO and CONTROL, once per channel",
            ));
        }
        c.process = true;
        Ok(())
    }

    fn invoke(&self, handle: u32, sc: u32, args: &mut [Arg<'_>]) -> Result<(), FastRpcError> {
        crate::fastrpc::check_args("INVOKE", sc, args)
            .map_err(|e| einval("INVOKE", e.to_string()))?;
        let mut st = self.lock();
        match (handle, sc) {
            (scalars::HANDLE_LISTENER, scalars::SC_LISTENER_INIT) => {
                let c = Self::chan(&mut st, "INVOKE listener init")?;
                if !c.process || c.listener {
                    return Err(einval("INVOKE listener init", "must follow INIT, once"));
                }
                c.listener = true;
                Ok(())
            }
            (scalars::HANDLE_LISTENER, scalars::SC_LISTENER_NEXT) => {
                st.counts.listener_next += 1;
                drop(st);
                self.listener_next(args)
            }
            (scalars::HANDLE_PROCESS, scalars::SC_PROCESS_EXIT) => {
                st.counts.other_invoke += 1;
                Self::chan(&mut st, "INVOKE process exit")?;
                st.libs.clear();
                Ok(())
            }
            (scalars::HANDLE_REMOTECTL, scalars::SC_OPEN_LIB) => {
                st.counts.open_lib += 1;
                Self::ready(&mut st, "INVOKE open_lib")?;
                drop(st);
                self.open_lib(args)
            }
            (scalars::HANDLE_REMOTECTL, scalars::SC_CLOSE_LIB) => {
                st.counts.close_lib += 1;
                Self::ready(&mut st, "INVOKE close_lib")?;
                let Arg::In(head) = &args[0] else {
                    unreachable!("shape checked")
                };
                if head.len() != 8 {
                    return Err(einval("INVOKE close_lib", "takes in u32[2] {handle, 0xFF}"));
                }
                let h = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
                if st.libs.remove(&h).is_none() {
                    return Err(err(
                        "INVOKE close_lib",
                        libc::EBADF,
                        format!("handle {h:#x} is not open"),
                    ));
                }
                Ok(())
            }
            _ => Err(einval(
                "INVOKE",
                format!("handle {handle} with sc {sc:#010x} is not a call this device serves"),
            )),
        }
    }

    fn invoke_attrs(
        &self,
        handle: u32,
        sc: u32,
        args: &mut [Arg<'_>],
        fds: &[i32],
        attrs: &[u32],
    ) -> Result<(), FastRpcError> {
        crate::fastrpc::check_args("INVOKE_ATTRS", sc, args)
            .map_err(|e| einval("INVOKE_ATTRS", e.to_string()))?;
        if Scalars::decode(sc).method == 3 {
            return self.run_schedule(handle, sc, args, fds, attrs);
        }
        self.launch(handle, sc, args, fds, attrs)
    }

    fn mmap(&self, fd: i32, flags: u32, _vaddrin: u64, size: u64) -> Result<u64, FastRpcError> {
        let mut st = self.lock();
        Self::chan(&mut st, "MMAP")?;
        if fd != -1 || size == 0 || !size.is_multiple_of(4096) {
            return Err(einval(
                "MMAP",
                format!("fd {fd}, flags {flags:#x}, size {size}"),
            ));
        }
        st.next_id += 1;
        Ok(0xE000_0000 + (st.next_id as u64) * 0x10_0000)
    }
}
