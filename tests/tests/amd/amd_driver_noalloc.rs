//! "Zero allocations in `run`" for the AMD device: a policy amd-gfx1100 bundle runs on
//! the AM driver over the Navi31 model (kernels on the RDNA3 interpreter), and across 10 runs after
//! warm-up the driver and the executor make no heap allocation.
//!
//! The emulator runs on the calling thread, so a plain counting allocator would also count the
//! bridge emulator, the GPU model and the interpreter. The transport the driver talks to is wrapped
//! in [`Flagged`], which sets a thread-local "inside the emulator" flag around every call into the
//! emulator's transport (and the emulated clock); the counting allocator ignores allocations made
//! while the flag is set. What remains is the driver's (and `modelrt_core::Executor`'s) own.
// The AM driver tests' shared setup lives with modelrt-amd's own driver tests.
use super::amd_driver_support;
use amd_driver_support::firmware_dir;
use modelrt_amd::assembly::with_model_errors;
use modelrt_amd::boot::{Am, BootOptions};
use modelrt_amd::device::AmdDevice;
use modelrt_amd::emu::navi31_gpu::Navi31Model;
use modelrt_asm24::counting::Counting;
use modelrt_asm24::emu::bridge::BridgeEmulator;
use modelrt_asm24::Bridge;
use modelrt_core::{Bundle, Executor};
use modelrt_hal::usb::{Transfer, UsbError, UsbTransport};
use modelrt_tests::{compile, python, root};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

thread_local! {
    /// Set while the emulator (bridge, GPU model, interpreter) runs on this thread.
    static INSIDE_EMULATOR: Cell<bool> = const { Cell::new(false) };
    /// Set on the thread whose allocations are being counted.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

/// Allocations (alloc, alloc_zeroed, realloc) made on a counting thread outside the emulator.
static DRIVER_ALLOCS: AtomicUsize = AtomicUsize::new(0);
/// All allocations made on a counting thread, the emulator's included (shows the counter was armed).
static ALL_ALLOCS: AtomicUsize = AtomicUsize::new(0);

struct CountingAlloc;

impl CountingAlloc {
    fn note(&self) {
        let counting = COUNTING.try_with(Cell::get).unwrap_or(false);
        let inside = INSIDE_EMULATOR.try_with(Cell::get).unwrap_or(false);
        if counting {
            ALL_ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        if counting && !inside {
            DRIVER_ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

// SAFETY: defers every call to the system allocator; only adds counters.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.note();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Run `f` with the "inside the emulator" flag set (restoring the previous value: calls nest).
fn in_emulator<R>(f: impl FnOnce() -> R) -> R {
    let was = INSIDE_EMULATOR.with(|c| c.replace(true));
    let r = f();
    INSIDE_EMULATOR.with(|c| c.set(was));
    r
}

/// The bridge emulator's transport with every call marked as emulator work.
struct Flagged(BridgeEmulator);

impl UsbTransport for Flagged {
    fn transfer(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<usize, UsbError> {
        in_emulator(|| self.0.transfer(t, timeout))
    }
    fn sleep(&mut self, d: Duration) {
        in_emulator(|| self.0.sleep(d))
    }
    fn submit(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<(), UsbError> {
        in_emulator(|| self.0.submit(t, timeout))
    }
    fn wait_all(&mut self) -> Result<(), UsbError> {
        in_emulator(|| self.0.wait_all())
    }
}

/// Counts the allocations made by `f` on this thread: (driver code, everything).
fn allocs(f: impl FnOnce()) -> (usize, usize) {
    let before = (
        DRIVER_ALLOCS.load(Ordering::SeqCst),
        ALL_ALLOCS.load(Ordering::SeqCst),
    );
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    (
        DRIVER_ALLOCS.load(Ordering::SeqCst) - before.0,
        ALL_ALLOCS.load(Ordering::SeqCst) - before.1,
    )
}

#[test]
fn the_counter_sees_driver_allocations_and_ignores_the_emulators() {
    // The instrument itself can fail: an allocation outside the flag is counted, one inside is not.
    let n = allocs(|| {
        std::hint::black_box(vec![1u8; 100]);
    });
    assert_eq!(n, (1, 1));
    let n = allocs(|| {
        in_emulator(|| std::hint::black_box(vec![1u8; 100]));
    });
    assert_eq!(n, (0, 1));
}

#[test]
fn amd_device_run_allocates_nothing_after_warm_up() {
    let Some(dir) = firmware_dir("amd_device_run_allocates_nothing") else {
        return;
    };
    let Some(py) = python() else { return };
    let onnx = root().join("xtask/models/policy.onnx");
    let bytes = std::fs::read(compile(&py, &onnx, "amd-gfx1100", true, "-noalloc")).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();

    let gpu = Navi31Model::new(Default::default());
    gpu.set_executor(Box::new(modelrt_rdna3::Rdna3::new()));
    let emu = gpu.bridge_emulator();
    let handle = emu.handle();
    let am = Am::open(
        Bridge::new(Counting::new(Flagged(emu))),
        &dir,
        &BootOptions::default(),
        |bus| bus.bridge().transport().counts(),
    )
    .unwrap_or_else(|e| panic!("boot: {}", with_model_errors(e, Some(&gpu))));
    let dev =
        AmdDevice::new(am, Box::new(move || in_emulator(|| handle.clock_ns()))).expect("device");
    let mut ex = Executor::load(bundle.clone(), dev).unwrap();

    let (inputs, want, atol, rtol) = modelrt_tests::reference(&bytes);
    let ins: Vec<&[u8]> = inputs.iter().map(|v| v.as_slice()).collect();
    let mut outs: Vec<Vec<u8>> = want.iter().map(|w| vec![0u8; w.len()]).collect();
    let mut o: Vec<&mut [u8]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
    for _ in 0..3 {
        ex.run(&ins, &mut o).expect("warm-up run");
    }
    let mut results = [const { None }; 10];
    let (n, all) = allocs(|| {
        for r in results.iter_mut() {
            *r = Some(ex.run(&ins, &mut o).is_ok());
        }
    });
    drop(o);
    assert!(
        results.iter().all(|r| *r == Some(true)),
        "a run failed: {results:?}; model: {:?}",
        gpu.take_errors()
    );
    assert!(gpu.take_errors().is_empty(), "{:?}", gpu.take_errors());
    // The runs computed: outputs match the bundle's embedded reference.
    for (i, (got, want)) in outs.iter().zip(&want).enumerate() {
        let dtype = bundle.body().outputs.get(i).unwrap().dtype;
        let c = modelrt_core::verify::compare(dtype, got, want, atol as f64, rtol as f64);
        assert!(c.ok(), "output {i}: {c:?}");
    }
    eprintln!("10 runs: {n} allocations by driver code, {all} in all (emulator included)");
    // The counter was armed during the runs: the emulator side (bridge, model, interpreter) does
    // allocate, and only the flag keeps those allocations out of the driver's count.
    assert!(
        all > 0,
        "no allocation seen at all: the counter was not armed"
    );
    assert_eq!(n, 0, "{n} heap allocations by driver code in 10 runs");
}
