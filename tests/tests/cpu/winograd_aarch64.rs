//! Winograd F(4×4,3×3) on the comma CPU architecture (docs/cpu-kernels.md §6): a `--target cpu-aarch64
//! --winograd on` compile of a small net with two qualifying 3×3 convs (16→16 and 16→24 channels, stride 1, a ReLU
//! between, output sizes not multiples of 4) must rewrite both, say so in the producer flags, and its kernels must
//! compute what onnxruntime computes when they run as aarch64 code under qemu-aarch64: through the exporter's
//! independent aarch64 replayer (`xtask/exporter/tests/check_manifest_aarch64.py`) and through the aarch64
//! `modelrt verify` that `cargo xtask ci` cross-builds (`MODELRT_AARCH64_BIN`).
use modelrt_hal::target::TargetName;
use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt_core::bundle::Bundle;
use modelrt_tests::{python, replay_aarch64_manifest, root, skip};
use xtask::exporter::ExportArgs;

const SCRIPT: &str = r#"
import sys, numpy as np, onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
rng = np.random.default_rng(2525)
w1 = nh.from_array((rng.standard_normal((16, 16, 3, 3)) / 12).astype(np.float32), "w1")
b1 = nh.from_array((0.1 * rng.standard_normal(16)).astype(np.float32), "b1")
w2 = nh.from_array((rng.standard_normal((24, 16, 3, 3)) / 12).astype(np.float32), "w2")
nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         h.make_node("Relu", ["c1"], ["r1"]),
         h.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
g = h.make_graph(nodes, "wino_a64", [h.make_tensor_value_info("x", T.FLOAT, [1, 16, 10, 14])],
                 [h.make_tensor_value_info("c2", T.FLOAT, [1, 24, 10, 14])], [w1, b1, w2])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
"#;

fn bundle(py: &Path) -> PathBuf {
    let dir = root().join("target/e2e/winograd_aarch64");
    std::fs::create_dir_all(&dir).unwrap();
    let onnx = dir.join("wino_a64.onnx");
    let st = Command::new(py)
        .arg("-c")
        .arg(SCRIPT)
        .arg(&onnx)
        .status()
        .expect("the exporter Python runs");
    assert!(st.success());
    let mut args = ExportArgs::onnx(onnx, TargetName::CpuAarch64, "");
    args.reference = true;
    args.winograd = Some("on".into());
    let path = modelrt_tests::compile_args(py, args, "-winograd-on");
    // both convs rewritten (producer flag `WINOGRAD=on-r<rule>:<conv outputs>`, docs/cpu-kernels.md §6)
    let bytes = std::fs::read(&path).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let flags = b.body().producer.flags.to_string();
    assert!(
        flags.contains("WINOGRAD") && flags.contains(":c1,c2"),
        "both convs rewritten as Winograd: {flags}"
    );
    // one batched GEMM per rewritten conv: 36 independent products (one per transform point), the outermost
    // axis of its kernel (tinygrad names a kernel by its loop sizes: `r_36_…`)
    let gemms: Vec<&str> = b
        .body()
        .kernels
        .iter()
        .map(|k| k.unwrap().name)
        .filter(|n| n.starts_with("r_36_"))
        .collect();
    assert_eq!(gemms.len(), 2, "two Winograd GEMM kernels: {gemms:?}");
    path
}

fn tools_present(tools: &[&str]) -> bool {
    tools
        .iter()
        .all(|t| Command::new(t).arg("--version").output().is_ok())
}

#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn aarch64_winograd_kernels_match_onnxruntime_in_the_replayer_under_qemu() {
    let Some(py) = python() else { return };
    let path = bundle(&py);
    replay_aarch64_manifest(&py, &path);
}

#[test]
fn aarch64_modelrt_verifies_a_winograd_bundle_under_qemu() {
    let Some(py) = python() else { return };
    let bin = std::env::var_os("MODELRT_AARCH64_BIN")
        .map(PathBuf::from)
        .filter(|p| p.exists());
    let Some(bin) = skip::require(
        bin,
        "no aarch64 modelrt (set MODELRT_AARCH64_BIN; `cargo xtask ci` builds it with `cargo xtask dist`)",
    ) else {
        return;
    };
    if skip::require(
        tools_present(&["qemu-aarch64"]).then_some(()),
        "no qemu-aarch64 (Debian package qemu-user; `cargo xtask setup` installs it)",
    )
    .is_none()
    {
        return;
    }
    let path = bundle(&py);
    let o = Command::new("qemu-aarch64")
        .args(["-L", "/usr/aarch64-linux-gnu"])
        .arg(&bin)
        .args(["verify", path.to_str().unwrap()])
        .output()
        .expect("qemu-aarch64 runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("verified    outputs match the embedded reference"),
        "{out}"
    );
}
