//! A FastRPC + ION device model behind [`FastRpcIo`], written from the documented device (docs/hw/fastrpc.md §6),
//! not from modelrt's driver: it validates every call and argument (ION alloc parameters, fds, bring-up order,
//! scalars words and argument shapes, the 15-handle limit, 128-byte alignment of every buffer view — which the
//! hardware needs and qemu does not check), tracks the channel, libraries and mappings, plays the DSP loader
//! against the host's listener thread, and hands validated launches to a [`DspExecutor`]. Faults can be injected
//! (session death, invoke error, a launch that never answers). It counts every call by kind.
//!
//! Parts: [`exec`] (executors), [`wire`] (reverse-call messages and library checks); private: `io` (the
//! [`FastRpcIo`] implementation: channel bring-up and invoke dispatch), `ion` (ION allocation and buffer access),
//! `loader` (library loading through the host's listener), `launch` (one kernel launch), `run` (one model-level
//! run of a whole schedule).
pub mod exec;
// the `unsafe impl FastRpcIo` for the model (its contract: docs in crate::fastrpc::io)
#[allow(unsafe_code)]
mod io;
mod ion;
mod launch;
mod loader;
mod run;
pub mod wire;

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

#[cfg(doc)]
use crate::fastrpc::FastRpcIo;
use crate::fastrpc::{abi, FastRpcError};
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
}
