//! The map documents point at real files: every backticked repository path in `docs/architecture.md`
//! and `docs/hw/*.md` (a token starting with a workspace directory such as `core/` or `usbgpu/`) names
//! an existing file or directory — a trailing `*` matches any name with that prefix. Lines that
//! describe where planned code will go (containing "planned" or "intended") are exempt.
use std::path::Path;

use modelrt_tests::root;

const TOP: &[&str] = &[
    "core/", "hal/", "targets/", "qcom/", "usbgpu/", "xtask/", "tests/", "docs/",
];

/// Backticked tokens of `line` that look like repository paths.
fn paths(line: &str) -> Vec<String> {
    line.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| TOP.iter().any(|top| t.starts_with(top)) && !t.contains(' '))
        .map(str::to_string)
        .collect()
}

fn exists(root: &Path, path: &str) -> bool {
    match path.strip_suffix('*') {
        None => root.join(path).exists(),
        Some(prefix) => {
            let full = root.join(prefix);
            let (dir, stem) = (
                full.parent().unwrap(),
                full.file_name().unwrap().to_string_lossy(),
            );
            std::fs::read_dir(dir).is_ok_and(|mut it| {
                it.any(|e| {
                    e.unwrap()
                        .file_name()
                        .to_string_lossy()
                        .starts_with(stem.as_ref())
                })
            })
        }
    }
}

#[test]
fn documented_paths_exist() {
    let root = root();
    let mut docs = vec![root.join("docs/architecture.md")];
    for e in std::fs::read_dir(root.join("docs/hw")).unwrap() {
        docs.push(e.unwrap().path());
    }
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for (no, line) in text.lines().enumerate() {
            if line.contains("planned") || line.contains("intended") {
                continue;
            }
            for p in paths(line) {
                checked += 1;
                if !exists(&root, &p) {
                    missing.push(format!("{}:{}: `{p}`", doc.display(), no + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
    assert!(
        checked >= 40,
        "only {checked} paths checked: is the scan broken?"
    );
}

#[test]
fn path_scanner_and_glob() {
    assert_eq!(
        paths("see `core/src/exec.rs` and `Executor::run`, `qcom/src/adreno*`"),
        vec![
            "core/src/exec.rs".to_string(),
            "qcom/src/adreno*".to_string()
        ]
    );
    let root = root();
    assert!(exists(&root, "core/src/bundle/"));
    assert!(exists(&root, "core/src/exe*"));
    assert!(!exists(&root, "core/src/no-such-file.rs"));
    assert!(!exists(&root, "core/src/zz*"));
}
