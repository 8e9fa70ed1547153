//! The device surface the runtime talks to: [`FastRpcIo`] (one method per FastRPC/ION ioctl, an `unsafe trait`
//! whose contract the real device in [`super::real`] and the device model keep), its argument types [`Arg`] and
//! [`IonBuf`], and [`check_args`], the shape check every implementation applies to an invoke (docs/hw/fastrpc.md
//! §3).
use super::scalars;
use super::FastRpcError;

/// One remote argument of an invoke, in the order the scalars word describes (input buffers, output buffers,
/// then handles). Buffers are borrowed for the duration of the call only.
#[derive(Debug)]
pub enum Arg<'a> {
    In(&'a [u8]),
    Out(&'a mut [u8]),
    /// A handle slot: its dma-buf fd travels in the `fds` array of INVOKE_ATTRS, the slot itself stays zero.
    Handle,
}

/// An ION buffer: the allocation handle, its shared dma-buf fd and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IonBuf {
    pub handle: i32,
    pub fd: i32,
    pub len: u64,
}

/// The FastRPC + ION device surface: one method per ioctl the runtime issues, with typed arguments. Host
/// mappings of ION buffers stay inside the implementation; callers reach their bytes only through the
/// bounds-checked [`ion_write`](Self::ion_write) / [`ion_read`](Self::ion_read) / [`ion_copy`](Self::ion_copy).
///
/// # Safety
/// The device (or model) writes memory the caller handed it, so an implementation must guarantee that during
/// a call it writes only the `Out` slices of that call and the ION buffers it allocated itself, never past
/// their lengths, and that the `ion_*` accessors stay within the buffer's length (refusing with an error
/// otherwise). The methods take `&self` because the listener thread and launches use the channel concurrently,
/// as the driver allows.
pub unsafe trait FastRpcIo: Send + Sync {
    /// ION_IOC_ALLOC (len, align, heap mask, flags) then ION_IOC_SHARE and a host `mmap` of the dma-buf.
    fn ion_alloc(
        &self,
        len: u64,
        align: u64,
        heap_mask: u32,
        flags: u32,
    ) -> Result<IonBuf, FastRpcError>;
    /// `munmap`, `close(fd)`, ION_IOC_FREE.
    fn ion_free(&self, buf: IonBuf) -> Result<(), FastRpcError>;
    /// Copy `data` into the buffer at `offset`.
    fn ion_write(&self, fd: i32, offset: u64, data: &[u8]) -> Result<(), FastRpcError>;
    /// Copy bytes at `offset` out of the buffer.
    fn ion_read(&self, fd: i32, offset: u64, out: &mut [u8]) -> Result<(), FastRpcError>;
    /// `memmove` of `len` bytes from `src_fd` at `src` to `dst_fd` at `dst` (the same buffer allowed).
    fn ion_copy(
        &self,
        dst_fd: i32,
        dst: u64,
        src_fd: i32,
        src: u64,
        len: u64,
    ) -> Result<(), FastRpcError>;
    /// Open the FastRPC channel node (closing nothing; fails if one is open).
    fn rpc_open(&self) -> Result<(), FastRpcError>;
    /// Close the channel node; blocked calls on it return an error.
    fn rpc_close(&self);
    /// FASTRPC_IOCTL_GETINFO with `value`; returns what the driver wrote back.
    fn getinfo(&self, value: u32) -> Result<u32, FastRpcError>;
    /// FASTRPC_IOCTL_CONTROL.
    fn control(&self, req: u32, words: [u32; 2]) -> Result<(), FastRpcError>;
    /// FASTRPC_IOCTL_INIT with `flags`, the shell ELF in ION buffer `shell` (file = its mapping, filelen =
    /// its length, filefd = its fd), mem/memlen/memfd 0.
    fn init(&self, flags: u32, shell: IonBuf) -> Result<(), FastRpcError>;
    /// FASTRPC_IOCTL_INVOKE; `args` must match `sc`.
    fn invoke(&self, handle: u32, sc: u32, args: &mut [Arg<'_>]) -> Result<(), FastRpcError>;
    /// FASTRPC_IOCTL_INVOKE_ATTRS; `fds` and `attrs` have one entry per arg.
    fn invoke_attrs(
        &self,
        handle: u32,
        sc: u32,
        args: &mut [Arg<'_>],
        fds: &[i32],
        attrs: &[u32],
    ) -> Result<(), FastRpcError>;
    /// FASTRPC_IOCTL_MMAP {fd, flags, vaddrin, size}; returns vaddrout (a DSP address).
    fn mmap(&self, fd: i32, flags: u32, vaddrin: u64, size: u64) -> Result<u64, FastRpcError>;
}

/// Check that `args` has the shape `sc` describes (counts and kinds, in order); `call` names the call.
pub fn check_args(call: &str, sc: u32, args: &[Arg<'_>]) -> Result<(), FastRpcError> {
    let s = scalars::Scalars::decode(sc);
    if args.len() != s.total() {
        return Err(FastRpcError::invalid(
            call,
            format!(
                "sc {sc:#010x} describes {} arguments, {} given",
                s.total(),
                args.len()
            ),
        ));
    }
    let (i, o) = (s.inbufs as usize, s.outbufs as usize);
    for (k, a) in args.iter().enumerate() {
        let ok = match a {
            Arg::In(_) => k < i,
            Arg::Out(_) => (i..i + o).contains(&k),
            Arg::Handle => k >= i + o,
        };
        if !ok {
            return Err(FastRpcError::invalid(
                call,
                format!("argument {k} has the wrong kind for sc {sc:#010x}"),
            ));
        }
    }
    Ok(())
}
