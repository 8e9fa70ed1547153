//! The cases, each run on every device of [`crate::devices::under_test`]. A device that computes nothing (the null
//! skeleton) must load the bundle, refuse bad inputs like every device and fail every run with its error instead of
//! returning outputs ([`crate::run::refuses_to_compute`]).
use modelrt_core::verify::compare_reference;
use modelrt_hal::target::DType;

use crate::devices::{prerequisites, under_test};
use crate::run::{compile_onnx, compile_script, f32s, open, outputs, refuses_to_compute, step};

/// Compile `name` for each device, run it on the embedded reference inputs and compare every output with
/// onnxruntime's at the bundle's tolerance; returns, per device, the number of outputs checked.
fn matches_onnxruntime(name: &str) {
    let Some(py) = prerequisites() else { return };
    let mut report = Vec::new();
    for dev in under_test() {
        let bytes = compile_onnx(&py, name, &dev);
        let (ins, want, atol, rtol) = modelrt_tests::reference(&bytes);
        let mut model = open(&bytes, &dev);
        if refuses_to_compute(model.as_mut(), &ins, name, &dev) {
            report.push(format!(
                "{} (computes nothing: runs refused)",
                dev.device.name()
            ));
            continue;
        }
        let got = step(model.as_mut(), &ins)
            .unwrap_or_else(|e| panic!("{name} on {}: {e:#}", dev.device.name()));
        assert_eq!(
            got.len(),
            want.len(),
            "{name} on {}: output count",
            dev.device.name()
        );
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let dtype = model.bundle().body().outputs.get(i).unwrap().dtype;
            let c = compare_reference(dtype, g, w, atol as f64, rtol as f64);
            assert!(c.ok(), "{name} output {i} on {}: {c:?}", dev.device.name());
        }
        // the references are not all zero: a device that wrote nothing would not pass
        assert!(
            want.iter().any(|w| w.iter().any(|&b| b != 0)),
            "{name}: trivial reference"
        );
        report.push(format!("{} ({} outputs)", dev.device.name(), got.len()));
    }
    eprintln!("cts {name}: {}", report.join(", "));
}

#[test]
fn elementwise_reductions_and_several_outputs() {
    matches_onnxruntime("ew_reduce");
}

#[test]
fn convolution() {
    matches_onnxruntime("conv");
}

#[test]
fn gemm() {
    matches_onnxruntime("gemm");
}

/// acc <- 0.5 acc + x; out = 2 acc (xtask/models/cts_state.py), computed here step by step.
#[test]
fn state_advanced_with_assign_persists_and_resets() {
    let Some(py) = prerequisites() else { return };
    for dev in under_test() {
        let name = dev.device.name();
        if let Some(gap) = crate::devices::known_gap(&dev, "state") {
            // Not supported yet: the compile must refuse with the reason, not write a bundle that runs wrongly.
            let err = crate::run::try_compile_script(&py, "xtask/models/cts_state.py:build", &dev)
                .expect_err("a device listed as lacking state support compiled a stateful bundle: update devices::known_gap");
            assert!(
                format!("{err:#}").contains(gap),
                "{name}: refused for another reason: {err:#}"
            );
            eprintln!("cts state: {name} refused as documented ({gap})");
            continue;
        }
        let bytes = compile_script(&py, "xtask/models/cts_state.py:build", &dev);
        let mut model = open(&bytes, &dev);
        let states = model.states();
        if refuses_to_compute(model.as_mut(), &[vec![0u8; 64]], "state", &dev) {
            assert_eq!(states.len(), 1, "{name}: state buffers");
            continue;
        }
        assert_eq!(states.len(), 1, "{name}: state buffers");
        let acc0: Vec<f32> = (0..16).map(|i| i as f32 / 16.0).collect();
        let check = |model: &mut dyn modelrt_targets::runner::LoadedModel<'_>,
                     steps: &[Vec<f32>]| {
            let mut acc = acc0.clone();
            for x in steps {
                let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
                let out = step(model, &[xb]).unwrap_or_else(|e| panic!("{name}: {e:#}"));
                for (a, xv) in acc.iter_mut().zip(x) {
                    *a = 0.5 * *a + xv;
                }
                let want: Vec<f32> = acc.iter().map(|a| 2.0 * a).collect();
                let got = f32s(&out[0]);
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                        "{name}: out {got:?} want {want:?}"
                    );
                }
                let st = f32s(
                    &model
                        .read_state(0)
                        .unwrap_or_else(|e| panic!("{name}: {e:#}")),
                );
                for (g, w) in st.iter().zip(&acc) {
                    assert!(
                        (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                        "{name}: state {st:?} want {acc:?}"
                    );
                }
            }
        };
        let steps: Vec<Vec<f32>> = (0..3)
            .map(|s| {
                (0..16)
                    .map(|i| ((i * 7 + s * 5) % 11) as f32 - 5.0)
                    .collect()
            })
            .collect();
        check(model.as_mut(), &steps);
        model
            .reset_state()
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        check(model.as_mut(), &steps[..1]);
        eprintln!("cts state: {name} (3 steps, reset, 1 step)");
    }
}

/// Wrong input counts and sizes and wrong output sizes are errors on every device — never a panic or a partial run —
/// and the model still runs correctly afterwards.
#[test]
fn bad_inputs_are_refused_and_the_model_keeps_working() {
    let Some(py) = prerequisites() else { return };
    for dev in under_test() {
        let name = dev.device.name();
        let bytes = compile_onnx(&py, "gemm", &dev);
        let (ins, want, atol, rtol) = modelrt_tests::reference(&bytes);
        let mut model = open(&bytes, &dev);
        let short = vec![ins[0][..ins[0].len() - 4].to_vec()];
        let long = vec![[ins[0].clone(), vec![0; 4]].concat()];
        for (what, bad) in [
            ("no inputs", vec![]),
            ("a short input", short),
            ("a long input", long),
            ("two inputs", vec![ins[0].clone(), ins[0].clone()]),
        ] {
            assert!(
                step(model.as_mut(), &bad).is_err(),
                "{name} accepted {what}"
            );
        }
        let ins_ref: Vec<&[u8]> = ins.iter().map(|v| v.as_slice()).collect();
        let mut small = [0u8; 8];
        assert!(
            model.run(&ins_ref, &mut [&mut small[..]]).is_err(),
            "{name} accepted a short output"
        );
        let mut none: [&mut [u8]; 0] = [];
        assert!(
            model.run(&ins_ref, &mut none).is_err(),
            "{name} accepted no outputs"
        );
        let _ = outputs(model.as_ref());
        if refuses_to_compute(model.as_mut(), &ins, "gemm after refusals", &dev) {
            continue;
        }
        let got =
            step(model.as_mut(), &ins).unwrap_or_else(|e| panic!("{name} after refusals: {e:#}"));
        let c = compare_reference(DType::F32, &got[0], &want[0], atol as f64, rtol as f64);
        assert!(c.ok(), "{name} after refusals: {c:?}");
    }
}
