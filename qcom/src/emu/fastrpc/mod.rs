//! A FastRPC + ION device model behind [`FastRpcIo`], written from the documented device (docs/hw/fastrpc.md §6),
//! not from modelrt's driver: it validates every call and argument (ION alloc parameters, fds, bring-up order,
//! scalars words and argument shapes, the 15-handle limit, 128-byte alignment of every buffer view — which the
//! hardware needs and qemu does not check), tracks the channel, libraries and mappings, plays the DSP loader
//! against the host's listener thread, and hands validated launches to a [`DspExecutor`]. Faults can be injected
//! (session death, invoke error, a launch that never answers). It counts every call by kind.
pub mod exec;
mod run;
pub mod wire;

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::dsp::listener as lst;
use crate::dsp::sc::{self, Scalars};
use crate::dsp::{abi, Arg, FastRpcError, FastRpcIo, IonBuf};
pub use exec::{DspExecutor, Launch, Qemu, Refuse, Run};

/// Calls the model saw, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub open_lib: u32,
    pub close_lib: u32,
    pub launch: u32,
    /// Model-level invokes (a whole schedule in one call).
    pub run: u32,
    pub listener_next: u32,
    pub other_invoke: u32,
    pub ion_alloc: u32,
}

impl Counts {
    /// Invokes on the application's side (library open/close, launches and model-level runs), the listener
    /// excluded.
    pub fn app_invokes(&self) -> u32 {
        self.open_lib + self.close_lib + self.launch + self.run
    }
}

/// An injected fault, taking effect at the next launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The DSP process dies: this and every later call fails until the channel is reopened.
    SessionDies,
    /// The launch fails with this errno.
    InvokeError(i32),
    /// The launch never answers; the model gives up after its wait bound with ETIMEDOUT.
    Hang,
}

struct IonObj {
    len: u64,
    data: Vec<u8>,
    fd: i32,
}

#[derive(Default)]
struct Channel {
    info: bool,
    kalloc: bool,
    process: bool,
    listener: bool,
    dead: bool,
}

#[derive(Default)]
struct State {
    ion: HashMap<i32, IonObj>,
    fd_to_handle: HashMap<i32, i32>,
    next_id: i32,
    chan: Option<Channel>,
    generation: u64,
    libs: HashMap<u32, Vec<u8>>,
    next_lib: u32,
    next_ctx: u32,
    /// A reverse request waiting for the listener: (ctx, sc, request bytes).
    pending: Option<(u32, u32, Vec<u8>)>,
    /// Requests the listener has taken: ctx → (sc).
    taken: Option<(u32, u32)>,
    /// The listener's reply: (ctx, status, response bytes).
    reply: Option<(u32, u32, Vec<u8>)>,
    fault: Option<Fault>,
    counts: Counts,
}

/// The model.
pub struct FastRpcModel {
    st: Mutex<State>,
    cv: Condvar,
    exec: Mutex<Box<dyn DspExecutor>>,
    wait: Duration,
}

fn err(call: &str, errno: i32, reason: impl Into<String>) -> FastRpcError {
    FastRpcError::Errno {
        call: call.into(),
        errno,
        reason: reason.into(),
    }
}

fn einval(call: &str, reason: impl Into<String>) -> FastRpcError {
    err(call, libc::EINVAL, reason)
}

impl FastRpcModel {
    /// A model whose launches go to `exec`; reverse calls and hung launches are waited on for at most `wait`.
    pub fn new(exec: Box<dyn DspExecutor>, wait: Duration) -> Self {
        FastRpcModel {
            st: Mutex::new(State {
                next_id: 3,
                next_lib: 0x100,
                ..Default::default()
            }),
            cv: Condvar::new(),
            exec: Mutex::new(exec),
            wait,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the model counted so far.
    pub fn counts(&self) -> Counts {
        self.lock().counts
    }

    /// Inject a fault for the next launch.
    pub fn inject(&self, f: Fault) {
        self.lock().fault = Some(f);
    }

    /// Live ION buffers (for leak checks).
    pub fn live_ion(&self) -> usize {
        self.lock().ion.len()
    }

    /// Libraries currently open on the DSP.
    pub fn open_libs(&self) -> usize {
        self.lock().libs.len()
    }

    fn chan<'a>(st: &'a mut State, call: &str) -> Result<&'a mut Channel, FastRpcError> {
        match st.chan.as_mut() {
            None => Err(err(call, libc::EBADF, "the FastRPC channel is not open")),
            Some(c) if c.dead => Err(err(call, libc::ECONNRESET, "the DSP session died")),
            Some(c) => Ok(c),
        }
    }

    fn ready<'a>(st: &'a mut State, call: &str) -> Result<&'a mut Channel, FastRpcError> {
        let c = Self::chan(st, call)?;
        if !c.process || !c.listener {
            return Err(einval(call, "invoke before INIT and listener init"));
        }
        Ok(c)
    }

    /// A copy of the open library `handle` (the executor runs it after the state is unlocked).
    fn lib(st: &State, handle: u32, call: &str) -> Result<Vec<u8>, FastRpcError> {
        st.libs.get(&handle).cloned().ok_or_else(|| {
            err(
                call,
                libc::EBADF,
                format!("handle {handle:#x} is not an open library"),
            )
        })
    }

    /// Whether the fd and attr lists of an invoke whose first `k` arguments are in-call buffers
    /// (callers have checked both lists are longer than `k`) are `[-1; k]` then dma-buf fds and
    /// `[0; k]` then NOVA (docs/hw/fastrpc.md).
    fn arena_lists_ok(fds: &[i32], attrs: &[u32], k: usize) -> bool {
        fds[..k].iter().all(|&f| f == -1)
            && attrs[..k].iter().all(|&a| a == 0)
            && attrs[k..].iter().all(|&a| a == abi::FASTRPC_ATTR_NOVA)
    }

    fn obj<'a>(st: &'a State, fd: i32, call: &str) -> Result<&'a IonObj, FastRpcError> {
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

    fn range(
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

    /// One reverse call through the host's listener, bounded by the model's wait.
    fn reverse(
        &self,
        sc: u32,
        ins: &[&[u8]],
        out_sizes: &[u32],
    ) -> Result<(u32, Vec<Vec<u8>>), String> {
        let deadline = Instant::now() + self.wait;
        let mut st = self.lock();
        st.next_ctx += 1;
        let ctx = st.next_ctx;
        st.pending = Some((ctx, sc, wire::encode_request(ins, out_sizes)));
        st.reply = None;
        self.cv.notify_all();
        loop {
            if let Some((c, status, resp)) = st.reply.take() {
                if c != ctx {
                    return Err(format!("listener answered context {c}, {ctx} was asked"));
                }
                let outs = if status == 0 {
                    wire::decode_response(&resp, out_sizes)?
                } else {
                    vec![]
                };
                return Ok((status, outs));
            }
            if st.chan.as_ref().is_none_or(|c| c.dead) {
                return Err("the channel closed while the loader waited for the listener".into());
            }
            let now = Instant::now();
            if now >= deadline {
                st.pending = None;
                return Err(format!(
                    "the host listener did not answer reverse call {sc:#010x} in {:?}",
                    self.wait
                ));
            }
            st = self
                .cv
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// The DSP loader: fetch "tinylib" through the listener and check it.
    fn load_library(&self, name: &str) -> Result<Vec<u8>, String> {
        let mut path = name.as_bytes().to_vec();
        path.push(0);
        let (status, outs) = self.reverse(lst::RSC_OPEN, &[&[0; 4], &[], &[], &path, &[]], &[4])?;
        let fd = outs
            .first()
            .and_then(|o| o.get(..4))
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        if status != 0 || fd != Some(lst::LIB_FD) {
            return Err(format!(
                "open of {name:?} answered status {status}, fd {fd:?} (expected fd 0xFFFF)"
            ));
        }
        let words = |w: &[u32]| w.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        let (status, _) = self.reverse(lst::RSC_SEEK, &[&words(&[lst::LIB_FD, 0, 0])], &[])?;
        if status != 0 {
            return Err(format!("seek answered status {status}"));
        }
        let mut lib = Vec::new();
        const CHUNK: u32 = 0x8000;
        loop {
            let (status, outs) =
                self.reverse(lst::RSC_READ, &[&words(&[lst::LIB_FD, CHUNK])], &[8, CHUNK])?;
            let (Some(head), Some(data)) = (outs.first(), outs.get(1)) else {
                return Err(format!("read answered status {status} without data"));
            };
            let n = head
                .get(..4)
                .map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            if status != 0 || n as usize != data.len() {
                return Err(format!(
                    "read answered status {status}, {n} bytes for {}",
                    data.len()
                ));
            }
            if n == 0 {
                break;
            }
            lib.extend_from_slice(data);
            if lib.len() > 64 << 20 {
                return Err("library larger than 64 MiB".into());
            }
        }
        self.reverse(lst::RSC_CLOSE, &[&words(&[lst::LIB_FD])], &[])?;
        wire::check_library(&lib)?;
        Ok(lib)
    }

    fn open_lib(&self, args: &mut [Arg<'_>]) -> Result<(), FastRpcError> {
        let call = "INVOKE open_lib";
        let (Arg::In(head), Arg::In(uri)) = (&args[0], &args[1]) else {
            unreachable!("shape checked")
        };
        let sizes_ok = matches!((&args[2], &args[3]), (Arg::Out(a), Arg::Out(b)) if a.len() == 8 && b.len() == 255);
        if head.len() != 8 || !sizes_ok {
            return Err(einval(
                call,
                "open_lib takes in u32[2], in URI, out 8 bytes, out 255 bytes",
            ));
        }
        let ulen = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        if ulen != uri.len() || uri.last() != Some(&0) {
            return Err(einval(
                call,
                "the URI length word must count the URI with its NUL",
            ));
        }
        let text = String::from_utf8_lossy(&uri[..uri.len() - 1]).into_owned();
        let parsed = text
            .strip_prefix("file:///")
            .and_then(|r| r.split_once('?'))
            .filter(|(_, q)| {
                q.split('&').next() == Some("entry") && q.split('&').any(|p| p == "_dom=cdsp")
            });
        let Some((name, _)) = parsed else {
            return Err(einval(
                call,
                format!("URI {text:?} is not file:///<name>?entry&…&_dom=cdsp"),
            ));
        };
        let res = self.load_library(name);
        let (mut status, mut msg, mut handle) = (0i32, String::new(), 0u32);
        match res {
            Ok(lib) => {
                let mut st = self.lock();
                handle = st.next_lib;
                st.next_lib += 1;
                st.libs.insert(handle, lib);
            }
            Err(e) => {
                status = -1;
                msg = e;
            }
        }
        if let [_, _, Arg::Out(ret), Arg::Out(text)] = args {
            ret[..4].copy_from_slice(&handle.to_le_bytes());
            ret[4..].copy_from_slice(&status.to_le_bytes());
            let n = msg.len().min(254);
            text[..n].copy_from_slice(&msg.as_bytes()[..n]);
        }
        Ok(())
    }

    fn listener_next(&self, args: &mut [Arg<'_>]) -> Result<(), FastRpcError> {
        let call = "INVOKE listener next";
        let (Arg::In(send), Arg::In(resp)) = (&args[0], &args[1]) else {
            unreachable!("shape checked")
        };
        let shapes = matches!((&args[2], &args[3]), (Arg::Out(r), Arg::Out(b)) if r.len() == 16 && b.len() == lst::BUF_CAP);
        if send.len() != 16 || resp.len() > lst::BUF_CAP || !shapes {
            return Err(einval(
                call,
                "next takes in 16 bytes, in ≤ 64 KiB, out 16 bytes, out 64 KiB",
            ));
        }
        let w = |i: usize| {
            u32::from_le_bytes([
                send[4 * i],
                send[4 * i + 1],
                send[4 * i + 2],
                send[4 * i + 3],
            ])
        };
        let (ctx, status, len, cap) = (w(0), w(1), w(2), w(3));
        if len as usize != resp.len() || cap as usize != lst::BUF_CAP {
            return Err(einval(
                call,
                "msg_send's length/capacity words disagree with the buffers",
            ));
        }
        let mut st = self.lock();
        Self::ready(&mut st, call)?;
        let gen = st.generation;
        match st.taken.take() {
            Some((c, _)) if c == ctx => st.reply = Some((ctx, status, resp.to_vec())),
            Some((c, _)) => {
                return Err(einval(
                    call,
                    format!("reply for context {ctx}, {c} is outstanding"),
                ))
            }
            None if status != 0xFFFF_FFFF || ctx != 0 => {
                return Err(einval(call, "a reply with no outstanding request"));
            }
            None => {}
        }
        self.cv.notify_all();
        loop {
            if st.generation != gen || st.chan.as_ref().is_none_or(|c| c.dead) {
                return Err(err(call, libc::ECONNRESET, "the channel closed"));
            }
            if let Some((c, rsc, req)) = st.pending.take() {
                st.taken = Some((c, rsc));
                if req.len() > lst::BUF_CAP {
                    return Err(einval(
                        call,
                        "reverse request larger than the request buffer",
                    ));
                }
                if let [_, _, Arg::Out(recv), Arg::Out(buf)] = args {
                    recv[..4].copy_from_slice(&c.to_le_bytes());
                    recv[4..8].copy_from_slice(&0u32.to_le_bytes());
                    recv[8..12].copy_from_slice(&rsc.to_le_bytes());
                    buf[..req.len()].copy_from_slice(&req);
                }
                return Ok(());
            }
            st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Take the injected fault, if any, for the call in progress: the session dies (ECONNRESET), the call fails
    /// with an errno, or it never answers (ETIMEDOUT after the wait bound). Without a fault the lock comes back.
    fn apply_fault<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        call: &str,
    ) -> Result<MutexGuard<'a, State>, FastRpcError> {
        match st.fault.take() {
            Some(Fault::SessionDies) => {
                if let Some(c) = st.chan.as_mut() {
                    c.dead = true;
                }
                st.libs.clear();
                self.cv.notify_all();
                Err(err(call, libc::ECONNRESET, "the DSP session died"))
            }
            Some(Fault::InvokeError(e)) => Err(err(call, e, "injected invoke failure")),
            Some(Fault::Hang) => {
                let gen = st.generation;
                let deadline = Instant::now() + self.wait;
                while Instant::now() < deadline && st.generation == gen {
                    st = self
                        .cv
                        .wait_timeout(st, deadline - Instant::now())
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                Err(FastRpcError::Timeout {
                    call: call.into(),
                    timeout_ms: self.wait.as_millis() as u64,
                })
            }
            None => Ok(st),
        }
    }

    /// Move the contents of the ION buffers `handles` out of the state, release the lock, run `f` on the
    /// executor with them, and put them back.
    fn execute<R>(
        &self,
        mut st: MutexGuard<'_, State>,
        handles: &[i32],
        f: impl FnOnce(&mut dyn DspExecutor, &mut [Vec<u8>]) -> R,
    ) -> R {
        let mut bufs: Vec<Vec<u8>> = handles
            .iter()
            .map(|h| std::mem::take(&mut st.ion.get_mut(h).expect("live").data))
            .collect();
        drop(st);
        let r = f(
            &mut **self.exec.lock().unwrap_or_else(|p| p.into_inner()),
            &mut bufs,
        );
        let mut st = self.lock();
        for (h, b) in handles.iter().zip(bufs) {
            if let Some(o) = st.ion.get_mut(h) {
                o.data = b;
            }
        }
        r
    }

    fn launch(
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
        if fds.len() != 3 + n || attrs.len() != 3 + n {
            return Err(einval(call, "fds/attrs must have 3 + nbufs entries"));
        }
        if !Self::arena_lists_ok(fds, attrs, 3) {
            return Err(einval(
                call,
                "fds must be [-1,-1,-1, fd…] and attrs [0,0,0, NOVA…]",
            ));
        }
        let (Arg::In(p0), Arg::In(p1)) = (&args[0], &args[1]) else {
            unreachable!("shape checked")
        };
        if !p0.len().is_multiple_of(8)
            || p0.len() < 8 * n
            || p1.len() != 4 * n
            || !matches!(&args[2], Arg::Out(t) if t.len() == 8)
        {
            return Err(einval(
                call,
                "pra[0] must be 8·(nbufs+nvals), pra[1] 4·nbufs, pra[2] 8 bytes",
            ));
        }
        let slot = |i: usize| u64::from_le_bytes(p0[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
        let vals: Vec<u64> = (n..p0.len() / 8).map(slot).collect();
        let mut st = self.lock();
        Self::ready(&mut st, call)?;
        let lib = Self::lib(&st, handle, call)?;
        let mut order: Vec<i32> = Vec::new();
        let mut views = Vec::with_capacity(n);
        for i in 0..n {
            let size = slot(i) as u32 as i32;
            let off = u32::from_le_bytes(p1[4 * i..4 * i + 4].try_into().unwrap_or([0; 4]));
            let o = Self::obj(&st, fds[3 + i], call)?;
            if size < 0 {
                return Err(einval(call, format!("buffer {i} has negative size {size}")));
            }
            Self::range(o, off.into(), size as u64, call)?;
            if !off.is_multiple_of(128) {
                return Err(einval(
                    call,
                    format!("buffer {i} at offset {off} is not 128-byte aligned (the DSP faults)"),
                ));
            }
            let k = order
                .iter()
                .position(|&f| f == fds[3 + i])
                .unwrap_or_else(|| {
                    order.push(fds[3 + i]);
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

    fn ion_free(&self, buf: IonBuf) -> Result<(), FastRpcError> {
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

    fn ion_write(&self, fd: i32, offset: u64, data: &[u8]) -> Result<(), FastRpcError> {
        let mut st = self.lock();
        let h = Self::obj(&st, fd, "ion_write")?;
        let r = Self::range(h, offset, data.len() as u64, "ion_write")?;
        let h = st.fd_to_handle[&fd];
        st.ion.get_mut(&h).expect("live").data[r].copy_from_slice(data);
        Ok(())
    }

    fn ion_read(&self, fd: i32, offset: u64, out: &mut [u8]) -> Result<(), FastRpcError> {
        let st = self.lock();
        let o = Self::obj(&st, fd, "ion_read")?;
        out.copy_from_slice(&o.data[Self::range(o, offset, out.len() as u64, "ion_read")?]);
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
        crate::dsp::check_args("INVOKE", sc, args).map_err(|e| einval("INVOKE", e.to_string()))?;
        let mut st = self.lock();
        match (handle, sc) {
            (sc::HANDLE_LISTENER, sc::SC_LISTENER_INIT) => {
                let c = Self::chan(&mut st, "INVOKE listener init")?;
                if !c.process || c.listener {
                    return Err(einval("INVOKE listener init", "must follow INIT, once"));
                }
                c.listener = true;
                Ok(())
            }
            (sc::HANDLE_LISTENER, sc::SC_LISTENER_NEXT) => {
                st.counts.listener_next += 1;
                drop(st);
                self.listener_next(args)
            }
            (sc::HANDLE_PROCESS, sc::SC_PROCESS_EXIT) => {
                st.counts.other_invoke += 1;
                Self::chan(&mut st, "INVOKE process exit")?;
                st.libs.clear();
                Ok(())
            }
            (sc::HANDLE_REMOTECTL, sc::SC_OPEN_LIB) => {
                st.counts.open_lib += 1;
                Self::ready(&mut st, "INVOKE open_lib")?;
                drop(st);
                self.open_lib(args)
            }
            (sc::HANDLE_REMOTECTL, sc::SC_CLOSE_LIB) => {
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
        crate::dsp::check_args("INVOKE_ATTRS", sc, args)
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
