//! Pooling a runtime's worker results over rounds: min/median/max of the step samples, the median
//! load time, the peak RSS, and how many steps later rounds time.
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{json, Value};

/// Timed time per process and round that [`steps_for`] aims at.
const ROUND_STEP_BUDGET: Duration = Duration::from_millis(1500);
/// Upper bound of steps per process.
const MAX_STEPS: usize = 1000;

/// Pooled statistics of one runtime on one model.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub min_ns: u64,
    pub median_ns: u64,
    pub max_ns: u64,
    pub samples: usize,
    pub load_median_ns: u64,
    pub peak_rss_bytes: u64,
}

/// Min/median/max of `samples` (upper median for even counts); `None` if empty.
pub fn summarize(samples: &[u64]) -> Option<(u64, u64, u64)> {
    let mut v = samples.to_vec();
    v.sort_unstable();
    Some((*v.first()?, v[v.len() / 2], *v.last()?))
}

/// Accumulates one runtime's results over rounds.
#[derive(Default)]
pub(super) struct Acc {
    pub(super) samples: Vec<u64>,
    loads: Vec<u64>,
    rss: u64,
}

impl Acc {
    pub(super) fn add(&mut self, v: &Value) -> Result<()> {
        let samples = v["samples_ns"]
            .as_array()
            .context("worker JSON has no samples_ns")?;
        self.samples
            .extend(samples.iter().filter_map(Value::as_u64));
        self.loads.push(
            v["load_ns"]
                .as_u64()
                .context("worker JSON has no load_ns")?,
        );
        self.rss = self.rss.max(v["peak_rss_bytes"].as_u64().unwrap_or(0));
        Ok(())
    }

    pub(super) fn stats(&self) -> Result<Stats> {
        let (min_ns, median_ns, max_ns) = summarize(&self.samples).context("no samples")?;
        let (_, load_median_ns, _) = summarize(&self.loads).context("no load times")?;
        Ok(Stats {
            min_ns,
            median_ns,
            max_ns,
            samples: self.samples.len(),
            load_median_ns,
            peak_rss_bytes: self.rss,
        })
    }
}

pub(super) fn stats_json(s: &Stats) -> Value {
    json!({"min_ns": s.min_ns, "median_ns": s.median_ns, "max_ns": s.max_ns, "samples": s.samples,
           "load_median_ns": s.load_median_ns, "peak_rss_bytes": s.peak_rss_bytes})
}

/// Steps per process after the first round: enough for about [`ROUND_STEP_BUDGET`] of the slowest
/// runtime's median step, at least `min` and at most [`MAX_STEPS`], the same for every runtime.
pub fn steps_for(slowest_median_ns: u64, min: usize) -> usize {
    let want = ROUND_STEP_BUDGET.as_nanos() as u64 / slowest_median_ns.max(1);
    (want as usize).clamp(min, MAX_STEPS.max(min))
}

/// A runtime's statistics for report tests: min/max 1 µs either side of `median_ns`, 3 samples,
/// 2 ms load, 10 MiB peak RSS.
#[cfg(test)]
pub(super) fn fixture(median_ns: u64) -> Value {
    json!({"min_ns": median_ns - 1000, "median_ns": median_ns, "max_ns": median_ns + 1000, "samples": 3,
           "load_median_ns": 2_000_000, "peak_rss_bytes": 10_485_760})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarize_gives_min_upper_median_max() {
        assert_eq!(summarize(&[5, 1, 9, 3]), Some((1, 5, 9)));
        assert_eq!(summarize(&[7]), Some((7, 7, 7)));
        assert_eq!(summarize(&[]), None);
    }

    #[test]
    fn steps_fill_the_budget_within_bounds() {
        assert_eq!(steps_for(500_000_000, 30), 30); // slow model: the minimum
        assert_eq!(steps_for(10_000_000, 30), 150); // 1.5 s / 10 ms
        assert_eq!(steps_for(1_000, 30), 1000); // fast model: the cap
        assert_eq!(steps_for(0, 30), 1000);
        assert_eq!(steps_for(1_000, 5000), 5000); // an explicit minimum above the cap wins
    }
}
