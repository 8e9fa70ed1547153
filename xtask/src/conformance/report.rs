//! Conformance results: the per-case record, the summary, the markdown/terminal tables, the committed
//! baseline of expected statuses (`xtask/conformance/baseline.json`), the CI gate and the CI subset.
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::cases::Index;
use super::classify::{Status, TgStatus};

/// One case's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub name: String,
    pub op: String,
    pub modelrt: Status,
    /// WRONG: what differs; REFUSED: the refusal line; CRASH: what happened.
    pub detail: String,
    pub max_err: Option<f64>,
    /// Inputs folded with `--const` after the exporter asked for it.
    #[serde(default)]
    pub consts: Vec<String>,
    pub tinygrad: TgStatus,
    pub tinygrad_detail: String,
}

/// Expected statuses of one case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expected {
    pub modelrt: Status,
    pub tinygrad: TgStatus,
}

/// The committed baseline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub onnx: String,
    pub cases: BTreeMap<String, Expected>,
}

/// Counts over a set of results.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub total: usize,
    pub pass: usize,
    pub pass_const: usize,
    pub wrong: usize,
    pub refused: usize,
    pub crash: usize,
    pub tg_pass: usize,
    pub tg_wrong: usize,
    pub tg_error: usize,
    /// modelrt PASS among the cases tinygrad passes.
    pub pass_where_tg_passes: usize,
}

pub fn summarize(results: &[CaseResult]) -> Summary {
    let mut s = Summary {
        total: results.len(),
        ..Summary::default()
    };
    for r in results {
        match r.modelrt {
            Status::Pass => s.pass += 1,
            Status::Wrong => s.wrong += 1,
            Status::Refused => s.refused += 1,
            Status::Crash => s.crash += 1,
        }
        if r.modelrt == Status::Pass && !r.consts.is_empty() {
            s.pass_const += 1;
        }
        match r.tinygrad {
            TgStatus::Pass => s.tg_pass += 1,
            TgStatus::Wrong => s.tg_wrong += 1,
            TgStatus::Error => s.tg_error += 1,
        }
        if r.tinygrad == TgStatus::Pass && r.modelrt == Status::Pass {
            s.pass_where_tg_passes += 1;
        }
    }
    s
}

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "n/a".into()
    } else {
        format!("{:.1}%", 100.0 * a as f64 / b as f64)
    }
}

impl Summary {
    /// Summary lines (markdown list items, also fine on a terminal).
    pub fn lines(&self) -> String {
        format!(
            "- cases: {}\n- modelrt: {} PASS ({} with --const), {} WRONG, {} REFUSED, {} CRASH\n\
             - tinygrad (eager, CPU): {} PASS, {} WRONG, {} ERROR\n\
             - modelrt pass rate on the cases tinygrad passes: {} of {} ({})\n",
            self.total,
            self.pass,
            self.pass_const,
            self.wrong,
            self.refused,
            self.crash,
            self.tg_pass,
            self.tg_wrong,
            self.tg_error,
            self.pass_where_tg_passes,
            self.tg_pass,
            pct(self.pass_where_tg_passes, self.tg_pass)
        )
    }
}

fn status_cell(r: &CaseResult) -> String {
    if r.modelrt == Status::Pass && !r.consts.is_empty() {
        format!("PASS (--const {})", r.consts.join(","))
    } else {
        r.modelrt.name().to_string()
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn err_cell(e: Option<f64>) -> String {
    e.map_or_else(String::new, |e| format!("{e:.2e}"))
}

/// The detail shown for a case: modelrt's, else tinygrad's when only tinygrad failed.
fn detail(r: &CaseResult) -> String {
    match (r.modelrt, r.tinygrad) {
        (Status::Pass, TgStatus::Pass) => String::new(),
        (Status::Pass, _) => format!("tinygrad: {}", r.tinygrad_detail),
        _ => r.detail.clone(),
    }
}

/// The refusal/crash reasons with their counts, most frequent first.
pub fn reasons(results: &[CaseResult]) -> Vec<(Status, String, usize)> {
    let mut m: BTreeMap<(Status, String), usize> = BTreeMap::new();
    for r in results.iter().filter(|r| r.modelrt != Status::Pass) {
        *m.entry((r.modelrt, r.detail.clone())).or_default() += 1;
    }
    let mut v: Vec<(Status, String, usize)> = m.into_iter().map(|((s, d), n)| (s, d, n)).collect();
    v.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| (a.0, &a.1).cmp(&(b.0, &b.1))));
    v
}

/// The markdown report: summary, reasons and the per-case table.
pub fn markdown(results: &[CaseResult], date: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Run of {date}.\n\n{}", summarize(results).lines());
    let _ = writeln!(
        s,
        "### Reasons (modelrt, not PASS)\n\n| status | cases | reason |\n|---|---:|---|"
    );
    for (st, why, n) in reasons(results) {
        let _ = writeln!(s, "| {} | {n} | {} |", st.name(), cell(&why));
    }
    let _ = writeln!(
        s,
        "\n### Cases\n\n| case | op | modelrt | tinygrad | max err | reason |\n|---|---|---|---|---:|---|"
    );
    for r in results {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            r.name,
            r.op,
            status_cell(r),
            r.tinygrad.name(),
            err_cell(r.max_err),
            cell(&detail(r))
        );
    }
    s
}

/// A plain-text table for the terminal.
pub fn terminal(results: &[CaseResult]) -> String {
    let w = results
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let sw = results
        .iter()
        .map(|r| status_cell(r).len())
        .max()
        .unwrap_or(0)
        .max(7);
    let mut s = format!(
        "{:w$}  {:sw$}  {:8}  {:>9}  reason\n",
        "case", "modelrt", "tinygrad", "max err"
    );
    for r in results {
        let _ = writeln!(
            s,
            "{:w$}  {:sw$}  {:8}  {:>9}  {}",
            r.name,
            status_cell(r),
            r.tinygrad.name(),
            err_cell(r.max_err),
            detail(r)
        );
    }
    s.push_str(&summarize(results).lines());
    s
}

/// The CI gate: every WRONG and CRASH, and every case the baseline expects to PASS that did not.
pub fn problems(results: &[CaseResult], baseline: &Baseline) -> Vec<String> {
    let mut v = Vec::new();
    for r in results {
        match r.modelrt {
            Status::Wrong | Status::Crash => {
                v.push(format!("{}: {} ({})", r.name, r.modelrt.name(), r.detail))
            }
            Status::Refused
                if baseline
                    .cases
                    .get(&r.name)
                    .is_some_and(|e| e.modelrt == Status::Pass) =>
            {
                v.push(format!(
                    "{}: was PASS in the baseline, now REFUSED ({})",
                    r.name, r.detail
                ))
            }
            _ => {}
        }
    }
    v
}

/// The baseline after a run: `results` replace their cases; a full run drops cases that no longer
/// exist.
pub fn updated_baseline(
    old: &Baseline,
    onnx: &str,
    results: &[CaseResult],
    full: bool,
) -> Baseline {
    let mut cases = if full {
        BTreeMap::new()
    } else {
        old.cases.clone()
    };
    for r in results {
        cases.insert(
            r.name.clone(),
            Expected {
                modelrt: r.modelrt,
                tinygrad: r.tinygrad,
            },
        );
    }
    Baseline {
        onnx: onnx.to_string(),
        cases,
    }
}

/// The baseline as JSON with one case per line (small, reviewable diffs).
pub fn baseline_json(b: &Baseline) -> String {
    let mut s = format!(
        "{{\n  \"onnx\": {},\n  \"cases\": {{\n",
        serde_json::json!(b.onnx)
    );
    let n = b.cases.len();
    for (i, (name, e)) in b.cases.iter().enumerate() {
        let _ = writeln!(
            s,
            "    {}: {{\"modelrt\": \"{}\", \"tinygrad\": \"{}\"}}{}",
            serde_json::json!(name),
            e.modelrt.name(),
            e.tinygrad.name(),
            if i + 1 < n { "," } else { "" }
        );
    }
    s.push_str("  }\n}\n");
    s
}

/// Ops the exporter implements itself (xtask/exporter/mrt/rnn.py) on top of tinygrad's frontend: the CI subset takes
/// their cases too.
pub const EXPORTER_OPS: [&str; 3] = ["GRU", "LSTM", "RNN"];

/// The CI subset, for every op tinygrad's ONNX frontend (or the exporter, [`EXPORTER_OPS`]) implements that has node tests, up to three
/// cases (candidates ordered by name, non-expanded before `_expanded`): the first the baseline
/// expects modelrt to PASS (regressions), the op's first case (the canonical one), and the first
/// tinygrad passes but modelrt did not (a known gap, so CI keeps showing it). Deterministic for a
/// given index and baseline.
pub fn ci_subset(index: &Index, baseline: &Baseline) -> Vec<String> {
    let mut tg: BTreeSet<&str> = index.tinygrad_ops.iter().map(String::as_str).collect();
    tg.extend(EXPORTER_OPS);
    let mut by_op: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in &index.cases {
        if tg.contains(c.op.as_str()) {
            by_op.entry(&c.op).or_default().push(&c.name);
        }
    }
    let exp = |n: &str| baseline.cases.get(n).copied();
    let mut out = BTreeSet::new();
    for names in by_op.values_mut() {
        names.sort_by_key(|n| (n.contains("_expanded"), *n));
        let passing = names
            .iter()
            .find(|n| exp(n).is_some_and(|e| e.modelrt == Status::Pass));
        let gap = names.iter().find(|n| {
            exp(n).is_some_and(|e| e.tinygrad == TgStatus::Pass && e.modelrt != Status::Pass)
        });
        for pick in [passing, names.first(), gap].into_iter().flatten() {
            out.insert(pick.to_string());
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::cases::IndexEntry;

    fn res(name: &str, m: Status, t: TgStatus, detail: &str) -> CaseResult {
        CaseResult {
            name: name.into(),
            op: "Op".into(),
            modelrt: m,
            detail: detail.into(),
            max_err: None,
            consts: vec![],
            tinygrad: t,
            tinygrad_detail: String::new(),
        }
    }

    fn baseline(entries: &[(&str, Status, TgStatus)]) -> Baseline {
        Baseline {
            onnx: "1.23.2".into(),
            cases: entries
                .iter()
                .map(|(n, m, t)| {
                    (
                        n.to_string(),
                        Expected {
                            modelrt: *m,
                            tinygrad: *t,
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn the_gate_fails_on_wrong_crash_and_lost_passes_only() {
        let results = [
            res("a", Status::Pass, TgStatus::Pass, ""),
            res("b", Status::Wrong, TgStatus::Pass, "output 0 differs"),
            res("c", Status::Crash, TgStatus::Pass, "exporter traceback: X"),
            res("d", Status::Refused, TgStatus::Pass, "unsupported"),
            res("e", Status::Refused, TgStatus::Error, "unsupported"),
        ];
        let b = baseline(&[
            ("a", Status::Pass, TgStatus::Pass),
            ("d", Status::Pass, TgStatus::Pass),
            ("e", Status::Refused, TgStatus::Error),
        ]);
        let p = problems(&results, &b);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].starts_with("b: WRONG") && p[1].starts_with("c: CRASH"));
        assert_eq!(
            p[2],
            "d: was PASS in the baseline, now REFUSED (unsupported)"
        );
    }

    #[test]
    fn summary_counts_and_the_pass_rate_on_tinygrad_passes() {
        let mut withconst = res("c", Status::Pass, TgStatus::Pass, "");
        withconst.consts = vec!["shape".into()];
        let results = [
            res("a", Status::Pass, TgStatus::Pass, ""),
            res("b", Status::Refused, TgStatus::Pass, "r"),
            withconst,
            res("d", Status::Refused, TgStatus::Error, "r"),
        ];
        let s = summarize(&results);
        assert_eq!(
            (
                s.pass,
                s.pass_const,
                s.refused,
                s.tg_pass,
                s.pass_where_tg_passes
            ),
            (2, 1, 2, 3, 2)
        );
        assert!(s.lines().contains("2 of 3 (66.7%)"), "{}", s.lines());
        let md = markdown(&results, "today");
        assert!(
            md.contains("| c | Op | PASS (--const shape) | PASS |  |  |"),
            "{md}"
        );
        assert!(md.contains("| REFUSED | 2 | r |"), "{md}");
    }

    #[test]
    fn markdown_cells_escape_pipes() {
        let md = markdown(
            &[res("a", Status::Refused, TgStatus::Pass, "x | y\nz")],
            "d",
        );
        assert!(
            md.contains("| a | Op | REFUSED | PASS |  | x \\| y z |"),
            "{md}"
        );
    }

    #[test]
    fn subset_covers_each_tinygrad_op_with_a_pass_its_first_case_and_a_known_gap() {
        let idx = Index {
            onnx: "1.23.2".into(),
            generator: String::new(),
            tinygrad_ops: vec!["Add".into(), "Relu".into(), "Conv".into()],
            cases: [
                ("test_add", "Add"),
                ("test_add_bcast", "Add"),
                ("test_add_expanded", "Add"),
                ("test_relu", "Relu"),
                ("test_string_concat", "StringConcat"),
            ]
            .iter()
            .map(|(n, o)| IndexEntry {
                name: n.to_string(),
                op: o.to_string(),
            })
            .collect(),
        };
        let none = Baseline::default();
        assert_eq!(ci_subset(&idx, &none), ["test_add", "test_relu"]);
        // the first baseline PASS and the first known gap join the op's first case
        let b = baseline(&[
            ("test_add", Status::Pass, TgStatus::Pass),
            ("test_add_bcast", Status::Pass, TgStatus::Pass),
            ("test_add_expanded", Status::Wrong, TgStatus::Pass),
            ("test_relu", Status::Refused, TgStatus::Error),
        ]);
        assert_eq!(
            ci_subset(&idx, &b),
            ["test_add", "test_add_expanded", "test_relu"]
        );
        let b = baseline(&[
            ("test_add", Status::Crash, TgStatus::Error),
            ("test_add_bcast", Status::Pass, TgStatus::Pass),
        ]);
        assert_eq!(
            ci_subset(&idx, &b),
            ["test_add", "test_add_bcast", "test_relu"]
        );
    }

    #[test]
    fn baseline_updates_merge_for_subsets_and_replace_for_full_runs() {
        let old = baseline(&[
            ("gone", Status::Pass, TgStatus::Pass),
            ("a", Status::Refused, TgStatus::Pass),
        ]);
        let r = [res("a", Status::Pass, TgStatus::Pass, "")];
        let merged = updated_baseline(&old, "1.23.2", &r, false);
        assert_eq!(merged.cases.len(), 2);
        assert_eq!(merged.cases["a"].modelrt, Status::Pass);
        let full = updated_baseline(&old, "1.23.2", &r, true);
        assert_eq!(full.cases.keys().collect::<Vec<_>>(), ["a"]);
        // the one-line-per-case form reads back as the same baseline
        let text = baseline_json(&merged);
        assert!(
            text.contains("    \"a\": {\"modelrt\": \"PASS\", \"tinygrad\": \"PASS\"},\n"),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Baseline>(&text).unwrap(), merged);
    }
}
