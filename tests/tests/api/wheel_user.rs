//! The wheel as a user gets it: a fresh venv (the system's `python3 -m venv`) installs the x86_64/host wheel that
//! `cargo xtask wheel` builds (`xtask::wheel`, maturin) from the file, dependencies from the package registry. First
//! without the `compile` extra: `modelrt verify` runs the demo bundle and `modelrt compile` says which extra to
//! install. Then with `[compile]`: `modelrt compile` compiles a small ONNX net the venv's own `onnx` wrote, and its
//! outputs — from `modelrt run` on the command line and from `modelrt.load(...).run` in Python — match the venv's
//! onnxruntime (the independent reference); `modelrt.compile(...)` returns the bundle's path, and its bundle is the
//! same bytes as `modelrt compile`'s and as this repository's `cargo xtask compile` pipeline (`xtask::compile`) makes
//! from the same model: one implementation behind all three.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use modelrt_tests::{python, root, skip};
use xtask::exporter::ExportArgs;

/// The ONNX model the test compiles (written by the venv's onnx) and its seeded input and onnxruntime's output.
const MAKE_MODEL: &str = r#"
import sys
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
rng = np.random.default_rng(38)
w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
m = numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), "m")
g = helper.make_graph(
  [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
   helper.make_node("Relu", ["c"], ["r"]),
   helper.make_node("GlobalAveragePool", ["r"], ["p"]),
   helper.make_node("Flatten", ["p"], ["f"]),
   helper.make_node("MatMul", ["f", "m"], ["y"])],
  "wheel_user", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], [w, b, m])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, f"{d}/m.onnx")
x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
np.save(f"{d}/x.npy", x)
y = ort.InferenceSession(f"{d}/m.onnx", providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
np.save(f"{d}/y_ort.npy", y)
"#;

/// From Python: `modelrt.compile` returns the path; the loaded bundle's output matches onnxruntime and equals the
/// command line's `modelrt run` output bit for bit.
const FROM_PYTHON: &str = r#"
import sys
from pathlib import Path
import numpy as np
import modelrt
d = Path(sys.argv[1])
p = modelrt.compile(d / "m.onnx", d / "py.mrt", target="cpu")
assert isinstance(p, Path) and p == d / "py.mrt" and p.is_file(), p
m = modelrt.load(p, device="cpu")
y = m.run({"x": np.load(d / "x.npy")})["y"]
ref = np.load(d / "y_ort.npy")
err = float(np.max(np.abs(y - ref)))
assert err <= 1e-4 * max(1.0, float(np.max(np.abs(ref)))), err
cli = np.load(d / "out" / "y.npy")
assert cli.dtype == y.dtype and cli.shape == y.shape and cli.tobytes() == y.tobytes(), (cli, y)
try:
  modelrt.compile(d / "m.onnx", d / "bad.mrt", target="tpu")
  raise SystemExit("a bad target was accepted")
except ValueError as e:
  assert "tpu" in str(e), e
print(f"max abs err vs onnxruntime {err:.3e}")
"#;

fn output(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn ok(cmd: &mut Command) -> String {
    let o = output(cmd);
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn pip(venv: &Path, what: &str) {
    ok(Command::new(venv.join("bin/python")).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        what,
    ]));
}

#[test]
fn a_fresh_venv_installs_the_wheel_compiles_an_onnx_model_and_matches_onnxruntime() {
    let Some(py) = python() else { return };
    let Some(_) = skip::require(
        Command::new("python3")
            .args(["-c", "import venv, ensurepip"])
            .status()
            .ok()
            .filter(|s| s.success()),
        "no python3 with venv and ensurepip (`cargo xtask setup` installs python3-venv)",
    ) else {
        return;
    };
    let dir = root().join("target/wheel-user");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let wheel = xtask::wheel::build(false, Some(&py)).unwrap_or_else(|e| panic!("{e:#}"));
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let arch = std::env::consts::ARCH;
    assert!(
        name.contains("-cp310-abi3-manylinux_") && name.ends_with(&format!("_{arch}.whl")),
        "{name}"
    );
    let venv = dir.join("venv");
    ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    pip(&venv, &wheel.display().to_string());
    let modelrt = venv.join("bin/modelrt");

    // Without the extra: bundles run, compile names the extra.
    let demo = root().join(format!("targets/assets/demo-{arch}.mrt"));
    let v = ok(Command::new(&modelrt).arg("verify").arg(&demo));
    assert!(v.contains("outputs match the embedded reference"), "{v}");
    let o = output(
        Command::new(&modelrt)
            .args(["compile", "m.onnx", "-o", "m.mrt"])
            .current_dir(&dir),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error: ")
            && err.contains("pip install 'modelrt[compile]'")
            && err.lines().count() == 1,
        "{err}"
    );

    // With it: the compiler, from the command line and from Python.
    pip(&venv, &format!("{}[compile]", wheel.display()));
    let vpy = venv.join("bin/python");
    ok(Command::new(&vpy).args(["-c", MAKE_MODEL]).arg(&dir));
    let onnx = dir.join("m.onnx");
    let cli = dir.join("cli.mrt");
    let wrote = ok(Command::new(&modelrt)
        .arg("compile")
        .arg(&onnx)
        .args(["--target", "cpu", "-o"])
        .arg(&cli));
    assert!(
        wrote.starts_with(&format!("wrote {}", cli.display())),
        "{wrote}"
    );
    ok(Command::new(&modelrt)
        .arg("run")
        .arg(&cli)
        .args(["-i", &format!("x={}", dir.join("x.npy").display()), "-o"])
        .arg(dir.join("out")));
    let info = ok(Command::new(&vpy).args(["-m", "modelrt", "info"]).arg(&cli));
    assert!(info.contains(&format!("cpu {arch}")), "{info}");
    let said = ok(Command::new(&vpy).args(["-c", FROM_PYTHON]).arg(&dir));
    eprintln!("{said}");

    // One implementation: the wheel's two entry points and the repository's pipeline give the same bytes.
    let from_cli = std::fs::read(&cli).unwrap();
    let from_py = std::fs::read(dir.join("py.mrt")).unwrap();
    assert!(
        from_cli == from_py,
        "modelrt compile and modelrt.compile differ"
    );
    let repo = dir.join("repo.mrt");
    xtask::compile::compile(
        &py,
        ExportArgs::onnx(
            &onnx,
            modelrt_hal::target::TargetName::host_cpu(),
            PathBuf::new(),
        ),
        &repo,
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    assert!(
        std::fs::read(&repo).unwrap() == from_cli,
        "cargo xtask compile's pipeline and the wheel's modelrt compile differ"
    );
    // the venv holds ~400 MB of packages
    let _ = std::fs::remove_dir_all(&venv);
}
