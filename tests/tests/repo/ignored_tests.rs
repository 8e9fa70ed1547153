//! `#[ignore]` is used for one purpose only: a heavy test CI leaves to `cargo xtask ci --full`. Each such test
//! carries exactly the [`HEAVY`] reason and is listed in docs/testing.md (with its module), so nothing is left out
//! of CI unnoticed and the full run's record names every test it covered. The one other allowed reason is a test
//! that other tests run in a child process.
use std::path::Path;

use modelrt_tests::root;

const HEAVY: &str = "#[ignore = \"heavy: run by `cargo xtask ci --full` (docs/testing.md)\"]";
const CHILD: &str = "#[ignore = \"run by the other tests in a child process\"]";
/// Where Rust sources live (build output and the fuzz crate's target excluded by name).
const DIRS: &[&str] = &["core", "hal", "targets", "qcom", "usbgpu", "xtask", "tests"];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() {
            if name != "target" && name != "corpus" && name != "artifacts" {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// (file, test function, attribute) of every `#[ignore` in the workspace's Rust sources.
fn ignored() -> Vec<(String, String, String)> {
    let root = root();
    let mut files = Vec::new();
    for d in DIRS {
        rust_files(&root.join(d), &mut files);
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim();
            // this file's own constants are not attributes
            if !t.starts_with("#[ignore") {
                continue;
            }
            let func = lines[i + 1..]
                .iter()
                .find_map(|l| l.trim().strip_prefix("fn "))
                .and_then(|r| r.split('(').next())
                .unwrap_or("?")
                .to_string();
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push((rel, func, t.to_string()));
        }
    }
    out
}

#[test]
fn every_ignored_test_is_a_listed_heavy_test() {
    let doc = std::fs::read_to_string(root().join("docs/testing.md")).unwrap();
    let all = ignored();
    let heavy: Vec<_> = all.iter().filter(|(_, _, a)| a == HEAVY).collect();
    assert!(
        heavy.len() >= 5,
        "the heavy set went missing: {} tests carry the heavy reason",
        heavy.len()
    );
    for (file, func, attr) in &all {
        assert!(
            attr == HEAVY || attr == CHILD,
            "{file}: `{func}` is ignored with {attr}: the only reasons are {HEAVY} and {CHILD}"
        );
        if attr == HEAVY {
            assert!(
                doc.contains(&format!("::{func}`")) || doc.contains(&format!("`{func}`")),
                "{file}: heavy test `{func}` is not listed in docs/testing.md"
            );
        }
    }
}
