//! `cargo xtask convert` on tinygrad 0.14 compile3 pickles made here.
//!
//! - CPU: plain and `PICKLE_OOB=1` pickles of policy.onnx (xtask/exporter/tools/make_test_pickle.py) are converted and run
//!   on the CPU with the pickle's own inputs; the outputs must match tinygrad's own output for those inputs (golden
//!   check against the reference runtime).
//! - QCOM/IR3: real QCOM pickles (xtask/exporter/tools/make_qcom_pickle.py: tinygrad's QCOM backend + Mesa ir3 on the
//!   fake KGSL of qcom/golden/fake_kgsl.py) are converted to Adreno a630 bundles whose kernels decode, whose
//!   weights are the model's bytes, and which load and run on the KGSL model (streams validated, shaders not run).
//! - A pickle of a layout that is not converted, or compiled on the NULL device (no weights), is refused with a clear
//!   error naming the layout (mrt/pickle_layout.py).
use modelrt_hal::target::TargetName;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use modelrt_core::bundle::BufferKind;
use modelrt_core::Bundle;
use modelrt_hal::target::{DType, Target};
use modelrt_targets::inspect::check_kernels;
use modelrt_tests::{compile_args, count_launches, python, root, run_cpu, run_on_kgsl_model};
use xtask::exporter::{ExportArgs, Source};

/// Bound on any helper script (pickle creation takes a few seconds here).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(300);
/// tinygrad's own output vs ours for the same CPU kernels.
const CPU_ATOL: f32 = 1e-5;

/// A fresh scratch directory for one test.
fn workdir(name: &str) -> PathBuf {
    let d = root().join("target/convert_pickle").join(name);
    if d.exists() {
        std::fs::remove_dir_all(&d).unwrap();
    }
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `py args..` with extra environment; panics with its stderr on failure or timeout.
fn run_py(py: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(py);
    cmd.args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for k in ["DEV", "IMAGE", "FLOAT16", "CPU", "QCOM", "NULL"] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("python starts");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait works").is_some() {
            break;
        }
        if start.elapsed() > SCRIPT_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} timed out after {SCRIPT_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output collected");
    assert!(
        out.status.success(),
        "{args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn script(name: &str) -> String {
    root()
        .join("xtask/exporter/tools")
        .join(name)
        .display()
        .to_string()
}

fn model(name: &str) -> String {
    root()
        .join(format!("xtask/models/{name}.onnx"))
        .display()
        .to_string()
}

/// `cargo xtask convert PICKLE -o OUT`.
fn convert(py: &Path, pkl: &Path, out: &Path) -> anyhow::Result<Vec<u8>> {
    let mut args = ExportArgs::pickle(pkl, "");
    args.source = Source::Pickle(pkl.to_path_buf());
    xtask::compile::compile(py, args, out)?;
    Ok(std::fs::read(out)?)
}

/// The pickle's inputs (`PKL.in.npz`, written by make_test_pickle.py) as raw bytes, by name.
fn pickle_inputs(py: &Path, pkl: &Path, dir: &Path) -> Vec<(String, Vec<u8>)> {
    let code = "import numpy as np, sys\nz = np.load(sys.argv[1])\nfor i, k in enumerate(z.files):\n  \
                open(f'{sys.argv[2]}/in{i}.bin', 'wb').write(np.ascontiguousarray(z[k]).tobytes()); print(k)";
    let npz = format!("{}.in.npz", pkl.display());
    let names = run_py(py, &["-c", code, &npz, &dir.display().to_string()], &[]);
    names
        .lines()
        .enumerate()
        .map(|(i, n)| {
            (
                n.to_string(),
                std::fs::read(dir.join(format!("in{i}.bin"))).unwrap(),
            )
        })
        .collect()
}

/// The ONNX model's float32 initializers as raw little-endian bytes.
fn onnx_initializers(py: &Path, onnx: &str, dir: &Path) -> Vec<(String, Vec<u8>)> {
    let code = "import onnx, sys, numpy as np\nfrom onnx import numpy_helper\n\
                ts = [t for t in onnx.load(sys.argv[1]).graph.initializer if t.data_type == onnx.TensorProto.FLOAT]\n\
                for i, t in enumerate(ts):\n  \
                open(f'{sys.argv[2]}/init{i}.bin', 'wb').write(np.ascontiguousarray(numpy_helper.to_array(t)).tobytes()); print(t.name)";
    let names = run_py(py, &["-c", code, onnx, &dir.display().to_string()], &[]);
    names
        .lines()
        .enumerate()
        .map(|(i, n)| {
            (
                n.to_string(),
                std::fs::read(dir.join(format!("init{i}.bin"))).unwrap(),
            )
        })
        .collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn cpu_pickles_match_tinygrad_output() {
    let Some(py) = python() else { return };
    let dir = workdir("cpu");
    for oob in [false, true] {
        let t = Instant::now();
        let pkl = dir.join(format!(
            "convert-cpu-policy{}.pkl",
            if oob { "-oob" } else { "" }
        ));
        let p = pkl.display().to_string();
        let mut args = vec![script("make_test_pickle.py"), model("policy"), p.clone()];
        if oob {
            args.push("--oob".into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_py(&py, &args, &[("DEV", "CPU:CLANG:x86_64,x86-64-v3")]);
        let bytes = convert(&py, &pkl, &pkl.with_extension("mrt")).expect("CPU pickle converts");
        let b = Bundle::parse(&bytes).expect("bundle parses and validates");
        assert!(matches!(
            b.body().target,
            Target::Cpu {
                baseline: "x86-64-v3",
                ..
            }
        ));

        let given = pickle_inputs(&py, &pkl, &dir);
        let inputs: Vec<Vec<u8>> = b
            .body()
            .inputs
            .iter()
            .map(|t| {
                let t = t.unwrap();
                let (_, data) = given
                    .iter()
                    .find(|(n, _)| n == t.name)
                    .unwrap_or_else(|| panic!("pickle has no input '{}'", t.name));
                assert_eq!(data.len() as u64, t.byte_len(), "input '{}'", t.name);
                data.clone()
            })
            .collect();
        assert_eq!(inputs.len(), given.len());
        let outs = run_cpu(&pkl.with_extension("mrt"), &inputs).expect("bundle runs on the CPU");

        let want = std::fs::read(format!("{p}.out.npy")).unwrap();
        let want = modelrt_targets::npy::parse(&want).expect("tinygrad's output parses");
        assert_eq!(want.dtype, DType::F32);
        assert_eq!(outs.len(), 1);
        let (got, want) = (f32s(&outs[0]), f32s(&want.data));
        assert_eq!(got.len(), want.len());
        assert!(
            want.iter().any(|&w| w != 0.0),
            "tinygrad's output is all zero"
        );
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= CPU_ATOL,
                "oob={oob} output[{i}]: modelrt {g} vs tinygrad {w}"
            );
        }
        eprintln!("cpu pickle oob={oob}: {:.1}s", t.elapsed().as_secs_f64());
    }
}

/// Check the weights of a converted QCOM pickle against the ONNX initializers: every float32 weight buffer is an
/// initializer byte for byte, and every initializer is present. With `image` (IMAGE=1 FLOAT16=1) tinygrad derives
/// the conv weights on the GPU (half images); the fake KGSL runs no shader, so those buffers hold the zeros of fresh
/// memory — the bytes tinygrad held — and only the biases (uploaded as-is) map 1:1.
fn check_weights(b: &Bundle<'_>, inits: &[(String, Vec<u8>)], image: bool) {
    let mut found = vec![false; inits.len()];
    for buf in b.body().buffers.iter() {
        let buf = buf.unwrap();
        if buf.kind != BufferKind::Weight {
            continue;
        }
        let data = b.init_bytes(&buf).expect("weights carry initial bytes");
        assert_eq!(data.len() as u64, buf.size);
        match inits.iter().position(|(_, d)| d.as_slice() == data) {
            Some(i) => found[i] = true,
            None => {
                assert!(
                    image,
                    "weight buffer '{}' ({} bytes) is no ONNX initializer",
                    buf.label, buf.size
                );
                assert_eq!(buf.dtype, DType::F16, "derived weight '{}'", buf.label);
                assert!(
                    data.iter().all(|&x| x == 0),
                    "derived weight '{}' should hold the fake's zeros",
                    buf.label
                );
            }
        }
    }
    for ((name, _), f) in inits.iter().zip(&found) {
        assert!(
            *f || (image && !name.ends_with(".bias")),
            "initializer '{name}' missing from the bundle's weights"
        );
    }
}

/// The pickle's kernels, decoded by the importer, equal those `--target adreno-a630` compiles from the same ONNX
/// (binary, params, decoded IR3 metadata, immediates): both paths run the same tinygrad + Mesa ir3.
fn same_kernels_as_onnx_compile(py: &Path, b: &Bundle<'_>, name: &str) {
    let path = compile_args(
        py,
        ExportArgs::onnx(model(name), TargetName::AdrenoA630, ""),
        "-convert-pickle",
    );
    let bytes = std::fs::read(path).unwrap();
    let onnx = Bundle::parse(&bytes).unwrap();
    let theirs: Vec<_> = onnx.body().kernels.iter().map(Result::unwrap).collect();
    let ours: Vec<_> = b.body().kernels.iter().map(Result::unwrap).collect();
    assert_eq!(ours.len(), theirs.len(), "{name}: kernel count");
    for k in &ours {
        assert!(
            theirs.contains(k),
            "{name}: kernel {} differs from the ONNX compile",
            k.name
        );
    }
}

#[test]
fn qcom_ir3_pickles_convert_and_run_on_kgsl_model() {
    let Some(py) = python() else { return };
    let dir = workdir("qcom");
    for (name, oob, image) in [
        ("policy", false, false),
        ("policy", true, false),
        ("vision", false, true),
        ("vision", true, true),
    ] {
        let t = Instant::now();
        let tag = format!(
            "{name}{}{}",
            if oob { "-oob" } else { "" },
            if image { "-image" } else { "" }
        );
        let pkl = dir.join(format!("convert-qcom-{tag}.pkl"));
        let mut args = vec![
            script("make_qcom_pickle.py"),
            model(name),
            pkl.display().to_string(),
        ];
        if oob {
            args.push("--oob".into());
        }
        if image {
            args.push("--image".into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_py(&py, &args, &[]);
        let out = pkl.with_extension("mrt");
        let bytes = convert(&py, &pkl, &out).unwrap_or_else(|e| panic!("{tag}: {e:#}"));
        let b = Bundle::parse(&bytes).expect("bundle parses and validates");
        assert_eq!(
            b.body().target,
            Target::Adreno {
                chip: 630,
                image,
                half: image
            },
            "{tag}"
        );
        assert_eq!(b.body().producer.dev, "QCOM", "{tag}");
        assert_eq!(b.body().producer.tinymesa, Some("25.2.7.2"), "{tag}");
        let c = check_kernels(&b).unwrap_or_else(|e| panic!("{tag}: kernel binaries: {e}"));
        assert!(c.kernels > 0 && c.code_bytes > 0);
        let inits = onnx_initializers(&py, &model(name), &dir);
        check_weights(&b, &inits, image);
        if (name, oob, image) == ("policy", false, false) {
            same_kernels_as_onnx_compile(&py, &b, name);
        }

        let launches = count_launches(&b);
        assert!(launches > 0);
        let (dispatches, _) = run_on_kgsl_model(b);
        assert!(
            dispatches >= 2 * launches,
            "{tag}: {dispatches} dispatches for {launches} launches"
        );

        if !oob {
            let again = convert(
                &py,
                &pkl,
                &dir.join(format!("convert-qcom-{tag}-again.mrt")),
            )
            .unwrap();
            assert!(
                again == bytes,
                "{tag}: converting the same pickle twice differs"
            );
        }
        eprintln!("qcom pickle {tag}: {:.1}s", t.elapsed().as_secs_f64());
    }
}

/// `global` opcode of a protocol-2 pickle (as xtask/exporter/tests/test_exporter.py builds them).
fn global_op(module: &str, name: &str) -> Vec<u8> {
    format!("c{module}\n{name}\n").into_bytes()
}

#[test]
fn null_device_pickle_is_refused() {
    let Some(py) = python() else { return };
    let dir = workdir("null");
    let pkl = dir.join("convert-null-policy.pkl");
    let p = pkl.display().to_string();
    let env = [("DEV", "NULL:IR3:a630"), ("NULL_ALLOW_COPYOUT", "1")];
    run_py(
        &py,
        &[&script("make_test_pickle.py"), &model("policy"), &p],
        &env,
    );
    let out = dir.join("convert-null-policy.mrt");
    let err = convert(&py, &pkl, &out).expect_err("a NULL-device pickle has no weights");
    let msg = format!("{err:#}");
    assert!(msg.contains("NULL (data-less) device"), "{msg}");
    assert!(!out.exists());
}

#[test]
fn other_tinygrad_version_pickles_are_refused() {
    let Some(py) = python() else { return };
    let dir = workdir("versions");
    // 0.13: CapturedJit with 4 fields but no ParamArg buffers.
    let v013 = [
        &b"\x80\x02"[..],
        &global_op("tinygrad.engine.jit", "CapturedJit"),
        b"(NNNNtR.",
    ]
    .concat();
    // <= 0.12: CapturedJit with 6 fields, jit_cache of ExecItem.
    let v012 = [
        &b"\x80\x02"[..],
        &global_op("tinygrad.engine.jit", "CapturedJit"),
        b"(N]",
        &global_op("tinygrad.engine.realize", "ExecItem"),
        b")RaNNNNtR.",
    ]
    .concat();
    for (data, found) in [
        (
            v013,
            "unknown TinyJit layout; the closest known is the linear-index layout (tinygrad v0.12.0 from 2026-04-16",
        ),
        (v012, "exec-items layout (tinygrad 0.10 to v0.12.0"),
    ] {
        let pkl = dir.join("convert-old.pkl");
        std::fs::write(&pkl, data).unwrap();
        let out = dir.join("convert-old.mrt");
        let err = convert(&py, &pkl, &out).expect_err("old pickle is refused");
        let msg = format!("{err:#}");
        assert!(msg.contains(found), "{msg}");
        assert!(!out.exists());
    }
}
