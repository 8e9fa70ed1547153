//! The steady-state step of the vision-, policy- and dmonitor-like amd-gfx1100 bundles on usb-emu
//! (AM driver → bridge emulator → Navi31 GPU model) costs at most 10 USB control transfers, and
//! exactly what docs/hw/amd-driver.md §5.2 lists: the compute submission (ring write, write pointer,
//! doorbell, signal poll: 4 streams), the SDMA submission when the schedule has arena copies (ring,
//! write pointer, doorbell: 3), one stream per input too large to ride in the ring (> 3 KiB) and per
//! output, and one more on a step whose ring write wraps. Every one of them is a 0xF0 stream: one
//! control and one bulk transfer. The counts are the bridge transport's own counters; the
//! expectation is built from the bundle's tensor sizes and the table, not from the driver.
//!
//! policy runs on the RDNA3 interpreter and each step's outputs must equal the embedded
//! onnxruntime reference (its three inputs go inline, as WRITE_DATA in the ring); vision and
//! dmonitor use a no-op shader executor (their inputs are streams; the counts do not depend on
//! what the shaders compute; `cli_usb_emu_verify` checks their outputs).
use super::amd_driver_support::*;
use modelrt_core::bundle::Step;
use modelrt_core::{Bundle, Executor};
use modelrt_rdna3::shader::{DispatchRequest, ExecError, GpuMemory, ShaderExecutor};
use modelrt_tests::{compile, python, root};

/// Largest input the driver writes inline (docs/hw/amd-driver.md §5.2: 768 dwords per step).
const INLINE_BYTES: usize = 3 * 1024;
/// The budget.
const MAX_CONTROL: u64 = 10;

struct NoOp;

impl ShaderExecutor for NoOp {
    fn dispatch(&mut self, _: &DispatchRequest, _: &mut dyn GpuMemory) -> Result<(), ExecError> {
        Ok(())
    }
}

/// Control transfers per steady-state step from the §5.2 table (without a ring wrap).
fn expected_control(bundle: &Bundle<'_>) -> u64 {
    let body = bundle.body();
    let copies = body
        .run
        .iter()
        .any(|s| matches!(s.unwrap(), Step::Copy { .. }));
    let inputs: Vec<usize> = body
        .inputs
        .iter()
        .map(|t| t.unwrap().byte_len() as usize)
        .collect();
    let total_small: usize = inputs
        .iter()
        .filter(|&&n| n <= INLINE_BYTES && n % 4 == 0)
        .sum();
    assert!(
        total_small <= INLINE_BYTES,
        "the small inputs exceed one step's inline budget"
    );
    let streamed = inputs
        .iter()
        .filter(|&&n| n > INLINE_BYTES || n % 4 != 0)
        .count() as u64;
    4 + if copies { 3 } else { 0 } + streamed + body.outputs.len() as u64
}

#[test]
fn steady_state_steps_cost_at_most_ten_control_transfers() {
    let Some(dir) = firmware_dir("steady_state_steps_cost_at_most_ten_control_transfers") else {
        return;
    };
    let Some(py) = python() else { return };
    let steps = 8;
    for model in ["vision", "policy", "dmonitor"] {
        let onnx = root().join(format!("xtask/models/{model}.onnx"));
        let bytes =
            std::fs::read(compile(&py, &onnx, "amd-gfx1100", true, "-usb-emu-cli")).unwrap();
        let bundle = Bundle::parse(&bytes).unwrap();
        let want_control = expected_control(&bundle);
        let (gpu, dev, _h) = device(&dir);
        let real = model == "policy";
        if real {
            gpu.set_executor(Box::new(modelrt_rdna3::Rdna3::new()));
        } else {
            gpu.set_executor(Box::new(NoOp));
        }
        let mut ex = Executor::load(bundle.clone(), dev).unwrap_or_else(|e| panic!("{model}: {e}"));
        let (inputs, want, atol, rtol) = modelrt_tests::reference(&bytes);
        let ins: Vec<&[u8]> = inputs.iter().map(|v| v.as_slice()).collect();
        let mut outs: Vec<Vec<u8>> = want.iter().map(|w| vec![0u8; w.len()]).collect();
        let mut per_step = Vec::new();
        for i in 0..steps {
            let before = ex.device_mut().am.bus.bridge().transport().counts();
            let mut o: Vec<&mut [u8]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
            ex.run(&ins, &mut o)
                .unwrap_or_else(|e| panic!("{model} step {i}: {e}"));
            let c = ex
                .device_mut()
                .am
                .bus
                .bridge()
                .transport()
                .counts()
                .since(&before);
            per_step.push((c.control(), c.bulk()));
            if real {
                for (k, (got, w)) in outs.iter().zip(&want).enumerate() {
                    let dtype = bundle.body().outputs.get(k).unwrap().dtype;
                    let cmp =
                        modelrt_core::verify::compare(dtype, got, w, atol as f64, rtol as f64);
                    assert!(cmp.ok(), "{model} step {i} output {k}: {cmp:?}");
                }
            }
        }
        eprintln!("{model}: (control, bulk) per step {per_step:?}, expected control {want_control} (+1 on a ring wrap)");
        assert!(
            gpu.take_errors().is_empty(),
            "{model}: {:?}",
            gpu.take_errors()
        );
        // The first step also uploads the recorded indirect buffer and kernargs.
        let steady = &per_step[1..];
        let mut wraps = 0;
        for (i, &(control, bulk)) in steady.iter().enumerate() {
            assert!(
                control <= MAX_CONTROL,
                "{model} step {}: {control} control transfers (budget {MAX_CONTROL})",
                i + 1
            );
            assert!(
                control == want_control || control == want_control + 1,
                "{model} step {}: {control} control transfers, the table says {want_control} (+1 on a wrap)",
                i + 1
            );
            wraps += (control == want_control + 1) as usize;
            assert_eq!(
                bulk,
                control,
                "{model} step {}: every transfer is a stream",
                i + 1
            );
        }
        // An 8 KiB ring wraps at most every other step even for policy's ~2 KiB of inline inputs.
        assert!(
            wraps * 2 <= steady.len() + 1,
            "{model}: {wraps} wraps in {} steps",
            steady.len()
        );
    }
}
