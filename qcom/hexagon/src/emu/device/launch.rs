//! One kernel launch in the FastRPC device model (method 2, INVOKE_ATTRS on a kernel library's handle): the
//! scalars word, fd/attr lists and argument sizes are checked, every buffer view must lie inside its ION buffer
//! at a 128-byte aligned offset, and the validated launch goes to the executor (docs/hw/fastrpc.md §4).
//! The slot sizes and the alignment are the documented layout's ([`crate::fastrpc::layout`], shared with the host's
//! packer); the decoding below is the model's own, never the packer's code.
use super::{einval, FastRpcModel, Launch};
use crate::fastrpc::layout::{
    BUFFER_ALIGN, LAUNCH_FIXED_ARGS as FIXED, LAUNCH_OFFSET as OFF, LAUNCH_SLOT as SLOT,
    LAUNCH_TIMER,
};
use crate::fastrpc::scalars::Scalars;
use crate::fastrpc::{Arg, FastRpcError};

impl FastRpcModel {
    pub(super) fn launch(
        &self,
        handle: u32,
        sc: u32,
        args: &mut [Arg<'_>],
        fds: &[i32],
        attrs: &[u32],
    ) -> Result<(), FastRpcError> {
        let call = "INVOKE_ATTRS launch";
        let s = Scalars::decode(sc);
        if s.method != 2 || s.inbufs != 2 || s.outbufs != 1 || s.inhandles != 0 || s.attr != 0 {
            return Err(einval(
                call,
                format!("sc {sc:#010x} is not a launch (method 2, 2 in, 1 out, nbufs)"),
            ));
        }
        let n = s.outhandles as usize;
        if fds.len() != FIXED + n || attrs.len() != FIXED + n {
            return Err(einval(call, "fds/attrs must have 3 + nbufs entries"));
        }
        if !Self::arena_lists_ok(fds, attrs, FIXED) {
            return Err(einval(
                call,
                "fds must be [-1,-1,-1, fd…] and attrs [0,0,0, NOVA…]",
            ));
        }
        let (Arg::In(p0), Arg::In(p1)) = (&args[0], &args[1]) else {
            unreachable!("shape checked")
        };
        if !p0.len().is_multiple_of(SLOT)
            || p0.len() < SLOT * n
            || p1.len() != OFF * n
            || !matches!(&args[2], Arg::Out(t) if t.len() == LAUNCH_TIMER)
        {
            return Err(einval(
                call,
                "pra[0] must be 8·(nbufs+nvals), pra[1] 4·nbufs, pra[2] 8 bytes",
            ));
        }
        let slot = |i: usize| {
            u64::from_le_bytes(p0[SLOT * i..SLOT * (i + 1)].try_into().unwrap_or([0; 8]))
        };
        let vals: Vec<u64> = (n..p0.len() / SLOT).map(slot).collect();
        let mut st = self.lock();
        Self::ready(&mut st, call)?;
        let lib = Self::lib(&st, handle, call)?;
        let mut order: Vec<i32> = Vec::new();
        let mut views = Vec::with_capacity(n);
        for i in 0..n {
            let size = slot(i) as u32 as i32;
            let off = u32::from_le_bytes(p1[OFF * i..OFF * (i + 1)].try_into().unwrap_or([0; 4]));
            let o = Self::obj(&st, fds[FIXED + i], call)?;
            if size < 0 {
                return Err(einval(call, format!("buffer {i} has negative size {size}")));
            }
            Self::range(o, off.into(), size as u64, call)?;
            if !off.is_multiple_of(BUFFER_ALIGN) {
                return Err(einval(
                    call,
                    format!("buffer {i} at offset {off} is not {BUFFER_ALIGN}-byte aligned (the DSP faults)"),
                ));
            }
            let k = order
                .iter()
                .position(|&f| f == fds[FIXED + i])
                .unwrap_or_else(|| {
                    order.push(fds[FIXED + i]);
                    order.len() - 1
                });
            views.push((k as u32, off, size as u32));
        }
        st.counts.launch += 1;
        let st = self.apply_fault(st, call)?;
        let handles: Vec<i32> = order.iter().map(|f| st.fd_to_handle[f]).collect();
        let r = self.execute(st, &handles, |exec, bufs| {
            exec.launch(Launch {
                lib: &lib,
                vals: &vals,
                buffers: bufs,
                views: &views,
            })
        });
        let us = r.map_err(|e| FastRpcError::Remote {
            call: call.into(),
            reason: e,
        })?;
        if let Arg::Out(t) = &mut args[2] {
            t.copy_from_slice(&us.to_le_bytes());
        }
        Ok(())
    }
}
