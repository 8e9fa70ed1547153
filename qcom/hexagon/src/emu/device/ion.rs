//! The ION side of the FastRPC device model: allocation (the parameters the documented driver takes), dma-buf
//! fds, freeing, and the host's bounds-checked reads, writes and copies of buffer contents (the real driver's
//! `mmap`ed views; here `Vec` backing stores). Invokes reach buffers through [`FastRpcModel::obj`] and
//! [`FastRpcModel::range`] (docs/hw/fastrpc.md §2).
use super::{einval, err, FastRpcModel, IonObj, State};
use crate::fastrpc::{abi, FastRpcError, IonBuf};

impl FastRpcModel {
    pub(super) fn obj<'a>(st: &'a State, fd: i32, call: &str) -> Result<&'a IonObj, FastRpcError> {
        st.fd_to_handle
            .get(&fd)
            .and_then(|h| st.ion.get(h))
            .ok_or_else(|| {
                err(
                    call,
                    libc::EBADF,
                    format!("fd {fd} is not a live ION dma-buf"),
                )
            })
    }

    pub(super) fn range(
        o: &IonObj,
        off: u64,
        len: u64,
        call: &str,
    ) -> Result<std::ops::Range<usize>, FastRpcError> {
        match off.checked_add(len) {
            Some(end) if end <= o.len => Ok(off as usize..end as usize),
            _ => Err(einval(
                call,
                format!("{len} bytes at {off:#x} outside the {}-byte buffer", o.len),
            )),
        }
    }

    pub(super) fn alloc_ion(
        &self,
        len: u64,
        align: u64,
        heap_mask: u32,
        flags: u32,
    ) -> Result<IonBuf, FastRpcError> {
        let call = "ION_IOC_ALLOC";
        if align != abi::ION_ALIGN
            || heap_mask != abi::ION_SYSTEM_HEAP_MASK
            || flags != abi::ION_FLAG_CACHED
        {
            return Err(einval(
                call,
                "expected align 0x200, heap mask 0x02000000, flags CACHED",
            ));
        }
        if len == 0 || len > 1 << 32 {
            return Err(einval(call, format!("length {len}")));
        }
        let mut st = self.lock();
        st.counts.ion_alloc += 1;
        let (h, fd) = (st.next_id, st.next_id + 1);
        st.next_id += 2;
        st.ion.insert(
            h,
            IonObj {
                len,
                data: vec![0; len as usize],
                fd,
            },
        );
        st.fd_to_handle.insert(fd, h);
        Ok(IonBuf { handle: h, fd, len })
    }

    pub(super) fn free_ion(&self, buf: IonBuf) -> Result<(), FastRpcError> {
        let mut st = self.lock();
        match st.ion.get(&buf.handle) {
            Some(o) if o.fd == buf.fd => {
                st.ion.remove(&buf.handle);
                st.fd_to_handle.remove(&buf.fd);
                Ok(())
            }
            _ => Err(einval(
                "ION_IOC_FREE",
                format!("unknown handle {} / fd {}", buf.handle, buf.fd),
            )),
        }
    }

    pub(super) fn write_ion(&self, fd: i32, offset: u64, data: &[u8]) -> Result<(), FastRpcError> {
        let mut st = self.lock();
        let h = Self::obj(&st, fd, "ion_write")?;
        let r = Self::range(h, offset, data.len() as u64, "ion_write")?;
        let h = st.fd_to_handle[&fd];
        st.ion.get_mut(&h).expect("live").data[r].copy_from_slice(data);
        Ok(())
    }

    pub(super) fn read_ion(
        &self,
        fd: i32,
        offset: u64,
        out: &mut [u8],
    ) -> Result<(), FastRpcError> {
        let st = self.lock();
        let o = Self::obj(&st, fd, "ion_read")?;
        out.copy_from_slice(&o.data[Self::range(o, offset, out.len() as u64, "ion_read")?]);
        Ok(())
    }

    pub(super) fn copy_ion(
        &self,
        dst_fd: i32,
        dst: u64,
        src_fd: i32,
        src: u64,
        len: u64,
    ) -> Result<(), FastRpcError> {
        let mut st = self.lock();
        let rs = Self::range(Self::obj(&st, src_fd, "ion_copy")?, src, len, "ion_copy")?;
        let rd = Self::range(Self::obj(&st, dst_fd, "ion_copy")?, dst, len, "ion_copy")?;
        let (hs, hd) = (st.fd_to_handle[&src_fd], st.fd_to_handle[&dst_fd]);
        if hs == hd {
            st.ion
                .get_mut(&hd)
                .expect("live")
                .data
                .copy_within(rs, rd.start);
        } else {
            let tmp = st.ion[&hs].data[rs].to_vec();
            st.ion.get_mut(&hd).expect("live").data[rd].copy_from_slice(&tmp);
        }
        Ok(())
    }
}
