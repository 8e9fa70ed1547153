//! A FastRPC session on the cDSP (docs/hw/fastrpc.md §4): the shell ELF in an ION buffer, bring-up in the
//! documented order (process teardown of a previous channel, open, GETINFO 3, CONTROL KALLOC, INIT CREATE,
//! listener init), the listener thread answering the DSP loader's reverse calls, library open/close through the
//! remote-control handle, reset, and a bounded shutdown.
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::abi::{
    CDSP_DOMAIN, FASTRPC_CONTROL_KALLOC, FASTRPC_INIT_CREATE, ION_ALIGN, ION_FLAG_CACHED,
    ION_SYSTEM_HEAP_MASK,
};
use super::listener::{self, FileServer, NextMsg, SharedServer, BUF_CAP};
use super::scalars::{self, Scalars};
use super::{Arg, FastRpcError, FastRpcIo, IonBuf};

/// The URI the loader opens; `entry` is the library's invoke symbol, `_dom=cdsp` the compute DSP.
pub const LIB_URI: &str = "file:///tinylib?entry&_modver=1.0&_dom=cdsp";
/// Consecutive failed "next" calls after which the listener gives up.
const LISTENER_RETRIES: u32 = 8;

/// How to bring a session up.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// The `fastrpc_shell_3` ELF bytes.
    pub shell: Vec<u8>,
    /// Where `testsig-0x<serial>.so` may be served from.
    pub testsig_dir: Option<PathBuf>,
    /// How long shutdown waits for the listener thread.
    pub listener_timeout: Duration,
}

/// The listener thread, its result channel and its stop flag.
type Listener = (
    JoinHandle<()>,
    mpsc::Receiver<Result<(), FastRpcError>>,
    Arc<AtomicBool>,
);

/// A live session.
pub struct Session {
    io: Arc<dyn FastRpcIo>,
    shell: Option<IonBuf>,
    server: SharedServer,
    listener: Option<Listener>,
    timeout: Duration,
    /// One library load at a time: the listener serves whichever library is bound.
    loading: Mutex<()>,
}

impl Session {
    /// Put the shell into ION and bring the channel up.
    pub fn open(io: Arc<dyn FastRpcIo>, cfg: &SessionConfig) -> Result<Self, FastRpcError> {
        if cfg.shell.is_empty() {
            return Err(FastRpcError::invalid("INIT", "the shell ELF is empty"));
        }
        let len = (cfg.shell.len() as u64).div_ceil(4096) * 4096;
        let shell = io.ion_alloc(len, ION_ALIGN, ION_SYSTEM_HEAP_MASK, ION_FLAG_CACHED)?;
        io.ion_write(shell.fd, 0, &cfg.shell)?;
        let mut s = Session {
            io,
            shell: Some(shell),
            server: Arc::new(Mutex::new(FileServer::new(cfg.testsig_dir.clone()))),
            listener: None,
            timeout: cfg.listener_timeout,
            loading: Mutex::new(()),
        };
        s.bring_up(false)?;
        Ok(s)
    }

    /// The device surface.
    pub fn io(&self) -> &dyn FastRpcIo {
        &*self.io
    }

    fn bring_up(&mut self, reconnect: bool) -> Result<(), FastRpcError> {
        if reconnect {
            self.teardown();
        }
        self.io.rpc_open()?;
        self.io.getinfo(CDSP_DOMAIN)?;
        self.io.control(FASTRPC_CONTROL_KALLOC, [0, 0])?;
        let shell = self
            .shell
            .ok_or_else(|| FastRpcError::invalid("INIT", "the session is closed"))?;
        self.io.init(FASTRPC_INIT_CREATE, shell)?;
        self.io
            .invoke(scalars::HANDLE_LISTENER, scalars::SC_LISTENER_INIT, &mut [])?;
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let (io, server, st) = (self.io.clone(), self.server.clone(), stop.clone());
        let h = std::thread::Builder::new()
            .name("fastrpc-listener".into())
            .spawn(move || {
                let _ = tx.send(listen(&*io, &server, &st));
            })
            .map_err(|e| FastRpcError::invalid("listener thread", e.to_string()))?;
        self.listener = Some((h, rx, stop));
        Ok(())
    }

    /// Tear the channel down and redo the whole bring-up (what a launch failure asks for).
    pub fn reset(&mut self) -> Result<(), FastRpcError> {
        self.bring_up(true)
    }

    /// Whether the listener thread is still serving (it stops on a dead channel or an unknown reverse call).
    pub fn listener_error(&mut self) -> Option<FastRpcError> {
        let (_, rx, _) = self.listener.as_ref()?;
        match rx.try_recv() {
            Ok(Err(e)) => Some(e),
            Ok(Ok(())) | Err(mpsc::TryRecvError::Disconnected) => Some(FastRpcError::invalid(
                "listener",
                "the listener thread has stopped",
            )),
            Err(mpsc::TryRecvError::Empty) => None,
        }
    }

    /// Open `lib` (served as "tinylib") on the DSP; returns its handle. `name` is for errors.
    pub fn open_lib(&self, name: &str, lib: Arc<[u8]>) -> Result<u32, FastRpcError> {
        let _one_load = self
            .loading
            .lock()
            .map_err(|_| FastRpcError::invalid("open_lib", "poisoned"))?;
        self.server
            .lock()
            .map_err(|_| FastRpcError::invalid("open_lib", "listener poisoned"))?
            .bind(lib);
        let uri: Vec<u8> = LIB_URI.bytes().chain([0]).collect();
        let head = words(&[uri.len() as u32, 0xFF]);
        let (mut ret, mut err) = ([0u8; 8], [0u8; 255]);
        let mut args = [
            Arg::In(&head),
            Arg::In(&uri),
            Arg::Out(&mut ret),
            Arg::Out(&mut err),
        ];
        let call = format!("open_lib (kernel {name})");
        self.io
            .invoke(scalars::HANDLE_REMOTECTL, scalars::SC_OPEN_LIB, &mut args)
            .map_err(|e| e.context(&format!("open_lib of kernel {name}")))?;
        let status = i32::from_le_bytes([ret[4], ret[5], ret[6], ret[7]]);
        if status < 0 {
            let end = err.iter().position(|&c| c == 0).unwrap_or(err.len());
            return Err(FastRpcError::Remote {
                call,
                reason: format!("status {status}: {}", String::from_utf8_lossy(&err[..end])),
            });
        }
        Ok(u32::from_le_bytes([ret[0], ret[1], ret[2], ret[3]]))
    }

    /// Close a library handle.
    pub fn close_lib(&self, name: &str, handle: u32) -> Result<(), FastRpcError> {
        let head = words(&[handle, 0xFF]);
        let (mut ret, mut err) = ([0u8; 8], [0u8; 255]);
        let mut args = [Arg::In(&head), Arg::Out(&mut ret), Arg::Out(&mut err)];
        self.io
            .invoke(scalars::HANDLE_REMOTECTL, scalars::SC_CLOSE_LIB, &mut args)
            .map_err(|e| e.context(&format!("close_lib of kernel {name}")))
    }

    /// Process teardown, close the channel, and wait (bounded) for the listener to stop.
    fn teardown(&mut self) -> Option<FastRpcError> {
        let Some((h, rx, stop)) = self.listener.take() else {
            self.io.rpc_close();
            return None;
        };
        stop.store(true, Ordering::SeqCst);
        let _ = self
            .io
            .invoke(scalars::HANDLE_PROCESS, scalars::SC_PROCESS_EXIT, &mut []);
        self.io.rpc_close();
        match rx.recv_timeout(self.timeout) {
            Ok(_) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = h.join();
                None
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Some(FastRpcError::Timeout {
                call: "listener shutdown".into(),
                timeout_ms: self.timeout.as_millis() as u64,
            }),
        }
    }

    fn shutdown(&mut self) -> Option<FastRpcError> {
        let r = self.teardown();
        if let Some(b) = self.shell.take() {
            let _ = self.io.ion_free(b);
        }
        r
    }

    /// Shut down; reports a listener that did not stop in time (it is left detached, never waited on forever).
    pub fn close(mut self) -> Result<(), FastRpcError> {
        self.shutdown().map_or(Ok(()), Err)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The listener loop: send the previous reply, receive the next request, serve it.
fn listen(
    io: &dyn FastRpcIo,
    server: &SharedServer,
    stop: &AtomicBool,
) -> Result<(), FastRpcError> {
    let mut out_buf = vec![0u8; BUF_CAP];
    let mut in_buf = vec![0u8; BUF_CAP];
    let mut send = listener::encode_send(0, 0xFFFF_FFFF, 0);
    let mut resp_len = 0usize;
    let mut failures = 0;
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut recv = [0u8; 16];
        let mut args = [
            Arg::In(&send),
            Arg::In(&out_buf[..resp_len]),
            Arg::Out(&mut recv),
            Arg::Out(&mut in_buf),
        ];
        if let Err(e) = io.invoke(
            scalars::HANDLE_LISTENER,
            scalars::SC_LISTENER_NEXT,
            &mut args,
        ) {
            failures += 1;
            if stop.load(Ordering::SeqCst) {
                return Ok(());
            }
            if failures >= LISTENER_RETRIES {
                return Err(e.context("listener next"));
            }
            continue;
        }
        failures = 0;
        let msg = NextMsg::decode(&recv);
        let s = Scalars::decode(msg.sc);
        let bad = || FastRpcError::Remote {
            call: "listener".into(),
            reason: format!(
                "reverse call sc {:#010x} that this host does not serve",
                msg.sc
            ),
        };
        let req = listener::decode_request(&in_buf, s.inbufs as usize, s.outbufs as usize)
            .ok_or_else(bad)?;
        let (status, outs) = if msg.sc == listener::RSC_MMAP {
            serve_mmap(io, &req).ok_or_else(bad)?
        } else {
            let mut srv = server.lock().map_err(|_| bad())?;
            srv.serve(msg.sc, &req).ok_or_else(bad)?
        };
        let refs: Vec<&[u8]> = outs.iter().map(Vec::as_slice).collect();
        let (status, len) = match listener::encode_response(&mut out_buf, &refs) {
            Some(n) => (status, n),
            None => (1, 0),
        };
        resp_len = len;
        send = listener::encode_send(msg.ctx, status, len as u32);
    }
}

/// The DSP asks the host to map memory for it: FASTRPC_IOCTL_MMAP {fd −1, flags = rflags, vaddrin 0, size}.
fn serve_mmap(io: &dyn FastRpcIo, req: &listener::Request<'_>) -> Option<listener::Reply> {
    let a = req.ins.first()?;
    let rflags = u32::from_le_bytes(a.get(8..12)?.try_into().ok()?);
    let size = u64::from_le_bytes(a.get(24..32)?.try_into().ok()?);
    let mut out = vec![0u8; *req.out_sizes.first()? as usize];
    match io.mmap(-1, rflags, 0, size) {
        Ok(va) => {
            if let Some(s) = out.get_mut(8..16) {
                s.copy_from_slice(&va.to_le_bytes());
            }
            Some((0, vec![out]))
        }
        Err(_) => Some((1, vec![out])),
    }
}
