//! An amd-gfx1100 bundle loads on the AM driver over the GPU model, its schedule is recorded once
//! into a PM4 indirect buffer, and each run's submission completes. A stub shader executor plugged
//! into the model records every DISPATCH_DIRECT and checks it against the bundle itself (an
//! independent reference): code address = the kernel's image + `entry_offset`, workgroup size and
//! grid = the launch's local/global sizes, USER_DATA 0/1 = a kernarg pointer whose contents are the
//! launch's buffer addresses (arena + the bundle's offsets) and integer arguments. Per-run USB
//! transfers do not depend on the number of kernels.
// The AM driver tests' shared setup lives with modelrt-amd's own driver tests.
use super::amd_driver_support;
use amd_driver_support::*;
use modelrt_core::bundle::{ArgRef, Step};
use modelrt_core::{Bundle, Executor};
use modelrt_hal::device::Device;
use modelrt_rdna3::shader::{DispatchRequest, ExecError, GpuMemory, ShaderExecutor};
use modelrt_tests::{compile, python, root};
use std::sync::{Arc, Mutex};

/// What the stub saw: the request and the first 64 kernarg bytes.
type Seen = Arc<Mutex<Vec<(DispatchRequest, Vec<u8>)>>>;

struct Recorder(Seen);

impl ShaderExecutor for Recorder {
    fn dispatch(
        &mut self,
        req: &DispatchRequest,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), ExecError> {
        let ptr = req.user_data[0] as u64 | (req.user_data[1] as u64) << 32;
        let mut args = vec![0u8; 64];
        mem.read(ptr, &mut args)
            .map_err(|fault| ExecError::PageFault {
                code_va: req.code_va,
                fault,
            })?;
        self.0.lock().unwrap().push((req.clone(), args));
        Ok(())
    }
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// Load `model`'s gfx1100 bundle, run it `runs` times; returns (kernels, launches, transfers of
/// the last run).
fn run_model(
    dir: &std::path::Path,
    py: &std::path::Path,
    model: &str,
    runs: usize,
) -> (usize, usize, u64) {
    let onnx = root().join(format!("xtask/models/{model}.onnx"));
    let bytes = std::fs::read(compile(py, &onnx, "amd-gfx1100", true, "-amd-driver")).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    let (gpu, dev, _h) = device(dir);
    let seen: Seen = Default::default();
    gpu.set_executor(Box::new(Recorder(seen.clone())));
    let mut ex =
        Executor::load(bundle.clone(), dev).unwrap_or_else(|e| panic!("{model}: load: {e}"));
    let (inputs, _, _, _) = modelrt_tests::reference(&bytes);
    let ins: Vec<&[u8]> = inputs.iter().map(|v| v.as_slice()).collect();
    let body = bundle.body();
    let mut outs: Vec<Vec<u8>> = body
        .outputs
        .iter()
        .map(|o| vec![0u8; o.unwrap().byte_len() as usize])
        .collect();
    let mut last = 0;
    for _ in 0..runs {
        seen.lock().unwrap().clear();
        let before = ex.device_mut().am.bus.bridge().transport().counts();
        let mut o: Vec<&mut [u8]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
        ex.run(&ins, &mut o)
            .unwrap_or_else(|e| panic!("{model}: run: {e}"));
        last = ex
            .device_mut()
            .am
            .bus
            .bridge()
            .transport()
            .counts()
            .since(&before)
            .transfers();
    }
    assert!(
        gpu.take_errors().is_empty(),
        "{model}: {:?}",
        gpu.take_errors()
    );
    // Every launch of the run schedule was dispatched, in order, as the bundle describes it.
    let dev = ex.device_mut();
    let arena = dev.arena_va().unwrap();
    let kernels: Vec<_> = dev.kernels().to_vec();
    let seen = seen.lock().unwrap();
    let mut n = 0;
    let mut copies = Vec::new();
    for step in body.run.iter() {
        let (kernel, args, global, local) = match step.unwrap() {
            Step::Launch {
                kernel,
                args,
                global,
                local,
            } => (kernel, args, global, local),
            Step::LaunchThreads { .. } => panic!("partial work groups in an AMD bundle"),
            Step::Copy { dst, src, size } => {
                let d = bundle.arena_offset(dst.buffer, dst.offset).unwrap();
                let s = bundle.arena_offset(src.buffer, src.offset).unwrap();
                copies.push((d, s, size as usize));
                continue;
            }
        };
        let (req, kargs) = &seen[n];
        let k = &kernels[kernel as usize];
        let image_entry = match &body.kernels.get(kernel as usize).unwrap().meta {
            modelrt_hal::target::KernelMeta::Amd(m) => m.entry_offset as u64,
            _ => unreachable!(),
        };
        assert_eq!(req.code_va, k.code_va, "{model} launch {n}");
        assert_eq!(req.code_va % 256, 0);
        assert_eq!(
            req.code_va & 0xFFF,
            image_entry & 0xFFF,
            "{model} launch {n}: entry offset"
        );
        assert_eq!(req.workgroup_size, local, "{model} launch {n}");
        assert_eq!(req.grid, global, "{model} launch {n}");
        assert_eq!(req.start, [0, 0, 0]);
        assert_ne!(req.initiator & (1 << 15), 0, "wave32");
        let mut off = 0usize;
        for a in args.iter() {
            match *a {
                ArgRef::Buffer { buffer, offset, .. } => {
                    off = off.next_multiple_of(8);
                    let want = arena + bundle.arena_offset(buffer, offset).unwrap();
                    assert_eq!(
                        u64_at(kargs, off),
                        want,
                        "{model} launch {n} kernarg at {off}"
                    );
                    off += 8;
                }
                ArgRef::Int(v) => {
                    off = off.next_multiple_of(4);
                    assert_eq!(kargs[off..off + 4], v.to_le_bytes());
                    off += 4;
                }
            }
        }
        n += 1;
    }
    assert_eq!(n, seen.len(), "{model}: dispatches beyond the schedule");
    drop(seen);
    // Arena copies ran on SDMA: each destination now holds its source's bytes (the stub kernels
    // write nothing, so nothing else changed them).
    for (d, s, size) in copies {
        let (mut a, mut b) = (vec![0u8; size], vec![1u8; size]);
        dev.download(s, &mut a).unwrap();
        dev.download(d, &mut b).unwrap();
        assert!(
            a == b,
            "{model}: copy {s:#x} -> {d:#x} ({size} bytes) did not happen"
        );
    }
    // Per step: each input/output is one BAR0 stream (2 transfers, + edge reads when unaligned)
    // and the submission a constant (ring, write pointer, doorbell, poll; + 8 with SDMA copies):
    // nothing scales with the number of launches.
    let io = (ins.len() + outs.len()) as u64;
    assert!(
        last <= 4 * io + 24,
        "{model}: {last} transfers per step for {n} launches"
    );
    (kernels.len(), n, last)
}

#[test]
fn gfx1100_bundles_dispatch_as_recorded_with_constant_transfers_per_step() {
    let Some(dir) = firmware_dir("gfx1100_bundles_dispatch_as_recorded") else {
        return;
    };
    let Some(py) = python() else { return };
    let mut per_step = Vec::new();
    for model in ["policy", "dmonitor"] {
        let (k, launches, transfers) = run_model(&dir, &py, model, 2);
        eprintln!("{model}: {k} kernels, {launches} launches, {transfers} USB transfers per step");
        per_step.push((launches, transfers));
    }
    // Per step: inputs + outputs (BAR0 streams) and a constant submission cost; the submission
    // does not grow with the launch count.
    eprintln!("{per_step:?}");
}

#[test]
fn policy_outputs_computed_on_the_model_match_the_embedded_reference() {
    let Some(dir) = firmware_dir("policy_outputs_on_the_model") else {
        return;
    };
    let Some(py) = python() else { return };
    let onnx = root().join("xtask/models/policy.onnx");
    let bytes = std::fs::read(compile(&py, &onnx, "amd-gfx1100", true, "-amd-driver")).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    let (gpu, dev, _h) = device(&dir);
    gpu.set_executor(Box::new(modelrt_rdna3::Rdna3::new()));
    let mut ex = Executor::load(bundle.clone(), dev).unwrap();
    let (inputs, want, atol, rtol) = modelrt_tests::reference(&bytes);
    let ins: Vec<&[u8]> = inputs.iter().map(|v| v.as_slice()).collect();
    let mut outs: Vec<Vec<u8>> = want.iter().map(|w| vec![0u8; w.len()]).collect();
    let mut o: Vec<&mut [u8]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
    ex.run(&ins, &mut o).unwrap();
    for (i, (got, want)) in outs.iter().zip(&want).enumerate() {
        let dtype = bundle.body().outputs.get(i).unwrap().dtype;
        let c = modelrt_core::verify::compare(dtype, got, want, atol as f64, rtol as f64);
        assert!(c.ok(), "output {i}: {c:?}");
    }
}

#[test]
fn a_page_fault_in_a_parallel_workgroup_names_the_kernel() {
    // dmonitor's first launch writes an output buffer of several pages with many workgroups.
    // Poisoning the page 4 KiB into that buffer (the GPU model faults any access to it) makes a
    // workgroup other than the first fault while the interpreter runs them on 2 threads. The run
    // must fail, and the error must name that kernel (its name from the bundle) and the fault.
    let Some(dir) = firmware_dir("page_fault_in_a_parallel_workgroup") else {
        return;
    };
    let Some(py) = python() else { return };
    let onnx = root().join("xtask/models/dmonitor.onnx");
    let bytes = std::fs::read(compile(&py, &onnx, "amd-gfx1100", true, "-amd-driver")).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    let body = bundle.body();
    let Some(Step::Launch {
        kernel,
        args,
        global,
        ..
    }) = body.run.iter().map(|s| s.unwrap()).next()
    else {
        panic!("dmonitor's run schedule does not start with a launch")
    };
    let (buffer, offset) = match args.iter().next() {
        Some(&ArgRef::Buffer { buffer, offset, .. }) => (buffer, offset),
        _ => panic!("the first launch has no output buffer"),
    };
    let size = body.buffers.get(buffer as usize).unwrap().size - offset;
    let out = bundle.arena_offset(buffer, offset).unwrap();
    assert!(
        global.iter().product::<u32>() > 1 && size >= 3 * 4096,
        "{global:?} {size}"
    );
    let name = body.kernels.get(kernel as usize).unwrap().name.to_string();
    let (gpu, dev, _h) = device(&dir);
    gpu.set_executor(Box::new(modelrt_rdna3::Rdna3::new().with_threads(2)));
    let mut ex = Executor::load(bundle.clone(), dev).unwrap();
    let page = (ex.device_mut().arena_va().unwrap() + out + 4096) & !0xFFF;
    gpu.faults(|f| f.poisoned_page = Some(page));
    let (inputs, want, _, _) = modelrt_tests::reference(&bytes);
    let ins: Vec<&[u8]> = inputs.iter().map(|v| v.as_slice()).collect();
    let mut outs: Vec<Vec<u8>> = want.iter().map(|w| vec![0u8; w.len()]).collect();
    let mut o: Vec<&mut [u8]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
    let e = ex.run(&ins, &mut o).unwrap_err().to_string();
    eprintln!("{e}");
    assert!(e.contains("GPU page fault at"), "{e}");
    assert!(e.contains(&format!("(kernel {name})")), "{name}: {e}");
}
