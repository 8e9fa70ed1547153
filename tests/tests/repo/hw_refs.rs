//! Protocol citations stay checkable: every `docs/hw/<file>.md §<section>` in the repository's code and
//! docs names a file under `docs/hw/` and a section heading in it (`## 7.` / `### 7.6 …`), and nothing
//! cites a document outside the repository (`spec §…`, `spec <file>.md`, `shared/spec`, `/work/…`,
//! `../shared`) — a reader of this repository could not open those. Nor does anything point at the
//! project's tracker or planning notes ("issue 12", "the design card", "part 2"): those are not in
//! the repository either; name the file, test or section instead.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use modelrt_tests::root;

/// Directories never scanned: build output, VCS data, Python environments.
const SKIP_DIRS: &[&str] = &["target", ".git", "node_modules", "__pycache__", ".venv"];
/// Extensions of files that can hold citations.
const EXTENSIONS: &[&str] = &["rs", "py", "c", "h", "toml", "md", "sh"];
/// This file spells the forbidden patterns out.
const SELF: &str = "tests/tests/repo/hw_refs.rs";

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !SKIP_DIRS.contains(&name.as_str()) {
                files(&path, out);
            }
        } else if path
            .extension()
            .is_some_and(|e| EXTENSIONS.contains(&e.to_string_lossy().as_ref()))
        {
            out.push(path);
        }
    }
}

/// Section numbers (`7`, `7.6`) of the Markdown headings in `text`.
fn sections(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| {
            let title = l.trim_start_matches('#').trim_start();
            let number: String = title
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let number = number.trim_end_matches('.');
            (!number.is_empty()).then(|| number.to_string())
        })
        .collect()
}

/// `(file, section)` for every `docs/hw/<file>.md[`] §<section>` in `text`; section is `None` when no
/// `§` follows the file name.
fn citations(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("docs/hw/") {
        let rest = &text[at + "docs/hw/".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect();
        let name = name.trim_end_matches('.').to_string();
        if !name.ends_with(".md") {
            continue; // the directory itself (`docs/hw/`)
        }
        let after = rest[name.len()..].trim_start_matches('`').trim_start();
        let section = after.strip_prefix('§').map(|s| {
            let s: String = s
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            s.trim_end_matches('.').to_string()
        });
        // A `§` with no number after it (a placeholder such as `§N`) is no section reference.
        let section = section.filter(|s| !s.is_empty());
        out.push((name, section));
    }
    out
}

/// Citations of documents that are not in the repository.
fn outside_citations(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut found = Vec::new();
    for pat in ["spec §", "shared/spec", "../shared"] {
        if lower.contains(pat) {
            found.push(pat.to_string());
        }
    }
    // An absolute `/work/…` path (not a `…/work/` directory inside a relative path).
    let absolute_work = lower.match_indices("/work/").any(|(at, _)| {
        !lower[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
    });
    if absolute_work {
        found.push("/work/".to_string());
    }
    // `spec foo.md`, `spec `foo.md``
    for (at, _) in lower.match_indices("spec ") {
        let word: String = lower[at + 5..]
            .trim_start_matches('`')
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '`' && *c != ')')
            .collect();
        if word.ends_with(".md") {
            found.push(format!("spec {word}"));
        }
    }
    found
}

/// True if `c` can continue a word (so a match right after it is inside a longer word).
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// References to things a reader of the repository cannot follow: `issue <digits>` (also `issue #N`),
/// `design card`, and `part <digit>` as a word ("part 2's interpreter", not "counterpart 2"),
/// case-insensitively.
fn unreadable_references(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut found = Vec::new();
    let starts_word = |at: usize| !lower[..at].chars().next_back().is_some_and(word_char);
    for (word, hash_ok) in [("issue", true), ("part", false)] {
        for (at, _) in lower.match_indices(word) {
            if !starts_word(at) {
                continue;
            }
            let rest = &lower[at + word.len()..];
            let gap = rest.len() - rest.trim_start_matches([' ', '\t']).len();
            if gap == 0 {
                continue; // `issues`, `parts`, `partial`, or nothing after the word
            }
            let mut after = &rest[gap..];
            if hash_ok {
                after = after.strip_prefix('#').unwrap_or(after);
            }
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            if !digits.is_empty() {
                found.push(format!("{word} {digits}"));
            }
        }
    }
    if lower.contains("design card") {
        found.push("design card".to_string());
    }
    found
}

#[test]
fn hw_citations_resolve_and_nothing_cites_outside_the_repo() {
    let root = root();
    let hw = root.join("docs/hw");
    let mut all = Vec::new();
    files(&root, &mut all);
    let mut errors = Vec::new();
    let mut resolved = 0;
    for path in &all {
        let rel = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == SELF {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            continue; // not UTF-8: no citations
        };
        for (no, line) in text.lines().enumerate() {
            for bad in outside_citations(line) {
                errors.push(format!(
                    "{rel}:{}: cites `{bad}`, which is not in the repository",
                    no + 1
                ));
            }
            for bad in unreadable_references(line) {
                errors.push(format!(
                    "{rel}:{}: `{bad}` points outside the repository; name the file, test or section",
                    no + 1
                ));
            }
            for (file, section) in citations(line) {
                let doc = hw.join(&file);
                let Ok(doc_text) = std::fs::read_to_string(&doc) else {
                    errors.push(format!("{rel}:{}: docs/hw/{file} does not exist", no + 1));
                    continue;
                };
                if let Some(section) = section {
                    if !sections(&doc_text).contains(&section) {
                        errors.push(format!(
                            "{rel}:{}: docs/hw/{file} has no section {section}",
                            no + 1
                        ));
                        continue;
                    }
                }
                resolved += 1;
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{} bad citations:\n{}",
        errors.len(),
        errors.join("\n")
    );
    assert!(
        resolved >= 50,
        "only {resolved} docs/hw citations found: is the scan broken?"
    );
}

#[test]
fn scanners_recognise_what_they_must() {
    let doc = "# T\n## 3. Engine\n### 3.6 Retry rule\n## 14. Copies\n";
    assert_eq!(
        sections(doc),
        ["14", "3", "3.6"].iter().map(|s| s.to_string()).collect()
    );
    assert_eq!(
        citations("x (`docs/hw/a-b.md` §3.6) y docs/hw/c.md. z docs/hw/"),
        vec![("a-b.md".into(), Some("3.6".into())), ("c.md".into(), None)]
    );
    assert_eq!(
        citations("(docs/hw/a.md §7.)"),
        vec![("a.md".into(), Some("7".into()))]
    );
    assert!(!outside_citations("see spec §3.2").is_empty());
    assert!(!outside_citations("(Spec asm24-bridge.md §2)").is_empty());
    assert!(!outside_citations("spec `navi31-spi-flash.md` §2").is_empty());
    assert!(!outside_citations("Facts: /work/shared/x").is_empty());
    assert!(!outside_citations("(contract: `/work/notes/m.md`)").is_empty());
    assert!(outside_citations("in `target/conformance/work/<case>/`").is_empty());
    assert!(outside_citations("the BundleSpec spec is inconsistent").is_empty());

    assert_eq!(unreadable_references("(issue 17, foo)"), vec!["issue 17"]);
    assert_eq!(
        unreadable_references("Issue 13's done means"),
        vec!["issue 13"]
    );
    assert_eq!(unreadable_references("see issue #4"), vec!["issue 4"]);
    assert_eq!(
        unreadable_references("The Design Card lists"),
        vec!["design card"]
    );
    assert_eq!(
        unreadable_references("optional: part 2's interpreter"),
        vec!["part 2"]
    );
    assert_eq!(unreadable_references("Part 3 (the driver)"), vec!["part 3"]);
    assert!(unreadable_references("its counterpart 2 lines down").is_empty());
    assert!(unreadable_references("tissue 3, reissue 4").is_empty());
    assert!(unreadable_references("issues 3 and parts 4, partial 5").is_empty());
    assert!(unreadable_references("an issue with 3 causes; part of 2").is_empty());
    assert!(unreadable_references("the part_2 field, the issue_3 flag").is_empty());
}
