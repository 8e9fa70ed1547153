//! Soundness guard over the sources of every crate in the repository (workspace members and the
//! separately built `core/fuzz` and `tests/footprint`):
//! - every crate root (lib, main, bin, fuzz target) is classified below, and carries the attribute
//!   of its class: `#![forbid(unsafe_code)]` for crates without unsafe code; `#![deny(unsafe_code)]` for the
//!   hardware/FFI/loader crates, for binaries whose only unsafe is an exported symbol and for the fuzz
//!   target that calls the C API through raw pointers;
//! - in the boundary crates, `#[allow(unsafe_code)]` sits only on `mod` declarations, exactly on the modules
//!   listed in [`ALLOWED_UNSAFE_MODULES`], and every file with unsafe code lies inside one of them;
//! - `[workspace.lints]` denies `unsafe_op_in_unsafe_fn` and `clippy::undocumented_unsafe_blocks`, and every
//!   workspace member inherits it (`[lints] workspace = true`);
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
    "targets/src/lib.rs",
    "targets/src/main.rs",
    "targets/null/src/lib.rs",
    "usbgpu/amd/src/lib.rs",
    "usbgpu/flash/src/lib.rs",
    "usbgpu/flash/src/bin/gpuflash/main.rs",
    "usbgpu/rdna3/src/lib.rs",
    "xtask/src/lib.rs",
    "xtask/src/main.rs",
    "tests/src/lib.rs",
    "tests/tests/amd/rdna3_zoo.rs",
];

/// Crate roots at a hardware, FFI or loader boundary: unsafe allowed, each block justified.
const BOUNDARY: &[&str] = &[
    "targets/platform/src/lib.rs",
    "targets/cpu/src/lib.rs",
    "targets/capi/src/lib.rs",
    "targets/python/src/lib.rs",
    "qcom/src/lib.rs",
    "qcom/hexagon/src/lib.rs",
    "usbgpu/bridge/src/lib.rs",
];

/// The modules of each boundary crate (by crate folder) that may hold unsafe code: those that touch
/// hardware, FFI or the loader. Module paths are relative to the crate root; a module covers its
/// submodules.
const ALLOWED_UNSAFE_MODULES: &[(&str, &[&str])] = &[
    ("targets/platform", &["bundle_file", "interrupt"]),
    (
        "targets/cpu",
        &["borrow", "call", "device", "exec_mem", "pool"],
    ),
    ("targets/capi", &["ffi"]),
    (
        "targets/python",
        &["alloc_count", "detach", "model", "owner", "rawbuf"],
    ),
    (
        "qcom",
        &[
            "adreno::external",
            "emu::kgsl::ioctl",
            "emu::kgsl::memory",
            "kgsl",
        ],
    ),
    (
        "qcom/hexagon",
        &["emu::device::io", "fastrpc::io", "fastrpc::real"],
    ),
    ("usbgpu/bridge", &["host", "pcie::mapped"]),
];

/// Binaries whose only unsafe is an exported entry symbol (`no_mangle`, libFuzzer's entry point).
const EXPORT_ONLY: &[&str] = &[
    "tests/footprint/src/main.rs",
    "core/fuzz/fuzz_targets/bundle_parse.rs",
    "core/fuzz/fuzz_targets/load_run_cpu.rs",
];

/// Binaries that call a C ABI through its raw pointers (the C API's fuzz target): `#![deny(unsafe_code)]`
/// at the root, `#[allow(unsafe_code)]` on the functions making the calls, each block justified.
const FFI_CALLERS: &[&str] = &["core/fuzz/fuzz_targets/capi_load_run.rs"];

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

/// Crate roots of every package under the repository: `src/lib.rs`, `src/main.rs`, `src/bin/*.rs`,
/// `src/bin/*/main.rs` and the `path`s of `[[bin]]` targets.
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
                // A binary of several files is a folder `src/bin/NAME/` rooted at its `main.rs`.
                let p = b.path();
                roots.push(rel(&if p.is_dir() { p.join("main.rs") } else { p }));
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
        .chain(FFI_CALLERS)
        .copied()
        .collect();
    let roots = crate_roots();
    assert!(roots.len() >= classified.len(), "found roots: {roots:?}");
    for r in &roots {
        assert!(
            classified.contains(&r.as_str()),
            "crate root {r} is not classified in tests/tests/repo/soundness.rs (UNSAFE_FREE, BOUNDARY, \
             EXPORT_ONLY or FFI_CALLERS)"
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
    for r in BOUNDARY.iter().chain(EXPORT_ONLY).chain(FFI_CALLERS) {
        assert!(
            attrs(r).contains("#![deny(unsafe_code)]"),
            "{r} lacks #![deny(unsafe_code)]"
        );
    }
}

/// The module path (`a::b`) of source file `rel` (`a/b.rs` or `a/b/mod.rs`) below a crate's `src/`.
fn module_of(rel: &str) -> String {
    let rel = rel.trim_end_matches(".rs");
    let rel = rel.strip_suffix("/mod").unwrap_or(rel);
    if matches!(rel, "lib" | "main") {
        return String::new();
    }
    rel.replace('/', "::")
}

/// The modules of `src` (a file of module `module`) that carry `#[allow(unsafe_code)]`, or an error
/// for an allow that is not on a `mod NAME;` declaration.
fn unsafe_allows(module: &str, src: &str) -> Result<Vec<String>, String> {
    let lines: Vec<&str> = src.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !code(line).contains("allow(unsafe_code)") {
            continue;
        }
        if line.trim_start().starts_with("#!") {
            return Err(format!("line {}: crate- or module-wide allow", i + 1));
        }
        let decl = lines[i + 1..]
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.starts_with("#["))
            .unwrap_or("");
        let name = decl
            .strip_prefix("pub ")
            .or_else(|| decl.strip_prefix("pub(crate) "))
            .unwrap_or(decl)
            .strip_prefix("mod ")
            .and_then(|n| n.strip_suffix(';'));
        match name {
            Some(n) if module.is_empty() => found.push(n.to_string()),
            Some(n) => found.push(format!("{module}::{n}")),
            None => return Err(format!("line {}: allow not on a `mod` declaration", i + 1)),
        }
    }
    Ok(found)
}

/// True if `src` holds unsafe code the `unsafe_code` lint reports (blocks, impls, traits, functions).
fn has_unsafe_code(src: &str) -> bool {
    src.lines().any(|line| {
        let c = code(line);
        let t = c.trim_start();
        let t = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub "))
            .unwrap_or(t);
        c.contains(concat!("unsafe", " {"))
            || t.starts_with(concat!("unsafe", " impl"))
            || t.starts_with(concat!("unsafe", " trait"))
            || t.starts_with(concat!("unsafe", " fn"))
    })
}

#[test]
fn unsafe_code_in_boundary_crates_is_confined_to_the_listed_modules() {
    let mut problems = Vec::new();
    let mut crates = Vec::new();
    for root in BOUNDARY {
        let krate = root.strip_suffix("/src/lib.rs").expect("a lib root");
        crates.push(krate);
        let listed: Vec<String> = ALLOWED_UNSAFE_MODULES
            .iter()
            .find(|(c, _)| *c == krate)
            .map(|(_, m)| m.iter().map(|m| m.to_string()).collect())
            .unwrap_or_default();
        let src_dir = repo().join(krate).join("src");
        let mut files = Vec::new();
        walk(&src_dir, &|name| name.ends_with(".rs"), &mut files);
        let mut allowed = Vec::new();
        for f in &files {
            let in_src = f
                .strip_prefix(&src_dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let module = module_of(&in_src);
            let src = std::fs::read_to_string(f).unwrap();
            match unsafe_allows(&module, &src) {
                Ok(m) => allowed.extend(m),
                Err(e) => problems.push(format!("{}: {e}", rel(f))),
            }
            let inside = listed
                .iter()
                .any(|m| module == *m || module.starts_with(&format!("{m}::")));
            if has_unsafe_code(&src) && !inside {
                problems.push(format!(
                    "{}: unsafe code in module `{module}`, which ALLOWED_UNSAFE_MODULES does not list for {krate}",
                    rel(f)
                ));
            }
        }
        allowed.sort();
        let mut want = listed.clone();
        want.sort();
        if allowed != want {
            problems.push(format!(
                "{krate}: modules with #[allow(unsafe_code)] {allowed:?} differ from ALLOWED_UNSAFE_MODULES {want:?}"
            ));
        }
    }
    for (c, _) in ALLOWED_UNSAFE_MODULES {
        if !crates.contains(c) {
            problems.push(format!(
                "ALLOWED_UNSAFE_MODULES lists {c}, which is not a BOUNDARY crate"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The `members = [...]` of the root Cargo.toml.
fn workspace_members() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("root Cargo.toml has a members line");
    let list = &line[line.find('[').unwrap() + 1..line.rfind(']').unwrap()];
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

#[test]
fn workspace_lints_deny_unsafe_slips_and_every_member_inherits_them() {
    let root = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let section = |name: &str| -> String {
        let start = root
            .find(&format!("[{name}]"))
            .unwrap_or_else(|| panic!("root Cargo.toml has no [{name}]"));
        let rest = &root[start + name.len() + 2..];
        rest[..rest.find("\n[").unwrap_or(rest.len())].to_string()
    };
    assert!(section("workspace.lints.rust").contains("unsafe_op_in_unsafe_fn = \"deny\""));
    assert!(section("workspace.lints.clippy").contains("undocumented_unsafe_blocks = \"deny\""));
    let members = workspace_members();
    assert!(members.len() >= 7, "{members:?}");
    for m in members {
        let text = std::fs::read_to_string(repo().join(&m).join("Cargo.toml")).unwrap();
        assert!(
            text.contains("[lints]\nworkspace = true"),
            "{m}/Cargo.toml lacks `[lints] workspace = true`"
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

    assert_eq!(module_of("lib.rs"), "");
    assert_eq!(module_of("cpu/mod.rs"), "cpu");
    assert_eq!(module_of("cpu/pool.rs"), "cpu::pool");
    let allow = "#[allow(unsafe_code)]";
    let on_mod = format!("#[cfg(feature = \"std\")]\n{allow}\npub mod host;\n");
    assert_eq!(unsafe_allows("", &on_mod), Ok(vec!["host".to_string()]));
    assert_eq!(
        unsafe_allows("pcie", &on_mod),
        Ok(vec!["pcie::host".to_string()])
    );
    let on_fn = format!("{allow}\nfn f() {{}}\n");
    assert!(unsafe_allows("", &on_fn).is_err());
    let inner = "#![allow(unsafe_code)]\n";
    assert!(unsafe_allows("", inner).is_err());
    assert!(has_unsafe_code(&format!("fn f() {{ {u} g() }} }}\n")));
    assert!(has_unsafe_code(concat!("pub ", "unsafe", " fn g() {}\n")));
    assert!(!has_unsafe_code("// an unsafe { in a comment\nfn f() {}\n"));
}
