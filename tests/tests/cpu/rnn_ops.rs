//! LSTM, GRU and RNN: tinygrad 0.14's ONNX frontend has none of them, so the exporter lowers them to
//! tinygrad ops for the bundle's fixed sequence length (xtask/exporter/mrt/rnn.py). Each model of
//! `xtask/exporter/tools/make_rnn_models.py` (forward, reverse, bidirectional; with and without initial state, biases,
//! sequence lengths, peepholes; GRU's linear_before_reset, LSTM's clip and input_forget, a Relu activation, layout=1) is
//! compiled for this CPU and run on inputs other than the capture's, and every output is compared with onnxruntime's
//! (four compiles, ~1 min on 2 idle cores; ONNX's own node tests for the ops run in `cargo xtask conformance`).
//! `sequence_lens` is an index-like input: values past the sequence length are refused like onnxruntime refuses them.
//! Also: a model with several unsupported ops names all of them in one error line.
use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt_core::bundle::Bundle;
use modelrt_targets::npy;
use modelrt_tests::{compile, python, root, run_cpu};
use xtask::exporter::ExportArgs;

/// Largest |got - want| / max(1, |want|) accepted: float32 recurrences of 5 steps.
const TOL: f32 = 2e-5;

fn models(py: &Path) -> PathBuf {
    let dir = root().join("target/e2e/rnn");
    let o = Command::new(py)
        .arg(root().join("xtask/exporter/tools/make_rnn_models.py"))
        .arg(&dir)
        .output()
        .expect("python runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    dir
}

fn npy_bytes(p: &Path) -> Vec<u8> {
    npy::parse(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
        .data
        .to_vec()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Compile `name`, run it on its saved inputs and return (output name, max relative error vs onnxruntime).
fn check(py: &Path, dir: &Path, name: &str) -> Vec<(String, f32)> {
    let bundle = compile(
        py,
        &dir.join(format!("{name}.onnx")),
        "cpu-x86_64",
        false,
        "-rnn",
    );
    let bytes = std::fs::read(&bundle).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let names =
        |t: modelrt_core::bundle::Table<'_, modelrt_core::bundle::TensorDesc<'_>>| -> Vec<String> {
            t.iter().map(|d| d.unwrap().name.to_string()).collect()
        };
    let ins: Vec<Vec<u8>> = names(b.body().inputs)
        .iter()
        .map(|n| npy_bytes(&dir.join(format!("{name}.in_{n}.npy"))))
        .collect();
    let got = run_cpu(&bundle, &ins).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    names(b.body().outputs)
        .into_iter()
        .zip(got)
        .map(|(o, g)| {
            let want = f32s(&npy_bytes(&dir.join(format!("{name}.ort_{o}.npy"))));
            let g = f32s(&g);
            assert_eq!(g.len(), want.len(), "{name} {o}");
            let err = g
                .iter()
                .zip(&want)
                .map(|(a, w)| (a - w).abs() / w.abs().max(1.0))
                .fold(0f32, f32::max);
            (o, err)
        })
        .collect()
}

fn all_close(py: &Path, dir: &Path, cases: &[&str]) {
    for name in cases {
        let errs = check(py, dir, name);
        assert!(!errs.is_empty(), "{name}: no outputs");
        for (o, e) in errs {
            eprintln!("{name} {o}: max rel err {e:.2e}");
            assert!(e <= TOL, "{name} {o}: {e} > {TOL}");
        }
    }
}

#[test]
fn lstm_matches_onnxruntime() {
    let Some(py) = python() else { return };
    let dir = models(&py);
    all_close(&py, &dir, &["lstm_rev_clip_forget", "lstm_bidi_layout1"]);
}

#[test]
fn gru_and_rnn_match_onnxruntime() {
    let Some(py) = python() else { return };
    let dir = models(&py);
    all_close(&py, &dir, &["gru_bidi_lbr", "rnn_bidi_relu_seqlen"]);
}

#[test]
fn sequence_lengths_past_the_sequence_are_refused() {
    let Some(py) = python() else { return };
    let dir = models(&py);
    let bundle = compile(
        &py,
        &dir.join("gru_bidi_lbr.onnx"),
        "cpu-x86_64",
        false,
        "-rnn",
    );
    let bytes = std::fs::read(&bundle).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let mut ins: Vec<Vec<u8>> = Vec::new();
    for t in b.body().inputs.iter() {
        let n = t.unwrap().name;
        ins.push(if n == "sequence_lens" {
            // onnxruntime: "All values must be >= 0 and <= seq_length" (T = 5)
            [5i32, 6, 1].iter().flat_map(|v| v.to_le_bytes()).collect()
        } else {
            npy_bytes(&dir.join(format!("gru_bidi_lbr.in_{n}.npy")))
        });
    }
    let msg = format!("{:#}", run_cpu(&bundle, &ins).unwrap_err());
    assert!(
        msg.starts_with("input 'sequence_lens' element 1 is 6, outside the valid range 0..=5"),
        "{msg}"
    );
}

#[test]
fn every_unsupported_op_is_named_at_once() {
    let Some(py) = python() else { return };
    let dir = root().join("target/e2e/rnn");
    std::fs::create_dir_all(&dir).unwrap();
    let onnx = dir.join("det_unique.onnx");
    let script = format!(
        "import onnx\nfrom onnx import helper, TensorProto as T\n\
         g = helper.make_graph([helper.make_node('Det', ['x'], ['d']), helper.make_node('Unique', ['x'], ['u']),\n\
         helper.make_node('BitShift', ['i', 'i'], ['s'], direction='LEFT')], 'g',\n\
         [helper.make_tensor_value_info('x', T.FLOAT, [3, 3]), helper.make_tensor_value_info('i', T.UINT8, [2])],\n\
         [helper.make_tensor_value_info(n, t, None) for n, t in (('d', T.FLOAT), ('u', T.FLOAT), ('s', T.UINT8))])\n\
         onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), r'{}')\n",
        onnx.display()
    );
    let o = Command::new(&py).args(["-c", &script]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let args = ExportArgs::onnx(&onnx, "cpu-x86_64".parse().unwrap(), PathBuf::new());
    let e = xtask::compile::compile(&py, args, &dir.join("det_unique.mrt")).unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.contains(
            "unsupported ONNX model: 3 ops are not supported: 'BitShift', 'Det', 'Unique'"
        ),
        "{msg}"
    );
}
