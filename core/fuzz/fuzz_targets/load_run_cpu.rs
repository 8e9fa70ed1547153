//! Fuzz target: load a (resealed) bundle on the host CPU backend and run it. Parse and validation
//! must fail cleanly or succeed; a valid bundle then goes through the backend's load path:
//! - if `modelrt_core_fuzz::runnable` (only known kernels, launched within their extents), the full
//!   `Executor::load` + `run` with the reference inputs (or zeros) and the self-check comparison;
//! - otherwise every kernel is still handed to the ELF loader/linker (`Device::load_kernel`), which
//!   must refuse bad objects with an error, and nothing is executed.
//!
//! Errors are fine; a panic, abort or crash is a finding.
#![no_main]
// libFuzzer's entry point is an exported `no_mangle` symbol (the only unsafe here).
#![deny(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use modelrt_core::verify::compare;
use modelrt_core::{Bundle, Executor};
use modelrt_cpu::CpuDevice;
use modelrt_hal::device::{Device, KernelImage};

/// Inputs and outputs larger than this in total are not allocated (keeps each run fast).
const MAX_IO_BYTES: u64 = 1 << 20;

fn load_kernels_only(b: &Bundle<'_>) {
    let Ok(mut dev) = CpuDevice::new(1) else {
        return;
    };
    if dev.check_target(&b.body().target).is_err() {
        return;
    }
    for k in b.body().kernels.iter() {
        let k = k.expect("validated kernel record decodes");
        let _ = dev.load_kernel(&KernelImage {
            name: k.name,
            entry: k.entry,
            binary: k.binary,
            params: &k.params,
            meta: &k.meta,
        });
    }
}

fn load_and_run(b: Bundle<'_>) {
    let body = b.body().clone();
    let io_bytes = body
        .inputs
        .iter()
        .chain(body.outputs.iter())
        .map(|t| t.expect("validated tensor").byte_len())
        .try_fold(0u64, u64::checked_add);
    if io_bytes.is_none_or(|n| n > MAX_IO_BYTES) {
        return;
    }
    let Ok(dev) = CpuDevice::new(1) else {
        return;
    };
    let Ok(mut exec) = Executor::load(b, dev) else {
        return;
    };
    let mut inputs: Vec<Vec<u8>> = body
        .inputs
        .iter()
        .map(|t| vec![0; t.expect("validated tensor").byte_len() as usize])
        .collect();
    if let Some(r) = body.reference {
        for (buf, r) in inputs.iter_mut().zip(r.inputs.iter()) {
            buf.copy_from_slice(r.expect("validated reference").data);
        }
    }
    let mut outputs: Vec<Vec<u8>> = body
        .outputs
        .iter()
        .map(|t| vec![0; t.expect("validated tensor").byte_len() as usize])
        .collect();
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    if exec.run(&ins, &mut outs).is_err() {
        return;
    }
    if let Some(r) = body.reference {
        for ((t, got), want) in body.outputs.iter().zip(&outputs).zip(r.outputs.iter()) {
            let t = t.expect("validated tensor");
            let c = compare(
                t.dtype,
                got,
                want.expect("validated reference").data,
                f64::from(r.atol),
                f64::from(r.rtol),
            );
            assert!(c.count <= t.numel());
        }
    }
}

fn check(data: &[u8]) {
    let Ok(b) = Bundle::parse(data) else {
        return;
    };
    if modelrt_core_fuzz::runnable(&b) {
        load_and_run(b);
    } else {
        load_kernels_only(&b);
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if let Some(sealed) = modelrt_core_fuzz::reseal(data) {
        check(&sealed);
    }
});
