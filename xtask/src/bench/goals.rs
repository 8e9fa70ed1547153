//! The step-time goals against onnxruntime the CPU backend is held to (docs/bench.md, "Goals and per-kernel
//! evidence") and how a measured ratio is judged: conv models at most
//! 1.5× onnxruntime's median step with x86-64-v3 bundles and 1.2× with x86-64-v4 bundles; the policy models (`policy`,
//! a matrix–vector net, and `policy_op`, openpilot's driving_policy shape) ahead of onnxruntime, i.e. strictly below
//! 1×, with either bundle.
use serde_json::{json, Value};

/// One goal: the bench column (`modelrt` = the v3 bundle, `modelrt-v4`), the bound on its median step over
/// onnxruntime's, and whether the bound itself misses (`< bound` instead of `≤ bound`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Goal {
    pub column: &'static str,
    pub label: &'static str,
    pub bound: f64,
    pub strict: bool,
}

/// The goals of `model`, v3 first.
pub fn goals_for(model: &str) -> [Goal; 2] {
    let (v3, v4, strict) = if is_policy(model) {
        (1.0, 1.0, true)
    } else {
        (1.5, 1.2, false)
    };
    [
        Goal {
            column: "modelrt",
            label: "modelrt v3",
            bound: v3,
            strict,
        },
        Goal {
            column: "modelrt-v4",
            label: "modelrt x86-64-v4",
            bound: v4,
            strict,
        },
    ]
}

/// Whether `model` is one of the policy nets (held to "ahead of onnxruntime").
pub fn is_policy(model: &str) -> bool {
    matches!(model, "policy" | "policy_op")
}

impl Goal {
    /// Whether `ratio` (median step over onnxruntime's) meets the goal.
    pub fn met(&self, ratio: f64) -> bool {
        if self.strict {
            ratio < self.bound
        } else {
            ratio <= self.bound
        }
    }

    /// `< 1` / `≤ 1.8` as the report prints the bound.
    pub fn bound_text(&self) -> String {
        format!("{} {}", if self.strict { "<" } else { "≤" }, self.bound)
    }

    /// The results document's record of this goal for a measured `ratio`.
    pub fn judge(&self, ratio: f64) -> Value {
        json!({"column": self.column, "label": self.label, "bound": self.bound, "strict": self.strict,
               "ratio": ratio, "met": self.met(ratio)})
    }
}

/// How far a judged goal (a [`Goal::judge`] record) is met or missed, relative to the bound: `met by 12%` (the
/// ratio is 12% below the bound) or `missed by 30%` (30% above it).
pub fn margin_text(g: &Value) -> String {
    let (r, b) = (
        g["ratio"].as_f64().unwrap_or(f64::NAN),
        g["bound"].as_f64().unwrap_or(f64::NAN),
    );
    if g["met"].as_bool() == Some(true) {
        format!("met by {:.0}%", (1.0 - r / b) * 100.0)
    } else {
        format!("missed by {:.0}%", (r / b - 1.0) * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conv_goals_are_inclusive_and_policy_must_be_ahead() {
        let [v3, v4] = goals_for("vision");
        assert!(v3.met(1.5) && !v3.met(1.51));
        assert!(v4.met(1.2) && !v4.met(1.2001));
        let [p3, p4] = goals_for("policy");
        assert!(!p3.met(1.0) && p3.met(0.99) && !p4.met(1.0));
        let [o3, _] = goals_for("policy_op");
        assert!(!o3.met(1.0) && o3.met(0.99));
        assert!(goals_for("dmonitor085")[0].met(1.5));
        assert_eq!(
            (p3.bound_text(), v4.bound_text()),
            ("< 1".into(), "≤ 1.2".into())
        );
    }

    #[test]
    fn margins_are_relative_to_the_bound() {
        let [v3, _] = goals_for("resnet50");
        assert_eq!(margin_text(&v3.judge(2.25)), "missed by 50%");
        assert_eq!(margin_text(&v3.judge(0.75)), "met by 50%");
    }
}
