//! Searched kernels, reproducibly: the committed search cache for the policy-like model
//! (`xtask/beam/policy-x86_64.json`, made by `cargo xtask compile --beam 2`) applied twice gives byte-identical bundles
//! whose producer flags name the search and the cache's sha256, and whose outputs still match onnxruntime (the
//! reference the exporter embeds) within 1e-4. A search for another architecture's CPU, a corrupt cache, a cache
//! lacking one of the model's kernels and a cache naming a kernel the model lacks are each one clean error.
use modelrt_hal::target::TargetName;
use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt_core::bundle::Bundle;
use modelrt_core::verify::compare;
use modelrt_hal::target::DType;
use modelrt_tests::{python, reference, root, run_cpu};
use xtask::exporter::ExportArgs;

const CACHE: &str = "xtask/beam/policy-x86_64.json";

fn policy_args(cache: Option<PathBuf>) -> ExportArgs {
    let mut args = ExportArgs::onnx(
        root().join("xtask/models/policy.onnx"),
        TargetName::CpuX86_64,
        "",
    );
    args.threads = Some(2); // the committed cache was searched for the bench's 2-thread split
    args.reference = true;
    args.beam_cache = cache;
    args
}

fn out_dir() -> PathBuf {
    let d = root().join("target/e2e/beam");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The exporter's error for `args`, which must be exactly one line.
fn one_line_error(python: &Path, args: ExportArgs, name: &str) -> String {
    let out = out_dir().join(format!("{name}.mrt"));
    let err = xtask::compile::compile(python, args, &out)
        .err()
        .unwrap_or_else(|| panic!("{name}: the compile must be refused"));
    let msg = format!("{err:#}");
    assert!(!msg.contains('\n'), "{name}: not one line: {msg}");
    assert!(
        !out.exists(),
        "{name}: a refused compile left {}",
        out.display()
    );
    msg
}

/// Run `code` with the venv python and `args`; its stdout, trimmed.
fn python_out(python: &Path, code: &str, args: &[&Path]) -> String {
    let out = Command::new(python)
        .args(["-c", code])
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The committed cache with its JSON edited by `edit` (a Python statement over `d`), written to `name`.
fn edited_cache(python: &Path, name: &str, edit: &str) -> PathBuf {
    let dst = out_dir().join(name);
    let code = format!("import json,sys; d=json.load(open(sys.argv[1])); {edit}; json.dump(d, open(sys.argv[2],'w'))");
    python_out(python, &code, &[&root().join(CACHE), &dst]);
    dst
}

/// sha256 of `file`, computed by Python's hashlib (independent of the exporter's record).
fn sha256_by_python(python: &Path, file: &Path) -> String {
    let code =
        "import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],'rb').read()).hexdigest())";
    python_out(python, code, &[file])
}

#[test]
fn committed_cache_gives_identical_bundles_that_match_onnxruntime() {
    let Some(py) = python() else { return };
    let cache = root().join(CACHE);
    let mut bundles = Vec::new();
    for i in 0..2 {
        let out = out_dir().join(format!("policy-beam-{i}.mrt"));
        xtask::compile::compile(&py, policy_args(Some(cache.clone())), &out)
            .unwrap_or_else(|e| panic!("compile from {CACHE}: {e:#}"));
        bundles.push(std::fs::read(&out).unwrap());
    }
    assert!(
        bundles[0] == bundles[1],
        "two compiles from the same cache differ"
    );
    let b = Bundle::parse(&bundles[0]).unwrap();
    let flags: Vec<&str> = b.body().producer.flags.split(' ').collect();
    let sha = sha256_by_python(&py, &cache);
    assert!(flags.contains(&"JITBEAM=2"), "producer flags {flags:?}");
    assert!(
        flags.contains(&format!("BEAM_CACHE={sha}").as_str()),
        "producer flags {flags:?} must name the cache sha256 {sha}"
    );
    let (ins, want, atol, rtol) = reference(&bundles[0]);
    assert!(
        atol <= 1e-4 && rtol <= 1e-4,
        "reference tolerance {atol}/{rtol}"
    );
    let got = run_cpu(&out_dir().join("policy-beam-0.mrt"), &ins).unwrap();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        let c = compare(DType::F32, g, w, atol as f64, rtol as f64);
        assert!(c.ok(), "searched policy vs onnxruntime: {c:?}");
    }
}

#[test]
fn beam_for_a_foreign_cpu_is_refused_without_a_cache() {
    let Some(py) = python() else { return };
    let mut args = policy_args(None);
    args.target = Some(TargetName::CpuAarch64);
    args.beam = Some(2);
    let msg = one_line_error(&py, args, "policy-aarch64-beam");
    assert!(
        msg.contains("--beam for cpu-aarch64") && msg.contains("--beam-cache"),
        "{msg}"
    );
}

#[test]
fn corrupt_cache_is_one_error_line() {
    let Some(py) = python() else { return };
    let bad = out_dir().join("corrupt.json");
    std::fs::write(
        &bad,
        b"{\"format\": \"modelrt-beam-cache/1\", \"kernels\": [",
    )
    .unwrap();
    let msg = one_line_error(&py, policy_args(Some(bad)), "policy-corrupt-cache");
    assert!(msg.contains("is not a valid search cache"), "{msg}");
}

#[test]
fn cache_naming_a_kernel_the_model_lacks_is_refused() {
    let Some(py) = python() else { return };
    let extra = edited_cache(
        &py,
        "extra.json",
        "d['kernels'].append({'key': '0'*64, 'kernel': 'r_not_in_policy', 'opts': []})",
    );
    let msg = one_line_error(&py, policy_args(Some(extra)), "policy-extra-kernel");
    assert!(
        msg.contains("names 1 kernel(s) this model does not have")
            && msg.contains("r_not_in_policy"),
        "{msg}"
    );
}

#[test]
fn cache_lacking_a_kernel_of_the_model_is_refused() {
    let Some(py) = python() else { return };
    let missing = edited_cache(
        &py,
        "missing.json",
        "d['kernels'] = [k for k in d['kernels'] if k['kernel'] != 'r_128_512_8_2']",
    );
    let msg = one_line_error(&py, policy_args(Some(missing)), "policy-missing-kernel");
    assert!(
        msg.contains("has no entry for kernel r_128_512_8_2"),
        "{msg}"
    );
}
