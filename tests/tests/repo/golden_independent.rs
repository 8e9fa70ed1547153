//! The golden references are independent of the code under test: no Python file under qcom/golden/ imports the
//! exporter's package `mrt` (xtask/exporter/mrt/) or puts the exporter on `sys.path`. Those scripts record what
//! tinygrad itself does; reading the inputs through `mrt` would let an exporter bug shape the reference it is checked
//! against (capture_cl.py reads its pickles with its own inert unpickler for this reason).
use std::path::{Path, PathBuf};

use modelrt_tests::root;

fn is_mrt(module: &str) -> bool {
    module == "mrt" || module.starts_with("mrt.")
}

/// Whether one Python statement imports `mrt` or adds the exporter to `sys.path`.
fn uses_exporter(stmt: &str) -> bool {
    let t = stmt.trim();
    let first = |s: &str| s.split_whitespace().next().unwrap_or("").to_string();
    let imports = if let Some(rest) = t.strip_prefix("import ") {
        rest.split(',').any(|m| is_mrt(&first(m)))
    } else if let Some(rest) = t.strip_prefix("from ") {
        is_mrt(&first(rest))
    } else {
        false
    };
    let dynamic = ["import_module(", "__import__("].iter().any(|f| {
        t.split(f).skip(1).any(|arg| {
            is_mrt(
                arg.trim_start_matches(['"', '\''])
                    .split(['"', '\''])
                    .next()
                    .unwrap_or(""),
            )
        })
    });
    imports || dynamic || (t.contains("sys.path") && t.contains("exporter"))
}

/// The offending lines of Python source `text`, as (line number, line).
fn exporter_uses(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.split(';').any(uses_exporter) {
            out.push((i + 1, line.trim().to_string()));
        }
    }
    out
}

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.expect("entry").path();
        if p.is_dir() {
            python_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "py") {
            out.push(p);
        }
    }
}

#[test]
fn the_detector_sees_mrt_imports() {
    for bad in [
        "from mrt import safe_pickle",
        "  from mrt.safe_pickle import loads",
        "import mrt",
        "import os, mrt.qcom_cl as q",
        "import os; import mrt",
        "m = importlib.import_module(\"mrt.safe_pickle\")",
        "sys.path.insert(0, str(HERE.parent.parent / \"xtask\" / \"exporter\"))",
    ] {
        assert_eq!(exporter_uses(bad).len(), 1, "not flagged: {bad}");
    }
    for ok in [
        "from fake_kgsl import install",
        "import mrtx",
        "from tinygrad.runtime import ops_qcom",
        "Independent of `mrt`: nothing here imports the exporter (xtask/exporter/).",
        "sys.path.insert(0, str(HERE))",
    ] {
        assert!(exporter_uses(ok).is_empty(), "wrongly flagged: {ok}");
    }
}

#[test]
fn no_golden_script_imports_the_exporter() {
    let mut files = Vec::new();
    python_files(&root().join("qcom/golden"), &mut files);
    assert!(
        files.len() >= 3,
        "found only {} Python files under qcom/golden/",
        files.len()
    );
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for (n, line) in exporter_uses(&text) {
            bad.push(format!(
                "{}:{n}: {line}",
                f.strip_prefix(root()).unwrap_or(f).display()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "golden scripts must not depend on the exporter (mrt) they check:\n{}",
        bad.join("\n")
    );
}
