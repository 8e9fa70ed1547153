//! The crate's modules import each other without circles: every `crate::…` and `super::…` path in the code of
//! `src/` (comments and the trailing `#[cfg(test)]` module left out) and every use of a child module a file
//! declares (`mod x;` … `x::`) is an edge from that file to the deepest module file the path names. The graph
//! of files, and the graph of modules at every depth (`decode`, `exec::cat6`, …), must be acyclic, and the roles
//! depend one way: `disasm` → `decode` ← `exec`, never `exec` ↔ `disasm` (lib.rs describes the layout).
//!
//! `IR3_MODULE_GRAPH_SRC=<dir>` checks another source tree (the flat layout before the split fails: `decode` ↔
//! `blob_decode_wave`, `exec` ↔ `alu_exec`, …).
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`["decode", "cat6"]`) → source file, for every file under `src`.
fn modules(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap();
            let mut m: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            if m.last().is_some_and(|l| l == "mod" || l == "lib") {
                m.pop();
            }
            out.insert(m, p);
        }
    }
    out
}

/// The code of a file: line comments dropped, and the trailing `#[cfg(test)]` module (its `super::*` is the
/// file itself).
fn code(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim() == "#[cfg(test)]" {
            break;
        }
        let l = line.split("//").next().unwrap_or("");
        out.push(l.to_string());
    }
    out
}

/// Every path `head::a::b…` in `line` (`head` a whole word), as its segments after `head`.
fn paths_after(line: &str, head: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let pat = format!("{head}::");
    let mut from = 0;
    while let Some(i) = line[from..].find(&pat) {
        let at = from + i;
        from = at + pat.len();
        let before = line[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        // A visibility, `pub(in crate::exec)`, names no item.
        if line[..at].ends_with("(in ") {
            continue;
        }
        let rest = &line[from..];
        let segs: Vec<String> = rest
            .split("::")
            .map(|s| {
                s.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|s| !s.is_empty())
            .collect();
        // `use super::{a, b}` and `crate::x::{a, b}`: each braced item is a path of its own.
        let after: String = rest
            .split("::")
            .skip(segs.len())
            .collect::<Vec<_>>()
            .join("::");
        if let Some(inner) = after.strip_prefix('{') {
            let inner = inner.split('}').next().unwrap_or("");
            for item in inner.split(',') {
                let mut p = segs.clone();
                p.extend(
                    item.trim()
                        .split("::")
                        .map(|s| s.split_whitespace().next().unwrap_or("").to_string())
                        .filter(|s| !s.is_empty() && s != "self"),
                );
                out.push(p);
            }
        } else {
            out.push(segs);
        }
    }
    out
}

/// Edges between module paths (files).
fn graph(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mods = modules(src);
    let deepest = |p: &[String]| -> Option<Vec<String>> {
        (0..=p.len())
            .rev()
            .map(|n| p[..n].to_vec())
            .find(|m| mods.contains_key(m))
    };
    let mut g: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, file) in &mods {
        let is_dir_module = file.file_stem().is_some_and(|s| s == "mod" || s == "lib");
        // `super` of a file `a/b.rs` is `a`; of `a/b/mod.rs` also `a` (the module is `a::b`).
        let parent: Vec<String> = m[..m.len().saturating_sub(1)].to_vec();
        let lines = code(&std::fs::read_to_string(file).unwrap());
        let children: Vec<String> = lines
            .iter()
            .filter_map(|l| {
                let t = l
                    .trim()
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub(in crate::exec) ");
                let t = t.trim_start_matches("pub ");
                t.strip_prefix("mod ")?
                    .strip_suffix(';')
                    .map(str::to_string)
            })
            .collect();
        let edges = g.entry(m.clone()).or_default();
        for line in &lines {
            let mut targets: Vec<Vec<String>> = paths_after(line, "crate");
            for p in paths_after(line, "super") {
                let mut base = parent.clone();
                let mut p = p.as_slice();
                // `super::super::x`
                while p.first().is_some_and(|s| s == "super") {
                    base.pop();
                    p = &p[1..];
                }
                base.extend(p.iter().cloned());
                targets.push(base);
            }
            if is_dir_module {
                for c in &children {
                    for p in paths_after(line, c) {
                        let mut t = m.clone();
                        t.push(c.clone());
                        t.extend(p);
                        targets.push(t);
                    }
                }
            }
            for t in targets {
                if let Some(d) = deepest(&t) {
                    if &d != m {
                        edges.insert(d);
                    }
                }
            }
        }
    }
    g
}

/// A cycle in `g`, if there is one (as the list of its nodes).
fn cycle(g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<Vec<String>>> {
    fn visit(
        n: &Vec<String>,
        g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let i = stack.iter().position(|s| s == n).unwrap();
                return Some(stack[i..].to_vec());
            }
            _ => {}
        }
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if let Some(c) = visit(n, g, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

/// `g` with every module cut to its first `depth` segments (edges inside one node dropped).
fn collapse(
    g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    depth: usize,
) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let cut = |m: &Vec<String>| m[..m.len().min(depth)].to_vec();
    let mut out: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (a, bs) in g {
        let e = out.entry(cut(a)).or_default();
        for b in bs {
            if cut(b) != cut(a) {
                e.insert(cut(b));
            }
        }
    }
    out
}

fn src_dir() -> PathBuf {
    std::env::var_os("IR3_MODULE_GRAPH_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

fn show(c: &[Vec<String>]) -> String {
    let names: Vec<String> = c
        .iter()
        .map(|m| {
            if m.is_empty() {
                "crate".into()
            } else {
                m.join("::")
            }
        })
        .collect();
    format!("{} → {}", names.join(" → "), names[0])
}

#[test]
fn no_import_circle_among_files_or_modules() {
    let g = graph(&src_dir());
    assert!(g.len() > 5, "no source files found in {:?}", src_dir());
    let max = g.keys().map(Vec::len).max().unwrap_or(0);
    for depth in (1..=max).rev() {
        if let Some(c) = cycle(&collapse(&g, depth)) {
            panic!("import circle at module depth {depth}: {}", show(&c));
        }
    }
}

#[test]
fn roles_depend_one_way() {
    let g = collapse(&graph(&src_dir()), 1);
    let role = |r: &str| vec![r.to_string()];
    let forbidden = [
        ("decode", "disasm"),
        ("decode", "exec"),
        ("exec", "disasm"),
        ("disasm", "exec"),
    ];
    for (a, b) in forbidden {
        assert!(
            !g.get(&role(a)).is_some_and(|e| e.contains(&role(b))),
            "`{a}` imports `{b}`"
        );
    }
    // The parser does see the edges.
    assert!(g[&role("disasm")].contains(&role("decode")), "{g:?}");
    assert!(g[&role("program")].contains(&role("decode")), "{g:?}");
    // `instr` is the shared vocabulary: it depends on no other module of the crate.
    assert!(
        g.get(&role("instr")).is_none_or(BTreeSet::is_empty),
        "`instr` imports {:?}",
        g[&role("instr")]
    );
}

#[test]
fn the_parser_sees_paths_and_braces() {
    let p = paths_after("use crate::exec::{group::Group, launch::Launch};", "crate");
    assert_eq!(
        p,
        [
            vec!["exec", "group", "Group"],
            vec!["exec", "launch", "Launch"]
        ]
    );
    assert_eq!(
        paths_after("x = super::alu::op(1)", "super"),
        [vec!["alu", "op"]]
    );
    assert!(paths_after("modelrt_crate::x", "crate").is_empty());
    assert!(paths_after("pub(in crate::exec) fn f()", "crate").is_empty());
}
