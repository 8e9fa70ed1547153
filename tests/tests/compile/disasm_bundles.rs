//! `modelrt disasm` on real tinygrad kernels: a tiny ONNX graph (MatMul, Add, Relu, a reduction; two
//! outputs, so more than one kernel) compiled for adreno-a630 and amd-gfx1100 lists every kernel of the bundle, by name, with every
//! instruction decoded (none `unknown`) — IR3: every 64-bit word of the ISA, in order; RDNA3: the
//! `.text` up to its `s_code_end` padding, contiguous. The listing's text itself is checked against
//! Mesa's and llvm-objdump-19's in `targets/tests/cli_disasm.rs`, `qcom/ir3/tests/blob_vectors.rs`
//! and `tests/tests/amd/rdna3_models.rs`.
use std::process::Command;

use modelrt_core::bundle::Bundle;
use modelrt_targets::disasm::{bundle_listing, Isa};
use modelrt_tests::{python, root};
use xtask::exporter::ExportArgs;

const SCRIPT: &str = r#"
import sys, numpy as np, onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
rng = np.random.default_rng(3)
w = nh.from_array(rng.standard_normal((16, 8)).astype(np.float32), "w")
b = nh.from_array(rng.standard_normal(8).astype(np.float32), "b")
g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["m"]), h.make_node("Add", ["m", "b"], ["a"]),
                  h.make_node("Relu", ["a"], ["r"]), h.make_node("ReduceSum", ["r"], ["y"], keepdims=1)],
                 "tiny", [h.make_tensor_value_info("x", T.FLOAT, [4, 16])],
                 [h.make_tensor_value_info("y", T.FLOAT, [1, 1]), h.make_tensor_value_info("r", T.FLOAT, [4, 8])], [w, b])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
"#;

#[test]
fn tiny_model_kernels_all_decode_for_a630_and_gfx1100() {
    let Some(py) = python() else { return };
    let dir = root().join("target/e2e/disasm");
    std::fs::create_dir_all(&dir).unwrap();
    let onnx = dir.join("disasm_tiny.onnx");
    let st = Command::new(&py)
        .arg("-c")
        .arg(SCRIPT)
        .arg(&onnx)
        .status()
        .expect("the exporter Python runs");
    assert!(st.success());
    for (target, isa) in [("adreno-a630", Isa::A6xx), ("amd-gfx1100", Isa::Gfx1100)] {
        let mut args = ExportArgs::onnx(&onnx, target.parse().expect("a target name"), "");
        args.emu_check = false; // only the code is looked at here
        let path = modelrt_tests::compile_args(&py, args, "-disasm");
        let bytes = std::fs::read(&path).unwrap();
        let b = Bundle::parse(&bytes).unwrap();
        let (got_isa, kernels) = bundle_listing(&b, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got_isa, isa);
        let names: Vec<&str> = b.body().kernels.iter().map(|k| k.unwrap().name).collect();
        assert!(names.len() >= 2, "{target}: kernels {names:?}");
        let listed: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(listed, names, "{target}: every kernel is listed, in order");
        for (k, desc) in kernels.iter().zip(b.body().kernels.iter()) {
            let desc = desc.unwrap();
            let unknown: Vec<&str> = k
                .lines
                .iter()
                .filter(|l| !l.known)
                .map(|l| l.text.as_str())
                .collect();
            assert!(unknown.is_empty(), "{target} {}: {unknown:?}", k.name);
            let mut at = 0;
            for l in &k.lines {
                assert_eq!(l.offset, at, "{target} {}: listing is contiguous", k.name);
                at += l.bytes;
            }
            match isa {
                Isa::A6xx => {
                    assert_eq!(at as usize, desc.binary.len(), "{target} {}", k.name);
                    assert_eq!(k.lines.len(), desc.binary.len() / 8);
                }
                Isa::Gfx1100 => {
                    let last = k.lines.last().unwrap();
                    assert_eq!(last.text, "s_code_end", "{target} {}", k.name);
                    assert!(k.lines.iter().any(|l| l.text == "s_endpgm"));
                }
            }
        }
        eprintln!(
            "{target}: {} kernels, {} instructions listed",
            kernels.len(),
            kernels.iter().map(|k| k.lines.len()).sum::<usize>()
        );
    }
}
