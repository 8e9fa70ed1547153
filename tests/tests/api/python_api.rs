//! The Python API (crate `targets/python`) from Python: the wheel `cargo xtask wheel` builds
//! (`xtask::wheel`, maturin) is installed with pip into a scratch directory and the unittest suite
//! `targets/python/tests/test_modelrt.py` runs against it with the exporter's Python (numpy).
//! The expected values come from outside the API: the `modelrt run` CLI's outputs (bit for bit),
//! the bundle's embedded onnxruntime outputs (within its tolerance), and `modelrt run --steps N`
//! plus `--dump-state` for a stateful bundle compiled from `targets/python/tests/stateful.py`, on
//! the CPU and on the emulated devices (`qcom-emu`: adreno-a630 on the KGSL model and IR3
//! interpreter; `usb-emu`: amd-gfx1100 on the ASM24 bridge, Navi31 and RDNA3 models, which needs
//! `cargo xtask firmware`), a small stateless net on `dsp-emu` (hexagon-v65 under qemu-hexagon) against the CLI and its embedded reference, and the modeld
//! pipeline bundle
//! (`xtask/models/modeld_pipeline.py`) stepped `PIPELINE_FRAMES` frames against `modelrt run --steps`
//! with frames drawn by the pipeline script's own sampler, and a two-role multi-device container
//! (`modelrt_tests::multi_fixture`) loaded with `device="cpu,cpu"` against `modelrt run --device cpu,cpu`.
use modelrt_hal::target::TargetName;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use modelrt_core::bundle::Bundle;
use modelrt_hal::target::DType;
use modelrt_targets::npy;
use modelrt_tests::{compile, compile_args, hexagon, python, reference, root, skip};
use xtask::exporter::{ExportArgs, Source};

/// Steps the stateful bundle is run for.
const STEPS: u64 = 6;
/// Frames the modeld pipeline bundle is stepped for.
const PIPELINE_FRAMES: usize = 20;

fn run(cmd: &mut Command) -> Output {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The `modelrt` binary of this workspace (built on demand, dev profile).
fn modelrt_bin() -> PathBuf {
    xtask::bench::build_modelrt(&root(), false).unwrap_or_else(|e| panic!("{e:#}"))
}

/// The file `modelrt run -o` writes for output `name`: characters other than letters, digits and
/// `-_.` become `_` (the CLI's `--output-dir` help).
fn cli_file(name: &str) -> String {
    let n: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{n}.npy")
}

/// A bundle's embedded reference inputs and outputs, and the CLI's outputs on `device`, as the
/// suite reads them.
fn demo_fixture(bin: &Path, bundle: &Path, device: &str, dir: &Path) {
    let bytes = std::fs::read(bundle).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let (ins, outs, atol, rtol) = reference(&bytes);
    let mut cmd = Command::new(bin);
    cmd.arg("run").arg(bundle).args(["--device", device, "-o"]);
    cmd.arg(dir.join("cli"));
    for (i, (t, data)) in b.body().inputs.iter().zip(&ins).enumerate() {
        let t = t.unwrap();
        let f = dir.join(format!("input{i}.npy"));
        std::fs::write(&f, npy::encode(t.dtype, &t.shape, data)).unwrap();
        cmd.arg("-i").arg(format!("{}={}", t.name, f.display()));
    }
    run(&mut cmd);
    for (i, (t, data)) in b.body().outputs.iter().zip(&outs).enumerate() {
        let t = t.unwrap();
        let f = dir.join(format!("ref{i}.npy"));
        std::fs::write(&f, npy::encode(t.dtype, &t.shape, data)).unwrap();
        std::fs::rename(
            dir.join("cli").join(cli_file(t.name)),
            dir.join(format!("cli{i}.npy")),
        )
        .unwrap();
    }
    std::fs::write(dir.join("tol.txt"), format!("{atol} {rtol}")).unwrap();
}

/// `STEPS` steps of seeded inputs for the stateful bundle, its outputs from `modelrt run --steps`
/// on `device` and its state after the last step from `--dump-state`.
fn state_fixture(bin: &Path, bundle: &Path, device: &str, dir: &Path) {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let data: Vec<u8> = (0..STEPS * 8)
        .flat_map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ((seed >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0).to_le_bytes()
        })
        .collect();
    let x = dir.join("x.npy");
    std::fs::write(&x, npy::encode(DType::F32, &[STEPS, 1, 8], &data)).unwrap();
    let (cli, state) = (dir.join("cli"), dir.join("state"));
    run(Command::new(bin)
        .env(
            "MODELRT_AMD_FIRMWARE_DIR",
            root().join("target/amdgpu-firmware"),
        )
        .arg("run")
        .arg(bundle)
        .args(["--device", device, "--steps", &STEPS.to_string(), "-i"])
        .arg(format!("x={}", x.display()))
        .arg("-o")
        .arg(&cli)
        .arg("--dump-state")
        .arg(&state));
    std::fs::rename(cli.join("y.npy"), dir.join("y.npy")).unwrap();
    let dumped: Vec<_> = std::fs::read_dir(&state).unwrap().collect();
    assert_eq!(dumped.len(), 1, "one state buffer dumped");
    std::fs::rename(dumped[0].as_ref().unwrap().path(), dir.join("acc.npy")).unwrap();
}

/// `MRT_MULTI_DIR`: `multi.mrt` (the two-role copy-only container of `modelrt_tests::multi_fixture`,
/// written with `write_multi`), `x.npy` (`FRAMES` frames of its input, stacked) and `z.npy` (what
/// `modelrt run --device cpu,cpu --steps FRAMES` outputs for them).
fn multi_fixture(bin: &Path, dir: &Path) -> PathBuf {
    const FRAMES: u64 = 3;
    let n = modelrt_tests::multi_fixture::N;
    let bundle = dir.join("multi.mrt");
    std::fs::write(&bundle, modelrt_tests::multi_fixture::copy_chain()).unwrap();
    let x: Vec<f32> = (0..FRAMES * n).map(|i| i as f32 * 0.75 - 3.0).collect();
    let x_file = dir.join("x.npy");
    std::fs::write(
        &x_file,
        npy::encode(
            DType::F32,
            &[FRAMES, n],
            &modelrt_core::bundle::writer::f32_bytes(&x),
        ),
    )
    .unwrap();
    run(Command::new(bin)
        .arg("run")
        .arg(&bundle)
        .args(["--device", "cpu,cpu", "--steps", &FRAMES.to_string(), "-i"])
        .arg(format!("x={}", x_file.display()))
        .arg("-o")
        .arg(dir.join("cli")));
    std::fs::rename(dir.join("cli/z.npy"), dir.join("z.npy")).unwrap();
    bundle
}

/// The modeld pipeline bundle (CPU), `PIPELINE_FRAMES` frames of its inputs drawn by the pipeline
/// script's own `sample_inputs` (`NAME.npy`, stacked), the outputs of `modelrt run --steps` (`cli/`)
/// and its state after the last frame (`state/`); returns the bundle.
fn pipeline_fixture(py: &Path, bin: &Path, dir: &Path) -> PathBuf {
    let mut args = ExportArgs::onnx(PathBuf::new(), TargetName::host_cpu(), PathBuf::new());
    args.source = Source::Tinygrad(xtask::pipeline::script_spec());
    let bundle = compile_args(py, args, "pyapi");
    let script = "import importlib.util, sys\nimport numpy as np\n\
                  spec = importlib.util.spec_from_file_location('pipeline', sys.argv[1])\n\
                  m = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(m)\n\
                  rng = np.random.default_rng(7)\n\
                  fs = [m.sample_inputs(rng) for _ in range(int(sys.argv[3]))]\n\
                  for k in fs[0]: np.save(f'{sys.argv[2]}/{k}.npy', np.stack([f[k] for f in fs]))\n\
                  print(' '.join(fs[0]))\n";
    let o = run(xtask::exporter_python::command(py)
        .args(["-c", script])
        .arg(root().join("xtask/models/modeld_pipeline.py"))
        .arg(dir)
        .arg(PIPELINE_FRAMES.to_string()));
    let names = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let mut cmd = Command::new(bin);
    cmd.arg("run")
        .arg(&bundle)
        .args(["--device", "cpu", "--steps", &PIPELINE_FRAMES.to_string()]);
    for n in names.split_whitespace() {
        cmd.arg("-i")
            .arg(format!("{n}={}", dir.join(format!("{n}.npy")).display()));
    }
    run(cmd
        .arg("-o")
        .arg(dir.join("cli"))
        .arg("--dump-state")
        .arg(dir.join("state")));
    bundle
}

/// `MRT_SIGNED_DIR`: `keys/modelrt-signing.pub` (from `xtask::signing::keygen`), `signed.mrt` (the
/// demo bundle signed with that key), `foreign.mrt` (signed with another key), `changed.mrt` (signed,
/// then a weight byte changed and the CRCs resealed) and `unsigned.mrt`.
fn signed_fixture(demo: &Path, dir: &Path) -> PathBuf {
    use xtask::signing::{keygen, read_signing_key};
    let bytes = std::fs::read(demo).unwrap();
    let (secret, _) = keygen(&dir.join("keys"), false).unwrap();
    let (other, _) = keygen(&dir.join("other"), false).unwrap();
    let key = read_signing_key(&secret).unwrap();
    let signed = key.sign(&bytes).unwrap();
    std::fs::write(dir.join("signed.mrt"), &signed).unwrap();
    let foreign = read_signing_key(&other).unwrap().sign(&bytes).unwrap();
    std::fs::write(dir.join("foreign.mrt"), foreign).unwrap();
    let mut changed = signed;
    let n = changed.len();
    changed[n - 300] ^= 1;
    modelrt_core::bundle::writer::reseal(&mut changed);
    std::fs::write(dir.join("changed.mrt"), changed).unwrap();
    std::fs::write(dir.join("unsigned.mrt"), &bytes).unwrap();
    dir.to_path_buf()
}

fn fresh(dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    dir.to_path_buf()
}

/// The stateful bundle compiled for `target`.
fn stateful_bundle(py: &Path, target: &str) -> PathBuf {
    let mut args = ExportArgs::onnx(
        PathBuf::new(),
        target.parse().expect("a target name"),
        PathBuf::new(),
    );
    args.source = Source::Tinygrad(format!(
        "{}:build",
        root().join("targets/python/tests/stateful.py").display()
    ));
    compile_args(py, args, "pyapi")
}

#[test]
fn the_wheel_installs_and_its_python_suite_passes() {
    let Some(py) = python() else { return };
    let arch = std::env::consts::ARCH;
    let scratch = fresh(&root().join("target/python-test"));

    let Some(firmware) = skip::require(
        Some(root().join("target/amdgpu-firmware"))
            .filter(|d| d.join("psp_13_0_0_sos.bin").is_file()),
        "no AMD firmware in target/amdgpu-firmware (run `cargo xtask firmware`)",
    ) else {
        return;
    };
    // The stateful bundles first: compiling them runs tinygrad in the exporter's Python.
    let stateful = stateful_bundle(&py, &format!("cpu-{arch}"));
    let Some(_) = hexagon::tools() else {
        return;
    };
    let emulated = [
        ("qcom-emu", stateful_bundle(&py, "adreno-a630")),
        ("usb-emu", stateful_bundle(&py, "amd-gfx1100")),
    ];

    let wheel = xtask::wheel::build(false, Some(&py)).expect("cargo xtask wheel builds");
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("modelrt-")
            && name.contains("-cp310-abi3-manylinux_")
            && name.ends_with(&format!("_{arch}.whl")),
        "{name}"
    );
    let site = scratch.join("site");
    run(Command::new(&py)
        .args([
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            "--target",
        ])
        .arg(&site)
        .arg(&wheel));
    assert!(site.join("modelrt/_native.abi3.so").is_file());
    assert!(site.join("modelrt/__init__.pyi").is_file());

    let bin = modelrt_bin();
    let demo = root().join(format!("targets/assets/demo-{arch}.mrt"));
    let demo_dir = fresh(&scratch.join("demo"));
    demo_fixture(&bin, &demo, "cpu", &demo_dir);
    // dsp-emu: the hexagon tests' small float net
    let dsp = compile(&py, &hexagon::models(&py).1, "hexagon-v65", true, "pyapi");
    let dsp_dir = fresh(&scratch.join("dsp"));
    demo_fixture(&bin, &dsp, "dsp-emu", &dsp_dir);
    let state_dir = fresh(&scratch.join("state"));
    state_fixture(&bin, &stateful, "cpu", &state_dir);
    // One line per emulated device: DEVICE<TAB>BUNDLE<TAB>DIR.
    let mut emu_list = String::new();
    for (device, bundle) in &emulated {
        let dir = fresh(&scratch.join(format!("state-{device}")));
        state_fixture(&bin, bundle, device, &dir);
        emu_list += &format!("{device}\t{}\t{}\n", bundle.display(), dir.display());
    }
    let emu_file = scratch.join("emulated.tsv");
    std::fs::write(&emu_file, emu_list).unwrap();
    // format 2.4: a copy bundle whose output carries named slices (tests/src/multi_fixture.rs)
    let sliced = scratch.join("sliced.mrt");
    std::fs::write(&sliced, modelrt_tests::multi_fixture::sliced_copy()).unwrap();
    let pipeline_dir = fresh(&scratch.join("pipeline"));
    let pipeline = pipeline_fixture(&py, &bin, &pipeline_dir);
    let signed_dir = signed_fixture(&demo, &fresh(&scratch.join("signed")));
    let multi_dir = fresh(&scratch.join("multi"));
    multi_fixture(&bin, &multi_dir);

    let o = Command::new(&py)
        .current_dir(root().join("targets/python/tests"))
        .args(["-m", "unittest", "-v", "test_modelrt"])
        .env("PYTHONPATH", &site)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("MRT_DEMO_BUNDLE", &demo)
        .env("MRT_SLICED_BUNDLE", &sliced)
        .env("MRT_DEMO_DIR", &demo_dir)
        .env("MRT_STATE_BUNDLE", &stateful)
        .env("MRT_STATE_DIR", &state_dir)
        .env("MRT_EMULATED", &emu_file)
        .env("MRT_DSP_BUNDLE", &dsp)
        .env("MRT_DSP_DIR", &dsp_dir)
        .env("MRT_PIPELINE_BUNDLE", &pipeline)
        .env("MRT_PIPELINE_DIR", &pipeline_dir)
        .env("MRT_SIGNED_DIR", &signed_dir)
        .env("MRT_MULTI_DIR", &multi_dir)
        .env_remove("MODELRT_TRUSTED_KEYS")
        .env("MODELRT_AMD_FIRMWARE_DIR", &firmware)
        .output()
        .expect("python runs");
    let text = String::from_utf8_lossy(&o.stderr);
    eprintln!("{text}");
    assert!(o.status.success(), "the Python suite failed:\n{text}");
    assert!(
        !text.contains("skipped"),
        "the Python suite skipped tests:\n{text}"
    );
    assert!(text.contains("Ran 25 tests"), "{text}");
}
