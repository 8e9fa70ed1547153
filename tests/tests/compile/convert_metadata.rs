//! `cargo xtask convert PICKLE --metadata FILE` with openpilot's real driving_policy metadata
//! (qcom/testdata/openpilot-0.11/0.11.1_driving_policy_metadata.pkl.gz, gzipped as shipped there).
//!
//! A tinygrad 0.14 TinyJit is captured here in the venv whose inputs are exactly that metadata's `input_shapes`
//! (desire_pulse (1,25,8), traffic_convention (1,2), features_buffer (1,25,512)) and whose one output is (1, 1000):
//! `2 * features_buffer.flat[:1000] + sum(desire_pulse) + sum(traffic_convention)`. Converted with `--metadata`, the
//! TinyJit's output is renamed to openpilot's `outputs`, the bundle is format 2.4 and `modelrt info` lists the checkpoint
//! and `plan 0:990`, `desire_state 990:998`, `pad 998:1000` (slice(-2, None) of 1000), values read off the file with
//! pickletools; the bundle runs on the CPU and computes the formula above. The vision model's metadata (other input
//! names) is refused with one `error:` line naming `input_shapes`, a non-zero exit and no bundle written.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use modelrt_core::Bundle;
use modelrt_tests::{python, root, run_cpu};

/// The TinyJit: the driving_policy inputs, one (1, 1000) output; pickled as compile3 does (`pickle.dump(jit)`).
const MAKE_PICKLE: &str = r#"
import os, pickle, sys
for k, v in (("JIT_BATCH_SIZE", "0"), ("BEAM", "0"), ("CACHELEVEL", "0"), ("NUM_CPU_THREADS", "1")):
  os.environ.setdefault(k, v)
import numpy as np
from tinygrad import Tensor, TinyJit

@TinyJit
def policy(desire_pulse, traffic_convention, features_buffer):
  return (features_buffer.reshape(1, 12800)[:, :1000] * 2 + desire_pulse.sum() + traffic_convention.sum()).contiguous()

rng = np.random.default_rng(0)
for _ in range(3):
  args = {k: Tensor(rng.standard_normal(s, dtype=np.float32)).realize()
          for k, s in (("desire_pulse", (1, 25, 8)), ("traffic_convention", (1, 2)), ("features_buffer", (1, 25, 512)))}
  policy(**args).numpy()
with open(sys.argv[1], "wb") as f:
  pickle.dump(policy, f)
"#;

fn metadata(name: &str) -> PathBuf {
    root().join(format!(
        "qcom/testdata/openpilot-0.11/0.11.1_{name}_metadata.pkl.gz"
    ))
}

/// This workspace's xtask and modelrt binaries (built on demand, dev profile).
fn binaries() -> (PathBuf, PathBuf) {
    let modelrt = xtask::bench::build_modelrt(&root(), false).unwrap();
    (modelrt_tests::xtask_bin(&modelrt), modelrt)
}

fn convert(xtask: &Path, pkl: &Path, meta: &Path, out: &Path) -> Output {
    Command::new(xtask)
        .arg("convert")
        .arg(pkl)
        .arg("--metadata")
        .arg(meta)
        .arg("-o")
        .arg(out)
        .current_dir(root())
        .output()
        .expect("xtask runs")
}

/// Deterministic input values: element `i` of input `k`.
fn value(k: usize, i: usize) -> f32 {
    ((i * 7 + k * 3) % 23) as f32 * 0.125 - 1.0
}

#[test]
fn driving_policy_metadata_names_the_output_slices() {
    let Some(py) = python() else { return };
    let dir = root().join("target/convert_metadata");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pkl = dir.join("policy_tinygrad.pkl");
    let made = Command::new(&py)
        .args(["-c", MAKE_PICKLE])
        .arg(&pkl)
        .env("DEV", "CPU:CLANG:x86_64,x86-64-v3")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "making the TinyJit pickle failed:\n{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let (xtask, modelrt) = binaries();

    // Another model's metadata: refused with one line, nothing written.
    let refused = dir.join("refused.mrt");
    let o = convert(&xtask, &pkl, &metadata("driving_vision"), &refused);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("input_shapes names 'img', which is not an input of the program"),
        "{stderr}"
    );
    assert!(!refused.exists(), "a bundle was written");

    let out = dir.join("policy.mrt");
    let o = convert(&xtask, &pkl, &metadata("driving_policy"), &out);
    assert!(
        o.status.success(),
        "convert failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new(&modelrt)
        .arg("info")
        .arg(&out)
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{info}");
    for line in [
        "checkpoint  a27b3122-733e-4a65-938b-acfebebbe5e8/100",
        "slice       plan: outputs[..., 0:990]",
        "slice       desire_state: outputs[..., 990:998]",
        "slice       pad: outputs[..., 998:1000]",
        "output      outputs [1x1000] float32",
    ] {
        assert!(
            info.lines().any(|l| l.trim_end() == line),
            "`modelrt info` lacks `{line}`:\n{info}"
        );
    }
    assert!(info.contains("format 2.4"), "{info}");

    // It runs on the CPU and computes the TinyJit's formula.
    let bytes = std::fs::read(&out).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    assert_eq!(b.body().inputs.len(), 3);
    let mut inputs = vec![Vec::new(); 3];
    let mut vals: Vec<Vec<f32>> = Vec::new();
    for (k, name) in ["desire_pulse", "traffic_convention", "features_buffer"]
        .iter()
        .enumerate()
    {
        let i = b.input_index(name).expect("input");
        let n = b.body().inputs.get(i).unwrap().numel() as usize;
        let v: Vec<f32> = (0..n).map(|j| value(k, j)).collect();
        inputs[i] = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        vals.push(v);
    }
    let outs = run_cpu(&out, &inputs).unwrap();
    let got: Vec<f32> = outs[0]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let bias: f32 = vals[0].iter().sum::<f32>() + vals[1].iter().sum::<f32>();
    assert_eq!(got.len(), 1000);
    for (j, g) in got.iter().enumerate() {
        let want = 2.0 * vals[2][j] + bias;
        assert!((g - want).abs() < 1e-3, "outputs[{j}] = {g}, want {want}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
