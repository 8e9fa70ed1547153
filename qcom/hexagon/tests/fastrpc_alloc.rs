//! The per-step path of the DSP engine ([`Loaded::step`] with [`Pattern::LoadOnce`]) allocates nothing: counted
//! by a global allocator on the stepping thread, over a device stub that itself never allocates in a launch.
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use modelrt_hexagon::fastrpc::engine::{Kernel, Loaded, Op, Pattern, Plan, View};
use modelrt_hexagon::fastrpc::session::{Session, SessionConfig};
use modelrt_hexagon::fastrpc::{Arg, FastRpcError, FastRpcIo, IonBuf};

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: forwards to the system allocator; only bumps a thread-local counter.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.with(|c| c.set(c.get() + 1));
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// A device that accepts everything and counts launches; its listener "next" waits until the channel closes.
#[derive(Default)]
struct Stub {
    next_fd: AtomicI32,
    open: AtomicBool,
    launches: AtomicI32,
}

// SAFETY: writes only the `Out` slices it is given, within their lengths; holds no memory.
unsafe impl FastRpcIo for Stub {
    fn ion_alloc(&self, len: u64, _: u64, _: u32, _: u32) -> Result<IonBuf, FastRpcError> {
        let fd = self.next_fd.fetch_add(1, Ordering::SeqCst) + 3;
        Ok(IonBuf {
            handle: fd,
            fd,
            len,
        })
    }
    fn ion_free(&self, _: IonBuf) -> Result<(), FastRpcError> {
        Ok(())
    }
    fn ion_write(&self, _: i32, _: u64, _: &[u8]) -> Result<(), FastRpcError> {
        Ok(())
    }
    fn ion_read(&self, _: i32, _: u64, _: &mut [u8]) -> Result<(), FastRpcError> {
        Ok(())
    }
    fn ion_copy(&self, _: i32, _: u64, _: i32, _: u64, _: u64) -> Result<(), FastRpcError> {
        Ok(())
    }
    fn rpc_open(&self) -> Result<(), FastRpcError> {
        self.open.store(true, Ordering::SeqCst);
        Ok(())
    }
    fn rpc_close(&self) {
        self.open.store(false, Ordering::SeqCst);
    }
    fn getinfo(&self, v: u32) -> Result<u32, FastRpcError> {
        Ok(v)
    }
    fn control(&self, _: u32, _: [u32; 2]) -> Result<(), FastRpcError> {
        Ok(())
    }
    fn init(&self, _: u32, _: IonBuf) -> Result<(), FastRpcError> {
        Ok(())
    }
    fn invoke(&self, handle: u32, sc: u32, args: &mut [Arg<'_>]) -> Result<(), FastRpcError> {
        if handle == 3 && sc == 0x0402_0200 {
            while self.open.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
            return Err(FastRpcError::Invalid {
                call: "next".into(),
                reason: "closed".into(),
            });
        }
        if let Some(Arg::Out(ret)) = args.get_mut(2) {
            ret[..4].copy_from_slice(&0x100u32.to_le_bytes()); // open_lib: handle 0x100, status 0
        }
        Ok(())
    }
    fn invoke_attrs(
        &self,
        _: u32,
        _: u32,
        _: &mut [Arg<'_>],
        _: &[i32],
        _: &[u32],
    ) -> Result<(), FastRpcError> {
        self.launches.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn mmap(&self, _: i32, _: u32, _: u64, _: u64) -> Result<u64, FastRpcError> {
        Ok(0)
    }
}

#[test]
fn a_load_once_step_allocates_nothing() {
    let stub = Arc::new(Stub::default());
    let cfg = SessionConfig {
        shell: vec![0x7F; 100],
        testsig_dir: None,
        listener_timeout: Duration::from_secs(2),
    };
    let s = Session::open(stub.clone(), &cfg).unwrap();
    let v = |buffer, offset, size| View {
        buffer,
        offset,
        size,
    };
    let plan = Plan {
        kernels: vec![Kernel {
            name: "k".into(),
            lib: Arc::from(vec![0u8; 16]),
        }],
        buffers: vec![1024, 1024],
        ops: vec![
            Op::Launch {
                kernel: 0,
                bufs: vec![v(1, 0, 1024), v(0, 0, 1024)],
                vals: vec![3, 4],
            },
            Op::Copy {
                dst: v(0, 0, 512),
                src: v(1, 512, 512),
            },
            Op::Launch {
                kernel: 0,
                bufs: vec![v(0, 128, 256)],
                vals: vec![],
            },
        ],
    };
    let mut l = Loaded::load(&s, plan, Pattern::LoadOnce).unwrap();
    l.step().unwrap(); // warm-up
    COUNTING.with(|c| c.set(true));
    for _ in 0..10 {
        l.step().unwrap();
    }
    COUNTING.with(|c| c.set(false));
    assert_eq!(ALLOCS.with(Cell::get), 0, "allocations in 10 steps");
    assert_eq!(
        stub.launches.load(Ordering::SeqCst),
        22,
        "2 launches per step reached the device"
    );
    l.unload().unwrap();
    s.close().unwrap();
}
