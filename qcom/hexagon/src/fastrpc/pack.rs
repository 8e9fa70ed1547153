//! Packing one kernel launch into the INVOKE_ATTRS arguments (docs/hw/fastrpc.md §5): `pra[0]` = one 8-byte slot
//! per buffer (its size as i32) then per scalar; `pra[1]` = one u32 byte offset per buffer; `pra[2]` = the 8-byte
//! timer the DSP writes (µs); pra[3..3+nbufs] = handle slots whose dma-buf fds travel in `fds` (−1 for the three
//! buffers) with attribute NOVA (0 for the buffers). A [`LaunchFrame`] is built once at load time; a launch
//! then only borrows it, so the per-step path allocates nothing.
use super::abi::FASTRPC_ATTR_NOVA;
use super::layout::{LAUNCH_FIXED_ARGS, LAUNCH_OFFSET, LAUNCH_SLOT, LAUNCH_TIMER};
use super::scalars::{launch_sc, MAX_LAUNCH_BUFFERS};
use super::{Arg, FastRpcError};

/// Every buffer (and sub-buffer) start must be 128-byte aligned: kernels declare `align_value(128)`.
pub use super::layout::BUFFER_ALIGN;

/// One buffer argument: a view of a dma-buf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufView {
    pub fd: i32,
    pub offset: u32,
    pub size: u32,
}

/// The prepacked arguments of one launch.
#[derive(Clone, Debug)]
pub struct LaunchFrame {
    sc: u32,
    sizes_vals: Vec<u8>,
    offsets: Vec<u8>,
    timer: [u8; LAUNCH_TIMER],
    fds: Vec<i32>,
    attrs: Vec<u32>,
}

impl LaunchFrame {
    /// Pack `bufs` and the 8-byte scalar slots `vals`; refuses > 15 buffers, unaligned views and sizes that
    /// do not fit the i32 size slot.
    pub fn new(bufs: &[BufView], vals: &[u64]) -> Result<Self, FastRpcError> {
        let call = "launch packing";
        let sc = launch_sc(bufs.len()).ok_or_else(|| {
            FastRpcError::invalid(
                call,
                format!(
                    "{} buffers (FastRPC carries at most {MAX_LAUNCH_BUFFERS})",
                    bufs.len()
                ),
            )
        })?;
        let mut sizes_vals = Vec::with_capacity(LAUNCH_SLOT * (bufs.len() + vals.len()));
        let mut offsets = Vec::with_capacity(LAUNCH_OFFSET * bufs.len());
        for (i, b) in bufs.iter().enumerate() {
            if !b.offset.is_multiple_of(BUFFER_ALIGN) {
                return Err(FastRpcError::invalid(
                    call,
                    format!(
                        "buffer {i} view at offset {} is not {BUFFER_ALIGN}-byte aligned",
                        b.offset
                    ),
                ));
            }
            let size = i32::try_from(b.size).map_err(|_| {
                FastRpcError::invalid(call, format!("buffer {i} size {} exceeds i32", b.size))
            })?;
            sizes_vals.extend_from_slice(&i64::from(size).to_le_bytes());
            offsets.extend_from_slice(&b.offset.to_le_bytes());
        }
        for v in vals {
            sizes_vals.extend_from_slice(&v.to_le_bytes());
        }
        let mut fds = vec![-1; LAUNCH_FIXED_ARGS];
        fds.extend(bufs.iter().map(|b| b.fd));
        let mut attrs = vec![0; LAUNCH_FIXED_ARGS];
        attrs.extend(bufs.iter().map(|_| FASTRPC_ATTR_NOVA));
        Ok(LaunchFrame {
            sc,
            sizes_vals,
            offsets,
            timer: [0; LAUNCH_TIMER],
            fds,
            attrs,
        })
    }

    /// The scalars word.
    pub fn sc(&self) -> u32 {
        self.sc
    }

    /// Number of buffers.
    pub fn nbufs(&self) -> usize {
        self.fds.len() - LAUNCH_FIXED_ARGS
    }

    /// `pra[0]`'s bytes.
    pub fn sizes_vals(&self) -> &[u8] {
        &self.sizes_vals
    }

    /// `pra[1]`'s bytes.
    pub fn offsets(&self) -> &[u8] {
        &self.offsets
    }

    /// The µs the DSP reported for the last launch.
    pub fn timer_us(&self) -> u64 {
        u64::from_le_bytes(self.timer)
    }

    /// Issue the launch on `handle` through `io` (no allocation).
    pub fn invoke(&mut self, io: &dyn super::FastRpcIo, handle: u32) -> Result<(), FastRpcError> {
        let n = LAUNCH_FIXED_ARGS + self.nbufs();
        let mut args: [Arg<'_>; LAUNCH_FIXED_ARGS + MAX_LAUNCH_BUFFERS] =
            std::array::from_fn(|_| Arg::Handle);
        args[0] = Arg::In(&self.sizes_vals);
        args[1] = Arg::In(&self.offsets);
        args[2] = Arg::Out(&mut self.timer);
        io.invoke_attrs(handle, self.sc, &mut args[..n], &self.fds, &self.attrs)
    }
}
