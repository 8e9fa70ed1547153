//! `cargo xtask zoo`: the ONNX "light" model zoo that ships inside the `onnx` wheel, compiled for the
//! host CPU and run with `modelrt`, compared with each model's `*_output_0.pb`; and compiled for
//! `adreno-a630` and `amd-gfx1100` with every kernel binary checked to decode. Writes
//! `target/zoo/zoo.json` and the Markdown table in `docs/zoo.md`.
//!
//! Inputs follow onnx's own backend test for light models (`generate_dummy_data`, random=False):
//! `arange(n).reshape(shape) / n` as float32. The light models replace their weights with
//! `ConstantOfShape` nodes, so they exercise op coverage, shapes and the whole pipeline rather than
//! trained numerics. Tolerance: atol 1e-4, rtol 1e-3 (onnx's model tests use rtol 1e-3).
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use modelrt_core::verify::{compare, compare_reference};
use modelrt_core::Bundle;
use modelrt_hal::target::TargetName;
use modelrt_targets::runner::{load, DeviceChoice, LoadOptions};

use crate::exporter::ExportArgs;
use crate::setup::workspace_root;

/// Models of the light zoo, in the order of the table.
pub const MODELS: &[&str] = &[
    "squeezenet",
    "shufflenet",
    "resnet50",
    "inception_v1",
    "inception_v2",
    "densenet121",
    "bvlc_alexnet",
    "vgg19",
    "zfnet512",
];

/// Cross targets whose bundles are only checked to decode.
pub const CROSS_TARGETS: &[TargetName] = &[TargetName::AdrenoA630, TargetName::AmdGfx1100];

/// One model's outcome.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ZooResult {
    pub model: String,
    pub cpu: String,
    pub max_abs_err: Option<f64>,
    pub max_rel_err: Option<f64>,
    pub kernels: Option<usize>,
    pub compile_s: Option<f64>,
    pub run_ms: Option<f64>,
    pub cross: Vec<(String, String)>,
}

/// Directory of the light zoo inside the venv's onnx wheel.
pub fn zoo_dir(python: &Path) -> Result<PathBuf> {
    let out = Command::new(python)
        .args(["-c", "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend/test/data/light'))"])
        .output()
        .context("cannot run the exporter python")?;
    if !out.status.success() {
        bail!("cannot locate onnx's light model zoo");
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn reference_output(python: &Path, pb: &Path, npy: &Path) -> Result<Vec<u8>> {
    let ok = Command::new(python)
        .args([
            "-c",
            "import sys, onnx, numpy as np; np.save(sys.argv[2], onnx.numpy_helper.to_array(onnx.load_tensor(sys.argv[1])).astype(np.float32))",
        ])
        .arg(pb)
        .arg(npy)
        .status()?
        .success();
    if !ok {
        bail!("cannot read {}", pb.display());
    }
    let arr =
        modelrt_targets::npy::parse(&std::fs::read(npy)?).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(arr.data)
}

fn first_line(e: &anyhow::Error) -> String {
    let s = format!("{e:#}");
    s.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(160)
        .collect()
}

fn run_cpu(python: &Path, zoo: &Path, model: &str, out_dir: &Path) -> Result<ZooResult> {
    let onnx = zoo.join(format!("light_{model}.onnx"));
    let bundle_path = out_dir.join(format!("{model}-cpu.mrt"));
    let t = Instant::now();
    let r = crate::compile::compile(
        python,
        ExportArgs::onnx(&onnx, TargetName::host_cpu(), ""),
        &bundle_path,
    )?;
    let compile_s = t.elapsed().as_secs_f64();
    let bytes = std::fs::read(&bundle_path)?;
    let b = Bundle::parse(&bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
    let inputs: Vec<Vec<u8>> = b
        .body()
        .inputs
        .iter()
        .map(|t| {
            let t = t?;
            let n = t.numel() as usize;
            Ok((0..n)
                .flat_map(|i| ((i as f64 / n as f64) as f32).to_le_bytes())
                .collect())
        })
        .collect::<Result<_, modelrt_core::BundleError>>()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let out_desc = b
        .body()
        .outputs
        .get(0)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut model_rt = load(
        b,
        LoadOptions::on(modelrt_targets::runner::device("cpu").unwrap()),
    )?;
    let mut out = vec![0u8; out_desc.byte_len() as usize];
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    model_rt.run(&ins, &mut [&mut out])?;
    let timing = model_rt.run(&ins, &mut [&mut out])?;
    let want = reference_output(
        python,
        &zoo.join(format!("light_{model}_output_0.pb")),
        &out_dir.join(format!("{model}_output_0.npy")),
    )?;
    let c = compare(out_desc.dtype, &out, &want, 1e-4, 1e-3);
    Ok(ZooResult {
        model: model.into(),
        cpu: if c.ok() {
            "pass".into()
        } else {
            format!(
                "FAIL: {} of {} elements outside tolerance",
                c.mismatches, c.count
            )
        },
        max_abs_err: Some(c.max_abs),
        max_rel_err: Some(c.max_rel),
        kernels: Some(r.kernels),
        compile_s: Some(compile_s),
        run_ms: Some(timing.total_ns as f64 / 1e6),
        cross: Vec::new(),
    })
}

fn cross(python: &Path, zoo: &Path, model: &str, target: TargetName, out_dir: &Path) -> String {
    let onnx = zoo.join(format!("light_{model}.onnx"));
    let path = out_dir.join(format!("{model}-{target}.mrt"));
    let res = crate::compile::compile(python, ExportArgs::onnx(&onnx, target, ""), &path).and_then(
        |_| {
            let bytes = std::fs::read(&path)?;
            let b = Bundle::parse(&bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
            modelrt_targets::inspect::check_kernels(&b).map_err(|e| anyhow::anyhow!("{e}"))
        },
    );
    match res {
        Ok(c) => format!("decodes ({} kernels)", c.kernels),
        Err(e) => format!("FAIL: {}", first_line(&e)),
    }
}

/// Run the zoo (all models, or those named in `only`).
pub fn run(only: &[String], with_cross: bool) -> Result<Vec<ZooResult>> {
    let python = crate::venv::ensure_venv(&workspace_root())?;
    let zoo = zoo_dir(&python)?;
    let out_dir = workspace_root().join("target").join("zoo");
    std::fs::create_dir_all(&out_dir)?;
    let mut results = Vec::new();
    for model in MODELS
        .iter()
        .filter(|m| only.is_empty() || only.iter().any(|o| o == *m))
    {
        eprintln!("\n==> zoo: {model}");
        let mut r = run_cpu(&python, &zoo, model, &out_dir).unwrap_or_else(|e| ZooResult {
            model: (*model).into(),
            cpu: format!("FAIL: {}", first_line(&e)),
            max_abs_err: None,
            max_rel_err: None,
            kernels: None,
            compile_s: None,
            run_ms: None,
            cross: Vec::new(),
        });
        if with_cross {
            for t in CROSS_TARGETS {
                r.cross
                    .push((t.to_string(), cross(&python, &zoo, model, *t, &out_dir)));
            }
        }
        eprintln!("<== zoo: {model}: cpu {}", r.cpu);
        results.push(r);
    }
    std::fs::write(
        out_dir.join("zoo.json"),
        serde_json::to_vec_pretty(&results)?,
    )?;
    Ok(results)
}

/// The Markdown table for `docs/zoo.md`.
pub fn markdown(results: &[ZooResult]) -> String {
    let fmt =
        |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$e}")).unwrap_or_else(|| "-".into());
    let mut s = String::from("| model | cpu (x86_64) vs output_0.pb | max abs err | max rel err | kernels | compile | run |");
    for t in CROSS_TARGETS {
        s.push_str(&format!(" {t} |"));
    }
    s.push_str("\n|---|---|---|---|---|---|---|");
    for _ in CROSS_TARGETS {
        s.push_str("---|");
    }
    s.push('\n');
    for r in results {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.model,
            r.cpu,
            fmt(r.max_abs_err, 1),
            fmt(r.max_rel_err, 1),
            r.kernels
                .map(|k| k.to_string())
                .unwrap_or_else(|| "-".into()),
            r.compile_s
                .map(|v| format!("{v:.1} s"))
                .unwrap_or_else(|| "-".into()),
            r.run_ms
                .map(|v| format!("{v:.2} ms"))
                .unwrap_or_else(|| "-".into()),
        ));
        for (_, c) in &r.cross {
            s.push_str(&format!(" {c} |"));
        }
        s.push('\n');
    }
    s
}

/// One model's runs on a GPU device model: the KGSL device model's IR3 interpreter (`cargo xtask zoo --adreno`) or the
/// Navi31 GPU device model's RDNA3 interpreter behind the bridge emulator (`--amd`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DeviceModelResult {
    pub model: String,
    /// fp32, then `--image` (IMAGE=1 FLOAT16=1).
    pub runs: Vec<DeviceModelRun>,
}

/// One compile + one run on the device model.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DeviceModelRun {
    /// "pass" or "FAIL: …".
    pub status: String,
    pub max_abs_err: Option<f64>,
    pub max_rel_err: Option<f64>,
    /// One emulated inference, wall-clock seconds.
    pub step_s: Option<f64>,
    /// The CPU seconds this process spent in that inference (the interpreter is single-threaded, so on a busy
    /// machine this is the figure that says how long the step takes).
    #[serde(default)]
    pub step_cpu_s: Option<f64>,
}

/// `light_{model}.onnx` with seeded random weights (xtask/exporter/tools/zoo_random_weights.py explains why).
fn randomized(python: &Path, zoo: &Path, model: &str, out_dir: &Path) -> Result<PathBuf> {
    let out = out_dir.join(format!("{model}-random.onnx"));
    let ok = crate::exporter_python::command(python)
        .arg(crate::exporter_python::tool("zoo_random_weights.py"))
        .arg(zoo.join(format!("light_{model}.onnx")))
        .arg(&out)
        .status()?
        .success();
    if !ok {
        bail!("zoo_random_weights.py {model} failed");
    }
    Ok(out)
}

/// Compile `onnx` for adreno-a630 with an onnxruntime reference, run it on `--device qcom-emu` and compare.
fn run_adreno(python: &Path, onnx: &Path, image: bool, out: &Path) -> Result<Measured> {
    let mut args = ExportArgs::onnx(onnx, TargetName::AdrenoA630, "");
    args.reference = true;
    args.image = image;
    args.float16 = image;
    args.emu_check = false; // run_bundle is the same comparison
    crate::compile::compile(python, args, out)?;
    run_bundle(out)
}

/// (max abs err, max rel err, step wall seconds, step CPU seconds if known).
type Measured = (f64, f64, f64, Option<f64>);

/// CPU seconds (user + system) this process has used, from /proc/self/stat (Linux; None elsewhere).
fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15 (clock ticks of 1/100 s,
    // the USER_HZ Linux exports on every architecture).
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Run `bundle`'s embedded reference inputs on `--device qcom-emu` and compare with them.
fn run_bundle(bundle: &Path) -> Result<Measured> {
    run_bundle_on(bundle, modelrt_targets::runner::device("qcom-emu")?)
}

/// Run `bundle`'s embedded reference inputs on `device` and compare with them.
fn run_bundle_on(bundle: &Path, device: DeviceChoice) -> Result<Measured> {
    let bytes = std::fs::read(bundle)?;
    let b = Bundle::parse(&bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
    let r = b
        .body()
        .reference
        .ok_or_else(|| anyhow::anyhow!("no reference"))?;
    let ins: Vec<&[u8]> = r
        .inputs
        .iter()
        .map(|t| t.map(|t| t.data))
        .collect::<Result<_, _>>()?;
    let want: Vec<(&[u8], modelrt_hal::target::DType)> = r
        .outputs
        .iter()
        .zip(b.body().outputs.iter())
        .map(|(t, d)| Ok((t?.data, d?.dtype)))
        .collect::<Result<_, modelrt_core::BundleError>>()?;
    let (atol, rtol) = (r.atol as f64, r.rtol as f64);
    let mut outs: Vec<Vec<u8>> = want.iter().map(|(w, _)| vec![0u8; w.len()]).collect();
    let mut m = load(
        b,
        LoadOptions {
            device,
            threads: 0,
            ..Default::default()
        },
    )?;
    let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    let (t, cpu0) = (Instant::now(), process_cpu_s());
    m.run(&ins, &mut refs)?;
    let step = t.elapsed().as_secs_f64();
    let cpu = process_cpu_s().zip(cpu0).map(|(b, a)| b - a);
    let (mut abs, mut rel) = (0f64, 0f64);
    for (got, (w, dt)) in outs.iter().zip(&want) {
        let c = compare_reference(*dt, got, w, atol, rtol);
        if !c.ok() {
            bail!(
                "{} of {} elements outside atol {atol} rtol {rtol} (max abs err {:.1e})",
                c.mismatches,
                c.count,
                c.max_abs
            );
        }
        abs = abs.max(c.max_abs);
        rel = rel.max(c.max_rel);
    }
    Ok((abs, rel, step, cpu))
}

impl DeviceModelRun {
    /// One run's row: its errors and step time, or the first line of why it failed.
    fn from_result(res: Result<Measured>) -> DeviceModelRun {
        match res {
            Ok((a, b, s, cpu)) => DeviceModelRun {
                status: "pass".into(),
                max_abs_err: Some(a),
                max_rel_err: Some(b),
                step_s: Some(s),
                step_cpu_s: cpu,
            },
            Err(e) => DeviceModelRun {
                status: format!("FAIL: {}", first_line(&e)),
                max_abs_err: None,
                max_rel_err: None,
                step_s: None,
                step_cpu_s: None,
            },
        }
    }
}

/// The rows an earlier run left in `json` (none if it is missing or unreadable).
fn earlier_results(json: &Path) -> Vec<DeviceModelResult> {
    std::fs::read(json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Run zoo models (all, or those in `only`) with random weights through the KGSL model's IR3 interpreter.
/// `reuse`: run the bundles an earlier run left in `target/zoo/` instead of compiling them again. The results
/// are merged into `target/zoo/zoo-adreno.json` (a model run now replaces its earlier row), and all rows so far
/// are returned in the order of [`MODELS`].
pub fn run_adreno_all(only: &[String], reuse: bool) -> Result<Vec<DeviceModelResult>> {
    let python = crate::venv::ensure_venv(&workspace_root())?;
    let zoo = zoo_dir(&python)?;
    let out_dir = workspace_root().join("target").join("zoo");
    std::fs::create_dir_all(&out_dir)?;
    let json = out_dir.join("zoo-adreno.json");
    let mut results = earlier_results(&json);
    for model in MODELS
        .iter()
        .filter(|m| only.is_empty() || only.iter().any(|o| o == *m))
    {
        let mut r = DeviceModelResult {
            model: (*model).into(),
            runs: Vec::new(),
        };
        for image in [false, true] {
            eprintln!("\n==> zoo --adreno: {model} image={image}");
            let tag = if image { "-image" } else { "" };
            let bundle = out_dir.join(format!("{model}-a630{tag}.mrt"));
            let res = if reuse && bundle.exists() {
                eprintln!("reusing {}", bundle.display());
                run_bundle(&bundle)
            } else {
                randomized(&python, &zoo, model, &out_dir)
                    .and_then(|onnx| run_adreno(&python, &onnx, image, &bundle))
            };
            let run = DeviceModelRun::from_result(res);
            eprintln!("<== {}", run.status);
            r.runs.push(run);
        }
        results.retain(|x| x.model != r.model);
        results.push(r);
        results.sort_by_key(|x| MODELS.iter().position(|m| *m == x.model));
        // Written after every model, so a long run that is stopped keeps what it measured.
        std::fs::write(&json, serde_json::to_vec_pretty(&results)?)?;
    }
    Ok(results)
}

/// The Markdown table of [`run_adreno_all`] for `docs/zoo.md`.
pub fn markdown_adreno(results: &[DeviceModelResult]) -> String {
    let f = |v: Option<f64>| v.map(|x| format!("{x:.1e}")).unwrap_or_else(|| "-".into());
    let mut s = String::from(
        "| model | a630 fp32 vs onnxruntime | max abs | max rel | step | a630 `--image` (fp16) | max abs | max rel | step |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        s.push_str(&format!("| {} |", r.model));
        for x in &r.runs {
            let t = match (x.step_cpu_s, x.step_s) {
                (Some(c), Some(w)) => format!("{c:.1} s CPU ({w:.0} s wall)"),
                (None, Some(w)) => format!("{w:.1} s wall"),
                _ => "-".into(),
            };
            s.push_str(&format!(
                " {} | {} | {} | {t} |",
                x.status,
                f(x.max_abs_err),
                f(x.max_rel_err)
            ));
        }
        s.push('\n');
    }
    s
}

/// Run zoo models (all, or those in `only`) with random weights, compiled for amd-gfx1100 with an onnxruntime
/// reference, through the whole `--device usb-emu` path (AM driver → ASM24 bridge emulator → Navi31 GPU model →
/// RDNA3 interpreter; firmware from `cargo xtask firmware` unless `MODELRT_AMD_FIRMWARE_DIR` is set). Results are
/// merged into `target/zoo/zoo-amd.json` like [`run_adreno_all`]'s; one run per model (`runs` has one entry).
pub fn run_amd_all(only: &[String], reuse: bool) -> Result<Vec<DeviceModelResult>> {
    let python = crate::venv::ensure_venv(&workspace_root())?;
    let zoo = zoo_dir(&python)?;
    if std::env::var_os(modelrt_amd::platform::FIRMWARE_ENV).is_none() {
        let fw = crate::firmware::ensure()?;
        std::env::set_var(modelrt_amd::platform::FIRMWARE_ENV, fw);
    }
    let out_dir = workspace_root().join("target").join("zoo");
    std::fs::create_dir_all(&out_dir)?;
    let json = out_dir.join("zoo-amd.json");
    let mut results = earlier_results(&json);
    for model in MODELS
        .iter()
        .filter(|m| only.is_empty() || only.iter().any(|o| o == *m))
    {
        eprintln!("\n==> zoo --amd: {model}");
        let bundle = out_dir.join(format!("{model}-gfx1100.mrt"));
        let res = if reuse && bundle.exists() {
            eprintln!("reusing {}", bundle.display());
            run_bundle_on(&bundle, modelrt_targets::runner::device("usb-emu")?)
        } else {
            randomized(&python, &zoo, model, &out_dir).and_then(|onnx| {
                let mut args = ExportArgs::onnx(&onnx, TargetName::AmdGfx1100, "");
                args.reference = true;
                args.emu_check = false; // run_bundle_on is the same comparison
                crate::compile::compile(&python, args, &bundle)?;
                run_bundle_on(&bundle, modelrt_targets::runner::device("usb-emu")?)
            })
        };
        let run = DeviceModelRun::from_result(res);
        eprintln!("<== {}", run.status);
        results.retain(|x| x.model != *model);
        results.push(DeviceModelResult {
            model: (*model).into(),
            runs: vec![run],
        });
        results.sort_by_key(|x| MODELS.iter().position(|m| *m == x.model));
        std::fs::write(&json, serde_json::to_vec_pretty(&results)?)?;
    }
    Ok(results)
}

/// The Markdown table of [`run_amd_all`] for `docs/zoo.md`.
pub fn markdown_amd(results: &[DeviceModelResult]) -> String {
    let f = |v: Option<f64>| v.map(|x| format!("{x:.1e}")).unwrap_or_else(|| "-".into());
    let mut s = String::from(
        "| model | gfx1100 on usb-emu vs onnxruntime | max abs | max rel | step (host CPU, wall) |\n|---|---|---|---|---|\n",
    );
    for r in results {
        for x in &r.runs {
            let t = match (x.step_cpu_s, x.step_s) {
                (Some(c), Some(w)) => format!("{c:.1} s CPU ({w:.1} s wall)"),
                (None, Some(w)) => format!("{w:.1} s wall"),
                _ => "-".into(),
            };
            s.push_str(&format!(
                "| {} | {} | {} | {} | {t} |\n",
                r.model,
                x.status,
                f(x.max_abs_err),
                f(x.max_rel_err)
            ));
        }
    }
    s
}
