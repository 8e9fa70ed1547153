//! Shared helpers for modelrt's cross-crate integration tests: finding the exporter's Python, compiling
//! models with the real `xtask` pipeline (cached per test process), running bundles through the
//! same runner the `modelrt` binary uses, and counting a bundle's kernel launches.
//!
//! Tests that need Python (tinygrad, onnxruntime) find it via `MODELRT_PYTHON`, else the xtask venv at
//! `target/modelrt-venv`. Without either they skip through [`skip`], which reports every skip and turns
//! it into a failure under CI (`CI` set, or `MODELRT_REQUIRE_PYTHON=1` as `cargo xtask ci` sets).
#![forbid(unsafe_code)]
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use modelrt_core::bundle::Bundle;
use modelrt_targets::runner::{load, LoadOptions};
use xtask::exporter::ExportArgs;

pub mod hexagon;
pub mod multi_fixture;
pub mod skip;

/// This workspace's xtask binary (built on demand, dev profile), next to `modelrt` in the target directory.
pub fn xtask_bin(modelrt: &Path) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let ok = std::process::Command::new(cargo)
        .args(["build", "--quiet", "-p", "xtask", "--bin", "xtask"])
        .current_dir(root())
        .status()
        .expect("cargo runs")
        .success();
    assert!(ok, "building the xtask binary failed");
    modelrt.with_file_name("xtask")
}

/// The workspace root.
pub fn root() -> PathBuf {
    xtask::setup::workspace_root()
}

/// The exporter's Python, or `None` after reporting a [`skip::skip`] (a failure under CI).
pub fn python() -> Option<PathBuf> {
    let p = std::env::var_os("MODELRT_PYTHON")
        .map(PathBuf::from)
        .or_else(|| Some(root().join("target/modelrt-venv/bin/python")))
        .filter(|p| p.exists());
    skip::require(
        p,
        "no exporter Python (set MODELRT_PYTHON or run `cargo xtask setup`)",
    )
}

/// Where the ONNX light zoo lives inside the venv's `onnx` wheel.
pub fn light_zoo(python: &Path) -> PathBuf {
    let out = std::process::Command::new(python)
        .args(["-c", "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend/test/data/light'))"])
        .output()
        .expect("python runs");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// One cell per compile key: the map's lock is held only to find the cell, so different models compile on both
/// test threads at once while the same key still compiles once.
fn cell(key: String) -> Arc<OnceLock<PathBuf>> {
    static C: OnceLock<Mutex<HashMap<String, Arc<OnceLock<PathBuf>>>>> = OnceLock::new();
    let mut map = C
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    map.entry(key).or_default().clone()
}

/// Compile `onnx` for `target` (with `--reference` when asked) into `target/e2e/`, once per process.
pub fn compile(python: &Path, onnx: &Path, target: &str, reference: bool, tag: &str) -> PathBuf {
    let mut args = ExportArgs::onnx(onnx, target.parse().expect("a target name"), PathBuf::new());
    args.reference = reference;
    compile_args(python, args, tag)
}

/// Compile with full exporter arguments; `tag` distinguishes output files of the same model/target.
///
/// Besides the per-process cell, compiles are shared between test processes through [`shared_compile`]: the same
/// arguments on the same source tree give the same bundle, so the second test binary that needs it copies it.
pub fn compile_args(python: &Path, args: ExportArgs, tag: &str) -> PathBuf {
    let onnx = args.source.file();
    let key = format!(
        "{}|{}|{}|{tag}",
        onnx.display(),
        args.target_label(),
        args.reference
    );
    cell(key)
        .get_or_init(|| {
            let stem = onnx.file_stem().unwrap().to_string_lossy();
            let out = root()
                .join("target/e2e")
                .join(format!("{stem}-{}{tag}.mrt", args.target_label()));
            shared_compile(python, args, &out)
                .unwrap_or_else(|e| panic!("compiling {}: {e:#}", onnx.display()));
            out
        })
        .clone()
}

/// `xtask::compile::compile(python, args, out)`, or a copy of the bundle an earlier test process compiled from the
/// same arguments, source file and source tree (`target/e2e/shared/KEY.mrt`). The key hashes the exporter's argv
/// (without `--out`), the model/script file's bytes and [`tree_state`]; without a git checkout nothing is shared.
pub fn shared_compile(python: &Path, args: ExportArgs, out: &Path) -> anyhow::Result<()> {
    use sha2::{Digest, Sha256};
    let Some(tree) = tree_state() else {
        xtask::compile::compile(python, args, out)?;
        return Ok(());
    };
    let mut argv = args.to_argv();
    if let Some(i) = argv.iter().position(|a| a == "--out") {
        argv.drain(i..(i + 2).min(argv.len()));
    }
    let mut h = Sha256::new();
    h.update(tree.as_bytes());
    for a in &argv {
        h.update(a.as_bytes());
        h.update([0]);
    }
    h.update(std::fs::read(args.source.file()).unwrap_or_default());
    let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let shared = root().join("target/e2e/shared").join(format!("{key}.mrt"));
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    if shared.is_file() {
        std::fs::copy(&shared, out)?;
        return Ok(());
    }
    xtask::compile::compile(python, args, out)?;
    std::fs::create_dir_all(shared.parent().unwrap())?;
    // written aside and renamed: a reader never sees half a bundle
    let tmp = shared.with_extension(format!("tmp{}", std::process::id()));
    std::fs::copy(out, &tmp)?;
    std::fs::rename(&tmp, &shared)?;
    Ok(())
}

/// The state of the source tree the bundles come from: `HEAD`, the diff of tracked files against it and the
/// untracked files (names and bytes). `None` outside a git checkout (then nothing is shared between processes).
fn tree_state() -> Option<&'static str> {
    static S: OnceLock<Option<String>> = OnceLock::new();
    S.get_or_init(|| {
        let git = |args: &[&str]| -> Option<Vec<u8>> {
            let o = std::process::Command::new("git")
                .args(args)
                .current_dir(root())
                .output()
                .ok()?;
            o.status.success().then_some(o.stdout)
        };
        let head = git(&["rev-parse", "HEAD"])?;
        let diff = git(&["diff", "HEAD", "--binary"])?;
        let others = git(&["ls-files", "--others", "--exclude-standard", "-z"])?;
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(&head);
        h.update(&diff);
        for name in others.split(|&b| b == 0).filter(|n| !n.is_empty()) {
            h.update(name);
            h.update(
                std::fs::read(root().join(String::from_utf8_lossy(name).as_ref()))
                    .unwrap_or_default(),
            );
        }
        Some(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
    })
    .as_deref()
}

/// Replay the manifest a `cpu-aarch64` compile of `bundle_path` left in its scratch directory with the exporter's
/// independent aarch64 replayer (`xtask/exporter/tests/check_manifest_aarch64.py`: the kernels cross-built and run
/// under qemu-aarch64 against the embedded onnxruntime outputs); panics with its output when it fails. Without
/// qemu-aarch64 or the aarch64 cross compiler the test is skipped, visibly ([`skip::require`]).
pub fn replay_aarch64_manifest(python: &Path, bundle_path: &Path) {
    let has_tools = ["qemu-aarch64", "aarch64-linux-gnu-gcc"].iter().all(|t| {
        std::process::Command::new(t)
            .arg("--version")
            .output()
            .is_ok()
    });
    if skip::require(
        has_tools.then_some(()),
        "no qemu-aarch64 / aarch64-linux-gnu-gcc (Debian qemu-user, gcc-aarch64-linux-gnu)",
    )
    .is_none()
    {
        return;
    }
    let manifest = xtask::compile::scratch_dir(&root(), bundle_path, "cpu-aarch64");
    let o = std::process::Command::new(python)
        .arg(root().join("xtask/exporter/tests/check_manifest_aarch64.py"))
        .arg(&manifest)
        .output()
        .expect("cannot run the aarch64 replayer");
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Run a bundle file on the CPU with the given inputs; returns the outputs.
pub fn run_cpu(bundle_path: &Path, inputs: &[Vec<u8>]) -> anyhow::Result<Vec<Vec<u8>>> {
    let bytes = std::fs::read(bundle_path)?;
    let bundle = Bundle::parse(&bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut model = load(
        bundle,
        LoadOptions::on(modelrt_targets::runner::device("cpu").unwrap()),
    )?;
    let mut outs: Vec<Vec<u8>> = model
        .bundle()
        .body()
        .outputs
        .iter()
        .map(|t| t.map(|t| vec![0u8; t.byte_len() as usize]))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    model.run(&ins, &mut refs)?;
    Ok(outs)
}

/// The embedded reference inputs and expected outputs of a bundle file.
pub fn reference(bundle_bytes: &[u8]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, f32, f32) {
    let b = Bundle::parse(bundle_bytes).expect("valid bundle");
    let r = b.body().reference.expect("bundle has a reference");
    let ins = r.inputs.iter().map(|t| t.unwrap().data.to_vec()).collect();
    let outs = r.outputs.iter().map(|t| t.unwrap().data.to_vec()).collect();
    (ins, outs, r.atol, r.rtol)
}

/// Little-endian f32 bytes (the bundle writer's helper, re-exported for the tests here).
pub use modelrt_core::bundle::writer::f32_bytes;

/// Number of kernel launches in `bundle`'s run schedule.
pub fn count_launches(bundle: &Bundle<'_>) -> usize {
    bundle
        .body()
        .run
        .iter()
        .filter(|s| {
            matches!(
                s,
                Ok(modelrt_core::bundle::Step::Launch { .. }
                    | modelrt_core::bundle::Step::LaunchThreads { .. })
            )
        })
        .count()
}

/// Load `bundle` on the Adreno backend over the KGSL model and run it twice on zero inputs; every
/// submitted PM4 stream is validated by the model (which executes no shaders). Returns the number of
/// dispatches and of submissions the model saw.
pub fn run_on_kgsl_model(bundle: Bundle<'_>) -> (usize, usize) {
    use modelrt_qcom::adreno::AdrenoDevice;
    use modelrt_qcom::emu::kgsl::KgslModel;
    let dev = AdrenoDevice::open(KgslModel::new(Default::default()), Default::default())
        .expect("KGSL model opens");
    let zeros =
        |t: modelrt_core::bundle::Table<'_, modelrt_core::bundle::TensorDesc<'_>>| -> Vec<Vec<u8>> {
            t.iter()
                .map(|t| vec![0u8; t.expect("valid bundle").byte_len() as usize])
                .collect()
        };
    let inputs = zeros(bundle.body().inputs);
    let mut outputs = zeros(bundle.body().outputs);
    let mut ex =
        modelrt_core::Executor::load(bundle, dev).expect("a630 bundle loads on the Adreno backend");
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    for _ in 0..2 {
        ex.run(&ins, &mut outs)
            .expect("every submitted stream validates");
    }
    ex.device_mut()
        .with_kgsl(|k: &mut KgslModel| (k.dispatches().len(), k.submitted().len()))
}
