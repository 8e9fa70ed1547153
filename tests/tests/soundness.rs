//! Soundness guard over the sources of every crate in the repository (workspace members and the
//! separately built `core/fuzz` and `tests/footprint`):
//! - every crate root (lib, main, bin, fuzz target) is classified below, and carries the attribute
//!   of its class: `#![forbid(unsafe_code)]` for crates without unsafe code; `#![deny(unsafe_op_in_unsafe_fn)]`
//!   and `#![deny(clippy::undocumented_unsafe_blocks)]` for the hardware/FFI/loader crates; `#![deny(unsafe_code)]`
//!   for binaries whose only unsafe is an exported symbol;
//! - every unsafe block and `unsafe impl` (also in tests, which no crate attribute covers) has a
//!   `// SAFETY:` comment on its line or in the comment lines right above it, and every `unsafe trait`
//!   documents a `# Safety` contract;
//! - no public struct field holds a raw pointer, and no safe public function takes one.
use std::path::{Path, PathBuf};

/// Crate roots with no unsafe code at all.
const UNSAFE_FREE: &[&str] = &[
    "core/src/lib.rs",
    "core/fuzz/src/lib.rs",
    "core/fuzz/src/bin/fuzz-seeds.rs",
    "hal/src/lib.rs",
    "qcom/ir3/src/lib.rs",
    "targets/src/main.rs",
    "usbgpu/src/bin/gpuflash.rs",
    "xtask/src/lib.rs",
    "xtask/src/main.rs",
    "tests/src/lib.rs",
];

/// Crate roots at a hardware, FFI or loader boundary: unsafe allowed, each block justified.
const BOUNDARY: &[&str] = &[
    "targets/src/lib.rs",
    "targets/capi/src/lib.rs",
    "qcom/src/lib.rs",
    "usbgpu/src/lib.rs",
];

/// Binaries whose only unsafe is an exported entry symbol (`no_mangle`, libFuzzer's entry point).
const EXPORT_ONLY: &[&str] = &[
    "tests/footprint/src/main.rs",
    "core/fuzz/fuzz_targets/bundle_parse.rs",
    "core/fuzz/fuzz_targets/load_run_cpu.rs",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn skip_dir(name: &str) -> bool {
    matches!(
        name,
        "target" | ".git" | "corpus" | "artifacts" | "node_modules"
    ) || name.starts_with('.')
}

/// Every file below `dir` whose name satisfies `keep`, outside build output and VCS folders.
fn walk(dir: &Path, keep: &dyn Fn(&str) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !skip_dir(&name) {
                walk(&p, keep, out);
            }
        } else if keep(&name) {
            out.push(p);
        }
    }
}

fn rel(p: &Path) -> String {
    p.strip_prefix(repo())
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

/// The code part of a line (before a `//` comment; good enough for this tree's sources).
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

/// Positions (1-based lines) of unsafe blocks / impls without a `// SAFETY:` justification.
fn undocumented_unsafe(src: &str) -> Vec<usize> {
    let lines: Vec<&str> = src.lines().collect();
    let mut bad = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let c = code(line);
        let block = c.contains(concat!("unsafe", " {")) || c.contains(concat!("unsafe", "{"));
        let imp = c.trim_start().starts_with(concat!("unsafe", " impl"));
        if !(block || imp) || line.contains("SAFETY:") {
            continue;
        }
        let mut ok = false;
        for above in lines[..i].iter().rev() {
            let t = above.trim_start();
            let comment = t.starts_with("//") && !t.starts_with("///") && !t.starts_with("//!");
            if !(comment || t.starts_with("#[")) {
                break;
            }
            if t.contains("SAFETY:") {
                ok = true;
                break;
            }
        }
        if !ok {
            bad.push(i + 1);
        }
    }
    bad
}

/// Lines of `unsafe trait` declarations whose doc comment has no `# Safety` section.
fn undocumented_unsafe_traits(src: &str) -> Vec<usize> {
    let lines: Vec<&str> = src.lines().collect();
    let mut bad = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !code(line).contains(concat!("unsafe", " trait ")) {
            continue;
        }
        let doc = lines[..i]
            .iter()
            .rev()
            .take_while(|l| l.trim_start().starts_with("///") || l.trim_start().starts_with("#["));
        if !doc.into_iter().any(|l| l.contains("# Safety")) {
            bad.push(i + 1);
        }
    }
    bad
}

/// Public raw-pointer fields and safe public functions taking raw pointers.
fn raw_pointer_api(src: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for (i, line) in src.lines().enumerate() {
        let t = code(line).trim_start();
        if let Some(rest) = t.strip_prefix("pub ") {
            if let Some((name, ty)) = rest.split_once(':') {
                let field = !name.contains('(') && !name.contains(' ') && !name.contains("fn");
                let ty = ty.trim_start();
                if field && (ty.starts_with("*const") || ty.starts_with("*mut")) {
                    bad.push(format!("line {}: public raw-pointer field", i + 1));
                }
            }
        }
    }
    // Safe `pub fn` signatures (possibly over several lines) with a raw-pointer parameter.
    let mut rest = src;
    while let Some(at) = rest.find("pub fn ") {
        let before = &rest[..at];
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        let prefix = &before[line_start..];
        let sig_end = rest[at..].find(')').map_or(rest.len(), |n| at + n);
        let params = &rest[at..sig_end];
        let is_unsafe = prefix.contains("unsafe");
        let is_comment = prefix.trim_start().starts_with("//");
        if !is_unsafe && !is_comment && (params.contains("*const ") || params.contains("*mut ")) {
            let line = src[..src.len() - rest.len() + at].lines().count();
            bad.push(format!("line {line}: safe pub fn takes a raw pointer"));
        }
        rest = &rest[at + "pub fn ".len()..];
    }
    bad
}

/// Crate roots of every package under the repository: `src/lib.rs`, `src/main.rs`, `src/bin/*.rs`
/// and the `path`s of `[[bin]]` targets.
fn crate_roots() -> Vec<String> {
    let mut manifests = Vec::new();
    walk(&repo(), &|name| name == "Cargo.toml", &mut manifests);
    let mut roots = Vec::new();
    for m in manifests {
        let text = std::fs::read_to_string(&m).unwrap();
        if !text.contains("[package]") {
            continue;
        }
        let dir = m.parent().unwrap();
        for f in ["src/lib.rs", "src/main.rs"] {
            if dir.join(f).exists() {
                roots.push(rel(&dir.join(f)));
            }
        }
        if let Ok(bins) = std::fs::read_dir(dir.join("src/bin")) {
            for b in bins.flatten() {
                roots.push(rel(&b.path()));
            }
        }
        for line in text.lines() {
            if let Some(p) = line.trim().strip_prefix("path = \"") {
                let p = p.trim_end_matches('"');
                if p.ends_with(".rs") {
                    roots.push(rel(&dir.join(p)));
                }
            }
        }
    }
    roots.sort();
    roots.dedup();
    roots
}

#[test]
fn every_crate_root_is_classified_and_carries_its_attribute() {
    let classified: Vec<&str> = UNSAFE_FREE
        .iter()
        .chain(BOUNDARY)
        .chain(EXPORT_ONLY)
        .copied()
        .collect();
    let roots = crate_roots();
    assert!(roots.len() >= classified.len(), "found roots: {roots:?}");
    for r in &roots {
        assert!(
            classified.contains(&r.as_str()),
            "crate root {r} is not classified in tests/tests/soundness.rs (UNSAFE_FREE, BOUNDARY or \
             EXPORT_ONLY)"
        );
    }
    let attrs = |root: &str| -> String {
        let text =
            std::fs::read_to_string(repo().join(root)).unwrap_or_else(|e| panic!("{root}: {e}"));
        text.lines()
            .filter(|l| l.starts_with("#!["))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for r in UNSAFE_FREE {
        assert!(
            attrs(r).contains("#![forbid(unsafe_code)]"),
            "{r} lacks #![forbid(unsafe_code)]"
        );
    }
    for r in BOUNDARY {
        let a = attrs(r);
        assert!(
            a.contains("#![deny(unsafe_op_in_unsafe_fn)]")
                && a.contains("#![deny(clippy::undocumented_unsafe_blocks)]"),
            "{r} lacks #![deny(unsafe_op_in_unsafe_fn)] / #![deny(clippy::undocumented_unsafe_blocks)]"
        );
    }
    for r in EXPORT_ONLY {
        assert!(
            attrs(r).contains("#![deny(unsafe_code)]"),
            "{r} lacks #![deny(unsafe_code)]"
        );
    }
}

#[test]
fn every_unsafe_block_impl_and_trait_is_justified() {
    let mut files = Vec::new();
    walk(&repo(), &|name| name.ends_with(".rs"), &mut files);
    assert!(files.len() > 50, "scanned only {} files", files.len());
    let mut problems = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        for line in undocumented_unsafe(&src) {
            problems.push(format!(
                "{}:{line}: unsafe without a `// SAFETY:` comment",
                rel(f)
            ));
        }
        for line in undocumented_unsafe_traits(&src) {
            problems.push(format!(
                "{}:{line}: an `unsafe` trait without a `# Safety` section",
                rel(f)
            ));
        }
        for p in raw_pointer_api(&src) {
            problems.push(format!("{}: {p}", rel(f)));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checks_catch_what_they_look_for() {
    let u = concat!("unsafe", " {");
    let bad = format!("fn f() {{\n    let x = 1;\n    {u} g() }}\n}}\n");
    assert_eq!(undocumented_unsafe(&bad), vec![3]);
    let good = format!("fn f() {{\n    // SAFETY: g has no preconditions.\n    {u} g() }}\n}}\n");
    assert!(undocumented_unsafe(&good).is_empty());
    let doc_only = format!("/// SAFETY: a doc comment is not a justification\n{u} g() }}\n");
    assert_eq!(undocumented_unsafe(&doc_only), vec![2]);
    let imp = concat!("unsafe", " impl Send for X {}\n");
    assert_eq!(undocumented_unsafe(imp), vec![1]);

    let tr = concat!("/// A trait.\npub ", "unsafe", " trait T {}\n");
    assert_eq!(undocumented_unsafe_traits(tr), vec![2]);
    let tr_ok = concat!("/// # Safety\n/// Rules.\npub ", "unsafe", " trait T {}\n");
    assert!(undocumented_unsafe_traits(tr_ok).is_empty());

    let field = "pub struct S {\n    pub va: *mut u8,\n}\n";
    assert_eq!(raw_pointer_api(field).len(), 1);
    let safe_fn = concat!(
        "pub ",
        "fn write(\n    dst: *mut u8,\n    n: usize,\n) {}\n"
    );
    assert_eq!(raw_pointer_api(safe_fn).len(), 1);
    let unsafe_fn = concat!("pub ", "unsafe", " fn write(dst: *mut u8) {}\n");
    assert!(raw_pointer_api(unsafe_fn).is_empty());
}
