//! `modelrt info/run/bench` on a stateful bundle, driven as a user would: state buffers listed, `run
//! --steps N` with stacked `.npy` inputs and outputs, `--dump-state`, `--reset-state`, per-frame bench
//! figures, and bad input giving one `error:` line. Expected values are the closed forms in
//! `state_common`, not the runtime's own output.
mod state_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use modelrt_hal::target::DType;
use modelrt_targets::npy;
use state_common::{bytes_f32, expected, f32_bytes, stateful_bundle, x, N};

fn modelrt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_modelrt"))
        .args(args)
        .output()
        .expect("modelrt runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("modelrt-state-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The stateful bundle and `steps` stacked inputs of stream `seed`, written into `dir`.
fn setup(dir: &Path, seed: u32, steps: usize) -> (String, String) {
    let bundle = dir.join("state.mrt");
    std::fs::write(&bundle, stateful_bundle()).unwrap();
    let frames: Vec<f32> = (0..steps).flat_map(|k| x(seed, k)).collect();
    let input = dir.join("x.npy");
    std::fs::write(
        &input,
        npy::encode(DType::F32, &[steps as u64, N as u64], &f32_bytes(&frames)),
    )
    .unwrap();
    (
        bundle.display().to_string(),
        format!("x={}", input.display()),
    )
}

fn read_npy(path: &Path) -> (Vec<u64>, Vec<f32>) {
    let a = npy::parse(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(a.dtype, DType::F32);
    (a.shape, bytes_f32(&a.data))
}

fn assert_one_line_error(o: &Output, needle: &str) {
    let (out, err) = text(o);
    assert!(!o.status.success(), "expected failure, got: {out}");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("error: ") && err.contains(needle), "{err}");
}

#[test]
fn info_lists_state_buffers() {
    let dir = scratch("info");
    let (bundle, _) = setup(&dir, 0, 1);
    let o = modelrt(&["info", &bundle]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("2 state ("), "{out}");
    for needle in [
        "state       state:acc float32 [4] (16 B) — persists across runs",
        "state       state:queue float32 [4] (16 B)",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in {out}");
    }
}

#[test]
fn run_steps_stacks_outputs_and_dumps_state() {
    const STEPS: usize = 21;
    let dir = scratch("steps");
    let (bundle, input) = setup(&dir, 5, STEPS);
    let (out_dir, state_dir) = (dir.join("out"), dir.join("state"));
    let o = modelrt(&[
        "run",
        &bundle,
        "--steps",
        &STEPS.to_string(),
        "--input",
        &input,
        "--output-dir",
        out_dir.to_str().unwrap(),
        "--dump-state",
        state_dir.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains(&format!("steps       {STEPS}")), "{out}");

    let (shape, y) = read_npy(&out_dir.join("y.npy"));
    assert_eq!(shape, [STEPS as u64, N as u64]);
    let (_, q) = read_npy(&out_dir.join("queue.npy"));
    for k in 0..STEPS {
        let (_, y_want, q_want) = expected(5, k);
        assert_eq!(&y[k * N..(k + 1) * N], y_want.as_slice(), "y at step {k}");
        assert_eq!(
            &q[k * N..(k + 1) * N],
            q_want.as_slice(),
            "queue at step {k}"
        );
    }
    let (acc_want, _, q_want) = expected(5, STEPS - 1);
    assert_eq!(
        read_npy(&state_dir.join("state_acc.npy")),
        (vec![N as u64], acc_want)
    );
    assert_eq!(read_npy(&state_dir.join("state_queue.npy")).1, q_want);
}

#[test]
fn reset_state_runs_every_step_from_the_initial_state() {
    let dir = scratch("reset");
    let (bundle, input) = setup(&dir, 2, 3);
    let out_dir = dir.join("out");
    let o = modelrt(&[
        "run",
        &bundle,
        "--steps",
        "3",
        "-i",
        &input,
        "-o",
        out_dir.to_str().unwrap(),
        "--reset-state",
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let (_, y) = read_npy(&out_dir.join("y.npy"));
    for k in 0..3 {
        // Each step alone from the initial state: acc0 + 2.5 x_k + 2.5 w.
        let want: Vec<f32> = (0..N)
            .map(|i| state_common::acc0()[i] + x(2, k)[i] * 2.5 + state_common::w0()[i] * 2.5)
            .collect();
        assert_eq!(&y[k * N..(k + 1) * N], want.as_slice(), "step {k}");
    }
}

#[test]
fn bench_steps_reports_per_frame_times() {
    let dir = scratch("bench");
    let (bundle, input) = setup(&dir, 1, 8);
    let o = modelrt(&[
        "bench", &bundle, "--steps", "8", "--warmup", "2", "-i", &input, "--json",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(v["steps"], 8);
    assert_eq!(v["samples_ns"].as_array().unwrap().len(), 8);
    let (lo, med, hi) = (
        v["min_ns"].as_u64().unwrap(),
        v["median_ns"].as_u64().unwrap(),
        v["max_ns"].as_u64().unwrap(),
    );
    assert!(lo <= med && med <= hi && hi > 0, "{v}");
    assert_eq!(v["input_paths"], serde_json::Value::Null);
    let o = modelrt(&[
        "bench",
        &bundle,
        "--steps",
        "8",
        "-i",
        &input,
        "--zero-copy",
        "--json",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(v["input_paths"], serde_json::json!(["zero-copy"]));
    let o = modelrt(&["bench", &bundle, "--steps", "5", "--warmup", "0"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("frame       min"), "{out}");
    assert!(
        out.contains("(5 consecutive frames, state carried"),
        "{out}"
    );
}

#[test]
fn bad_step_inputs_give_one_clear_line() {
    let dir = scratch("bad");
    let (bundle, input) = setup(&dir, 0, 3);
    assert_one_line_error(
        &modelrt(&["run", &bundle, "--steps", "4", "-i", &input]),
        "has shape [3x4], --steps 4 expects [4x4] (4 stacked [4])",
    );
    assert_one_line_error(
        &modelrt(&["run", &bundle, "--steps", "0", "-i", &input]),
        "--steps must be at least 1",
    );
    assert_one_line_error(
        &modelrt(&["run", &bundle, "--steps", "3", "-i", "x=/nonexistent/x.npy"]),
        "cannot read /nonexistent/x.npy",
    );
    assert_one_line_error(
        &modelrt(&["run", &bundle, "--steps", "3"]),
        "missing input 'x' ([3x4] float32)",
    );
    // Without --steps the file must have the model's own shape.
    assert_one_line_error(
        &modelrt(&["run", &bundle, "-i", &input]),
        "has shape [3x4], the model expects [4]",
    );
    assert_one_line_error(
        &modelrt(&["bench", &bundle, "--steps", "0"]),
        "--steps must be at least 1",
    );
}

#[test]
fn dump_state_of_a_stateless_bundle_is_refused() {
    let dir = scratch("stateless");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join(if cfg!(target_arch = "aarch64") {
        "assets/demo-aarch64.mrt"
    } else {
        "assets/demo-x86_64.mrt"
    });
    let b = std::fs::read(&demo).unwrap();
    let bundle = modelrt_core::Bundle::parse(&b).unwrap();
    let input = bundle.body().inputs.get(0).unwrap();
    let data = bundle.body().reference.unwrap().inputs.get(0).unwrap().data;
    let file = dir.join("img.npy");
    std::fs::write(&file, npy::encode(input.dtype, &input.shape, data)).unwrap();
    assert_one_line_error(
        &modelrt(&[
            "run",
            demo.to_str().unwrap(),
            "-i",
            &format!("img={}", file.display()),
            "--dump-state",
            dir.join("s").to_str().unwrap(),
        ]),
        "this bundle has no state buffers",
    );
}
