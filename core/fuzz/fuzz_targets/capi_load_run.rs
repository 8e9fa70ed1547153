//! Fuzz target: the C API (`targets/capi`, `modelrt.h`) called as a C program would, with
//! arbitrary bundle bytes and arbitrary arguments. An input is [`CAPI_ARGS`] argument bytes and a
//! bundle (tried as is and resealed). The bundle is written to a file and loaded with
//! `mrt_model_load` / `mrt_model_load_ex` (mapped or read, device "cpu", "auto", NULL or an unknown
//! name); the tensor infos are queried at fuzzed indices; then `mrt_model_run` gets pointer and size
//! arrays (or NULL) whose buffers all lie in one arena at fuzzed offsets — so they overlap, share a
//! start, sit adjacent — with sizes that are right, off by one, zero or huge, or NULL pointers.
//!
//! A bundle that parses is loaded only if `modelrt_core_fuzz::runnable` (its kernels are native
//! code, and loading runs the init phase); one that does not parse is handed to the loads anyway,
//! which must refuse it. Findings: any crash or panic, `MRT_ERR_PANIC`, an error without a message,
//! a run that succeeds with an output sharing a byte with another output or an input, with a wrong
//! size or a NULL buffer, or a run refused for other reasons when every argument was right.
#![no_main]
// The C API's functions take raw pointers: each call below is `unsafe`, justified at the call, and
// the functions making them allow it; libFuzzer's entry point is an exported `no_mangle` symbol.
#![deny(unsafe_code)]

use std::ffi::{c_void, CStr, CString};

use libfuzzer_sys::fuzz_target;
use modelrt::error::{MRT_ERR_INVALID_ARGUMENT, MRT_ERR_LOAD, MRT_ERR_PANIC, MRT_ERR_RUN, MRT_OK};
use modelrt::ffi::*;
use modelrt::info::MrtTensorInfo;
use modelrt_core::Bundle;
use modelrt_core_fuzz::{reseal, runnable, CAPI_ARGS};

/// Inputs and outputs larger than this in total are not run (keeps each execution fast).
const MAX_IO_BYTES: usize = 1 << 20;

/// splitmix64: the per-buffer choices, from the argument bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn last_error() -> String {
    // SAFETY: mrt_last_error never returns NULL; the string is read before the next call.
    #[allow(unsafe_code)]
    unsafe { CStr::from_ptr(mrt_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// A status the API may return, with a message when it is an error.
fn check_status(rc: i32, what: &str) {
    assert_ne!(
        rc,
        MRT_ERR_PANIC,
        "{what}: a panic inside modelrt: {}",
        last_error()
    );
    assert!(
        [MRT_OK, MRT_ERR_INVALID_ARGUMENT, MRT_ERR_LOAD, MRT_ERR_RUN].contains(&rc),
        "{what}: unknown status {rc}"
    );
    if rc != MRT_OK {
        assert!(
            !last_error().is_empty(),
            "{what}: error {rc} without a message"
        );
    }
}

/// One buffer handed to run: its offset in the arena (or NULL) and the size passed.
#[derive(Clone, Copy)]
struct Arg {
    at: Option<usize>,
    size: usize,
}

/// Where buffer `k` of `nbytes` bytes goes in an arena of `len` bytes whose disjoint slot `k`
/// starts at `slot`: every pointer with a size equal to `nbytes` stays inside the arena.
fn place(rng: &mut Rng, nbytes: usize, len: usize, slot: usize, prev: Option<usize>) -> Arg {
    let size = match rng.below(16) {
        0 => nbytes.wrapping_add(1),
        1 => nbytes.wrapping_sub(1),
        2 => 0,
        3 => usize::MAX - rng.below(4),
        _ => nbytes,
    };
    let at = match rng.below(8) {
        0 => None,
        1 | 2 => Some(rng.below(len.saturating_sub(nbytes) + 1)),
        3 => prev.or(Some(slot)),
        _ => Some(slot),
    };
    Arg { at, size }
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < a.0 + a.1 && b.0 < b.0 + b.1 && a.0 < b.0 + b.1 && b.0 < a.0 + a.1
}

#[allow(unsafe_code)]
fn load_and_run(args: &[u8; CAPI_ARGS], path: &CString, may_run: bool) {
    let flags = u32::from(args[0] & 1);
    let device: Option<&CStr> = match args[1] % 8 {
        0..=4 => Some(c"cpu"),
        5 => Some(c"auto"),
        6 => None,
        _ => Some(c"no-such-device"),
    };
    let mut m: *mut MrtModel = std::ptr::null_mut();
    // SAFETY: a NUL-terminated path, a device string or NULL, a writable handle slot.
    let rc = unsafe {
        let d = device.map_or(std::ptr::null(), CStr::as_ptr);
        if args[0] & 2 != 0 {
            mrt_model_load(path.as_ptr(), d, &mut m)
        } else {
            mrt_model_load_ex(path.as_ptr(), d, flags | u32::from(args[0] & 0x80), &mut m)
        }
    };
    check_status(rc, "load");
    if args[0] & 0x82 == 0x80 {
        assert_eq!(
            rc, MRT_ERR_INVALID_ARGUMENT,
            "an unknown load flag was accepted"
        );
    }
    if rc != MRT_OK {
        assert!(m.is_null(), "a failed load left a handle");
        return;
    }
    assert!(may_run, "a bundle that does not parse was loaded");
    let mut rng = Rng(u64::from_le_bytes(args[8..16].try_into().expect("8 bytes")));
    // SAFETY: `m` is a live handle from the successful load.
    let (ni, no) = unsafe { (mrt_model_input_count(m), mrt_model_output_count(m)) };
    let mut nbytes = Vec::new();
    for (k, n) in [(false, ni), (true, no)] {
        for i in 0..n + 2 {
            let i = if rng.below(8) == 0 {
                i + rng.below(1 << 20)
            } else {
                i
            };
            let mut t = MrtTensorInfo::default();
            // SAFETY: live handle, a writable struct.
            let rc = unsafe {
                if k {
                    mrt_model_output_info(m, i, &mut t)
                } else {
                    mrt_model_input_info(m, i, &mut t)
                }
            };
            check_status(rc, "info");
            assert_eq!(rc == MRT_OK, i < n, "info {i} of {n}");
            if rc == MRT_OK && i < n && nbytes.len() < ni + no {
                assert!(!t.name_ptr().is_null());
                assert!(t.ndim as usize <= t.dims.len());
                nbytes.push(t.nbytes);
            }
        }
    }
    if nbytes.len() != ni + no || nbytes.iter().sum::<usize>() > MAX_IO_BYTES {
        // SAFETY: live handle, freed once.
        unsafe { mrt_model_free(m) };
        return;
    }
    // One arena: a disjoint slot per buffer (16-byte aligned), plus fuzzed slack.
    let mut slots = Vec::new();
    let mut end = 0usize;
    for &n in &nbytes {
        slots.push(end);
        end += n.div_ceil(16) * 16;
    }
    let len = end + usize::from(u16::from_le_bytes([args[2], args[3]]) % 4096);
    let mut arena = vec![0u8; len.max(1)];
    let base = arena.as_mut_ptr();
    let mut placed: Vec<Arg> = Vec::new();
    for (k, &n) in nbytes.iter().enumerate() {
        let prev = placed.last().and_then(|a| a.at);
        placed.push(place(&mut rng, n, len, slots[k], prev));
    }
    for step in 0..1 + usize::from(args[4] & 1) {
        if args[4] & 2 != 0 {
            // SAFETY: live handle.
            check_status(unsafe { mrt_model_reset_state(m) }, "reset_state");
        }
        let ptr = |a: &Arg| -> *mut c_void {
            // SAFETY: `at` is an offset within the arena (at most `len`, its length).
            a.at.map_or(std::ptr::null_mut(), |o| unsafe { base.add(o) }.cast())
        };
        let ins: Vec<*const c_void> = placed[..ni].iter().map(|a| ptr(a).cast_const()).collect();
        let in_sizes: Vec<usize> = placed[..ni].iter().map(|a| a.size).collect();
        let outs: Vec<*mut c_void> = placed[ni..].iter().map(ptr).collect();
        let out_sizes: Vec<usize> = placed[ni..].iter().map(|a| a.size).collect();
        let null_ins = args[5].is_multiple_of(16);
        let null_outs = args[6].is_multiple_of(16);
        // SAFETY: live handle; each array holds the model's count of elements (or is NULL); every
        // non-NULL pointer addresses the arena, and where its size equals the tensor's byte size
        // it is readable/writable for that size (`place`); overlaps are what is being fuzzed.
        let rc = unsafe {
            mrt_model_run(
                m,
                if null_ins {
                    std::ptr::null()
                } else {
                    ins.as_ptr()
                },
                if null_ins {
                    std::ptr::null()
                } else {
                    in_sizes.as_ptr()
                },
                if null_outs {
                    std::ptr::null()
                } else {
                    outs.as_ptr()
                },
                if null_outs {
                    std::ptr::null()
                } else {
                    out_sizes.as_ptr()
                },
            )
        };
        check_status(rc, "run");
        let valid = |k: usize| placed[k].at.is_some() && placed[k].size == nbytes[k];
        let all_valid = (0..ni + no).all(valid) && !(null_ins && ni > 0) && !(null_outs && no > 0);
        let range = |k: usize| (placed[k].at.unwrap_or(0), nbytes[k]);
        let overlap = (ni..ni + no).any(|o| (0..o).any(|j| overlaps(range(o), range(j))));
        if rc == MRT_OK {
            assert!(all_valid, "run accepted a NULL or wrongly sized buffer");
            assert!(
                !overlap,
                "run accepted an output overlapping another buffer"
            );
        } else if all_valid && !overlap {
            assert_eq!(
                rc,
                MRT_ERR_RUN,
                "step {step}: a good call refused: {}",
                last_error()
            );
        } else if all_valid {
            assert_eq!(rc, MRT_ERR_INVALID_ARGUMENT);
            assert!(last_error().contains("overlaps"), "{}", last_error());
        }
    }
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };
    drop(arena);
}

fn check(args: &[u8; CAPI_ARGS], bundle: &[u8]) {
    let may_run = match Bundle::parse(bundle) {
        Ok(b) => runnable(&b),
        Err(_) => false,
    };
    let parses = Bundle::parse(bundle).is_ok();
    if parses && !may_run {
        return; // native code that is not known: the ELF loader is `load_run_cpu`'s
    }
    let path = std::env::temp_dir().join(format!("modelrt-fuzz-capi-{}.mrt", std::process::id()));
    if std::fs::write(&path, bundle).is_err() {
        return;
    }
    let c = CString::new(path.to_string_lossy().into_owned()).expect("no NUL in a temp path");
    load_and_run(args, &c, may_run);
}

fuzz_target!(|data: &[u8]| {
    if data.len() < CAPI_ARGS {
        return;
    }
    let (args, bundle) = data.split_at(CAPI_ARGS);
    let args: &[u8; CAPI_ARGS] = args.try_into().expect("CAPI_ARGS bytes");
    check(args, bundle);
    if let Some(sealed) = reseal(bundle) {
        check(args, &sealed);
    }
});
