//! A DSP step (`Executor::run` on the Hexagon device: the input upload through the arena, one INVOKE_ATTRS of the
//! model library with the schedule table recorded at load, the output download) performs no heap allocation, under
//! a counting global allocator. The session, arena and library load go through the FastRPC model; the method-3
//! invoke itself is answered by a thin wrapper that allocates nothing (the model's own bookkeeping and qemu would),
//! so only modelrt's host path is counted. The bundle is the embedded selftest bundle.

mod noalloc_common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use modelrt_core::{Bundle, Executor};
use modelrt_hexagon::device::HexagonDevice;
use modelrt_hexagon::emu::device::{FastRpcModel, Refuse};
use modelrt_hexagon::fastrpc::scalars::Scalars;
use modelrt_hexagon::fastrpc::session::{Session, SessionConfig};
use modelrt_hexagon::fastrpc::{Arg, FastRpcError, FastRpcIo, IonBuf};
use noalloc_common::{Counting, ALLOCATIONS, COUNTING};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The FastRPC model, except that a model-level run (method 3) is answered in place: "every op of the table
/// completed" (the op count is the table's second word).
struct Answering {
    inner: FastRpcModel,
    runs: AtomicU32,
}

// SAFETY: delegates to the model (which upholds the contract); the method-3 answer reads the call's `In` table and
// writes only its 16-byte `Out` slice.
unsafe impl FastRpcIo for Answering {
    fn ion_alloc(
        &self,
        len: u64,
        align: u64,
        heap: u32,
        flags: u32,
    ) -> Result<IonBuf, FastRpcError> {
        self.inner.ion_alloc(len, align, heap, flags)
    }
    fn ion_free(&self, buf: IonBuf) -> Result<(), FastRpcError> {
        self.inner.ion_free(buf)
    }
    fn ion_write(&self, fd: i32, offset: u64, data: &[u8]) -> Result<(), FastRpcError> {
        self.inner.ion_write(fd, offset, data)
    }
    fn ion_read(&self, fd: i32, offset: u64, out: &mut [u8]) -> Result<(), FastRpcError> {
        self.inner.ion_read(fd, offset, out)
    }
    fn ion_copy(
        &self,
        dfd: i32,
        dst: u64,
        sfd: i32,
        src: u64,
        len: u64,
    ) -> Result<(), FastRpcError> {
        self.inner.ion_copy(dfd, dst, sfd, src, len)
    }
    fn rpc_open(&self) -> Result<(), FastRpcError> {
        self.inner.rpc_open()
    }
    fn rpc_close(&self) {
        self.inner.rpc_close()
    }
    fn getinfo(&self, value: u32) -> Result<u32, FastRpcError> {
        self.inner.getinfo(value)
    }
    fn control(&self, req: u32, words: [u32; 2]) -> Result<(), FastRpcError> {
        self.inner.control(req, words)
    }
    fn init(&self, flags: u32, shell: IonBuf) -> Result<(), FastRpcError> {
        self.inner.init(flags, shell)
    }
    fn invoke(&self, handle: u32, sc: u32, args: &mut [Arg<'_>]) -> Result<(), FastRpcError> {
        self.inner.invoke(handle, sc, args)
    }
    fn invoke_attrs(
        &self,
        handle: u32,
        sc: u32,
        args: &mut [Arg<'_>],
        fds: &[i32],
        attrs: &[u32],
    ) -> Result<(), FastRpcError> {
        if Scalars::decode(sc).method != 3 {
            return self.inner.invoke_attrs(handle, sc, args, fds, attrs);
        }
        assert_eq!((args.len(), fds.len(), attrs.len()), (3, 3, 3), "one arena");
        let Arg::In(table) = &args[0] else {
            panic!("pra[0] is the table")
        };
        let ops = u32::from_le_bytes([table[4], table[5], table[6], table[7]]);
        let Arg::Out(res) = &mut args[1] else {
            panic!("pra[1] is the result")
        };
        res[8..12].copy_from_slice(&ops.to_le_bytes());
        self.runs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn mmap(&self, fd: i32, flags: u32, vaddrin: u64, size: u64) -> Result<u64, FastRpcError> {
        self.inner.mmap(fd, flags, vaddrin, size)
    }
}

#[test]
fn hundred_dsp_steps_allocate_nothing() {
    let b = Bundle::parse(modelrt_hexagon::bundle::selftest::SELFTEST_BUNDLE).unwrap();
    let io = Arc::new(Answering {
        inner: FastRpcModel::new(Box::new(Refuse), Duration::from_secs(5)),
        runs: AtomicU32::new(0),
    });
    let mut shell = b"\x7fELF".to_vec();
    shell.resize(4096, 0);
    let cfg = SessionConfig {
        shell,
        testsig_dir: None,
        listener_timeout: Duration::from_secs(2),
    };
    let s = Session::open(io.clone(), &cfg).unwrap();
    let mut m = Executor::load(b.clone(), HexagonDevice::new(s)).unwrap();
    let init = u32::from(!b.body().init.is_empty());
    let r = b.body().reference.unwrap();
    let x = r.inputs.get(0).unwrap().data;
    let tout = b.body().outputs.get(0).unwrap();
    let mut out = vec![0u8; tout.byte_len() as usize];
    m.run(&[x], &mut [out.as_mut_slice()]).unwrap();
    COUNTING.store(true, Ordering::SeqCst);
    for _ in 0..100 {
        m.run(&[x], &mut [out.as_mut_slice()]).unwrap();
    }
    COUNTING.store(false, Ordering::SeqCst);
    assert_eq!(
        ALLOCATIONS.load(Ordering::SeqCst),
        0,
        "heap allocations in 100 DSP steps"
    );
    assert_eq!(
        io.runs.load(Ordering::Relaxed),
        init + 101,
        "one model-level invoke per step (and one for the init phase, if any)"
    );
    assert_eq!(m.device_mut().invokes(), u64::from(init) + 101);
    m.device_mut().close().unwrap();
}
