//! The C API from C: `examples/c/run_model.c` compiled with clang against `libmodelrt.a` and
//! `libmodelrt.so` (built by `xtask::capi`, what `cargo xtask capi` runs), run on the policy-like
//! bundle with its embedded reference inputs; its outputs must equal the `modelrt run` CLI's bit
//! for bit, and the same program under `valgrind --leak-check=full` must report no error or leak.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use modelrt_core::bundle::Bundle;
use modelrt_targets::npy;
use modelrt_tests::{compile, python, reference, root, skip};

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

fn has(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// The `modelrt` binary of this workspace (built on demand, dev profile).
fn modelrt_bin() -> PathBuf {
    xtask::bench::build_modelrt(&root(), false).unwrap_or_else(|e| panic!("{e:#}"))
}

/// A fresh scratch directory under `target/capi-test/`.
fn scratch(name: &str) -> PathBuf {
    let d = root().join("target/capi-test").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The reference inputs of `bundle` written as raw `.bin` files (for the C example) and `.npy`
/// files (for the CLI): (bin paths, `NAME=FILE.npy` arguments).
fn write_inputs(bundle: &Path, dir: &Path) -> (Vec<PathBuf>, Vec<String>) {
    let bytes = std::fs::read(bundle).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let (ins, _, _, _) = reference(&bytes);
    let mut bins = Vec::new();
    let mut npys = Vec::new();
    for (i, (t, data)) in b.body().inputs.iter().zip(&ins).enumerate() {
        let t = t.unwrap();
        let bin = dir.join(format!("input{i}.bin"));
        std::fs::write(&bin, data).unwrap();
        let np = dir.join(format!("input{i}.npy"));
        std::fs::write(&np, npy::encode(t.dtype, &t.shape, data)).unwrap();
        bins.push(bin);
        npys.push(format!("{}={}", t.name, np.display()));
    }
    (bins, npys)
}

/// Outputs of `modelrt run` on the bundle, in bundle order.
fn cli_outputs(bundle: &Path, npys: &[String], dir: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(bundle).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let mut cmd = Command::new(modelrt_bin());
    cmd.arg("run")
        .arg(bundle)
        .args(["--device", "cpu", "-o"])
        .arg(dir);
    for n in npys {
        cmd.args(["-i", n]);
    }
    run(&mut cmd);
    b.body()
        .outputs
        .iter()
        .map(|t| {
            // The CLI's file name: characters other than letters, digits and `-_.` become `_`.
            let name: String = t
                .unwrap()
                .name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let f = std::fs::read(dir.join(format!("{name}.npy"))).unwrap();
            npy::parse(&f).unwrap().data
        })
        .collect()
}

#[test]
fn c_example_matches_the_cli_and_is_clean_under_valgrind() {
    let Some(py) = python() else { return };
    if !has("clang") {
        return skip::skip("no clang (Debian package clang; `cargo xtask setup` installs it)");
    }
    let bundle = compile(
        &py,
        &root().join("xtask/models/policy.onnx"),
        &format!("cpu-{}", std::env::consts::ARCH),
        true,
        "capi",
    );
    let lib = xtask::capi::build(None, false).expect("cargo xtask capi builds");
    let dir = scratch("host");
    let source = root().join("examples/c/run_model.c");
    let stat = dir.join("run_model_static");
    run(Command::new("clang")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-I"])
        .arg(&lib.include)
        .arg(&source)
        .arg(&lib.staticlib)
        .args(xtask::capi::STATIC_LINK_LIBS)
        .arg("-o")
        .arg(&stat));
    let dynamic = dir.join("run_model_dynamic");
    let lib_dir = lib.cdylib.parent().unwrap();
    run(Command::new("clang")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(&lib.include)
        .arg(&source)
        .arg("-L")
        .arg(lib_dir)
        .arg("-lmodelrt")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-o")
        .arg(&dynamic));

    let (bins, npys) = write_inputs(&bundle, &dir);
    let cli_dir = dir.join("cli");
    std::fs::create_dir_all(&cli_dir).unwrap();
    let want = cli_outputs(&bundle, &npys, &cli_dir);
    assert!(!want.is_empty());

    for (exe, tag) in [(&stat, "static"), (&dynamic, "dynamic")] {
        let out = dir.join(tag);
        std::fs::create_dir_all(&out).unwrap();
        let o = run(Command::new(exe)
            .args(["-d", "cpu", "-o"])
            .arg(&out)
            .arg(&bundle)
            .args(&bins));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("output 0"), "{tag}: {text}");
        for (i, w) in want.iter().enumerate() {
            let got = std::fs::read(out.join(format!("output{i}.bin"))).unwrap();
            assert!(got == *w, "{tag}: output {i} differs from `modelrt run`'s");
        }
    }

    // A bad device name is one clear error line and a non-zero exit.
    let o = Command::new(&stat)
        .args(["-d", "gpu"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("error: mrt_model_load: unknown device \"gpu\""),
        "{err}"
    );

    if !has("valgrind") {
        return skip::skip(
            "no valgrind (Debian package valgrind; `cargo xtask setup` installs it)",
        );
    }
    for exe in [&stat, &dynamic] {
        let out = dir.join("valgrind");
        std::fs::create_dir_all(&out).unwrap();
        let o = Command::new("valgrind")
            .args([
                "--error-exitcode=1",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite,possible",
            ])
            .arg(exe)
            .args(["-d", "cpu", "-n", "3", "-o"])
            .arg(&out)
            .arg(&bundle)
            .args(&bins)
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "valgrind {}: {log}", exe.display());
        assert!(log.contains("ERROR SUMMARY: 0 errors"), "{log}");
        assert!(
            log.contains("definitely lost: 0 bytes") || log.contains("All heap blocks were freed"),
            "{log}"
        );
    }
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The comma build: the C library cross-built for aarch64 (`cargo xtask capi --target cpu-aarch64`
/// builds the same), the example cross-compiled with clang against it, run under qemu-aarch64 on a
/// `cpu-aarch64` policy bundle; outputs within the bundle's tolerance of its embedded onnxruntime
/// reference.
#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn aarch64_c_example_runs_under_qemu() {
    let Some(py) = python() else { return };
    if !has("qemu-aarch64") || !has("aarch64-linux-gnu-gcc") || !has("clang") {
        return skip::skip(
            "no qemu-aarch64, aarch64-linux-gnu-gcc or clang (Debian packages qemu-user, gcc-aarch64-linux-gnu, clang; `cargo xtask setup` installs them)",
        );
    }
    let bundle = compile(
        &py,
        &root().join("xtask/models/policy.onnx"),
        "cpu-aarch64",
        true,
        "capi",
    );
    let triple = xtask::capi::triple_for("cpu-aarch64");
    let lib =
        xtask::capi::build(Some(triple), false).expect("cargo xtask capi --target cpu-aarch64");
    let dir = scratch("aarch64");
    let exe = dir.join("run_model");
    run(Command::new("clang")
        .args([
            "--target=aarch64-linux-gnu",
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
            "-I",
        ])
        .arg(&lib.include)
        .arg(root().join("examples/c/run_model.c"))
        .arg(&lib.staticlib)
        .args(xtask::capi::STATIC_LINK_LIBS)
        .arg("-o")
        .arg(&exe));
    let (bins, _) = write_inputs(&bundle, &dir);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    run(Command::new("qemu-aarch64")
        .args(["-L", "/usr/aarch64-linux-gnu"])
        .arg(&exe)
        .args(["-d", "cpu", "-o"])
        .arg(&out)
        .arg(&bundle)
        .args(&bins));
    let bytes = std::fs::read(&bundle).unwrap();
    let (_, expected, atol, rtol) = reference(&bytes);
    assert!(!expected.is_empty());
    for (i, e) in expected.iter().enumerate() {
        let got = std::fs::read(out.join(format!("output{i}.bin"))).unwrap();
        assert_eq!(got.len(), e.len(), "output {i} size");
        for (g, r) in f32s(&got).iter().zip(f32s(e)) {
            assert!(
                (g - r).abs() <= atol + rtol * r.abs(),
                "output {i}: {g} vs onnxruntime's {r}"
            );
        }
    }
}
