//! The batches of work groups of one dispatch on several host threads (std only; docs/hw/adreno-kgsl-pm4.md
//! §16.5). The thread count is [`THREADS_ENV`] when it holds a positive integer, else the host's available
//! parallelism; 1 keeps the serial path of [`crate::exec::run_threads`].
//!
//! The dispatch's [`GpuMemory`] stays with the calling thread and is not written while workers run:
//! - **reads** go through its [`SharedMemory`] view (the same bytes and error texts), overlaid with the
//!   batch's own earlier writes, so a batch sees what it stored itself exactly as serially;
//! - **writes** (`stg`, `stib`) are checked against the view at once (a store outside the objects faults at the
//!   same instruction and fiber as serially) and appended to the batch's [`WriteLog`]; stores are logged fiber
//!   by fiber ([`GpuMemory::span_stores`] is false), so only the bytes a fiber stored are in the log.
//!
//! Workers take batches in increasing order from a shared counter and none past a failed one. Afterwards the
//! calling thread writes the logs through `GpuMemory` in batch order, up to and including the first failing
//! batch, whose error is the dispatch's: memory, counters and error text are the serial run's for every kernel
//! whose work groups do not read bytes another batch of the same dispatch writes (a race on the GPU too;
//! tinygrad's kernels never do it). Writes of several batches to the same bytes are allowed (the later batch
//! wins, as serially) and counted. Shared and private memory stay with each batch's work groups.
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use super::batches::Batches;
use super::launch::{Dispatched, Launch, RunStats};
use super::memory::{GpuMemory, SharedMemory};
use crate::program::Program;

/// Environment variable with the number of threads that run a dispatch's work groups (1 = serial).
pub const THREADS_ENV: &str = "MODELRT_IR3_THREADS";

/// `$MODELRT_IR3_THREADS` when it is a positive integer, else the host's available parallelism (1 if unknown).
pub fn default_threads() -> usize {
    match std::env::var(THREADS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        Some(n) if n > 0 => n,
        _ => std::thread::available_parallelism().map_or(1, usize::from),
    }
}

/// Granule of the overlay filter.
const PAGE: u64 = 4096;

/// The writes of one batch in program order, contiguous stores merged into one run.
#[derive(Default)]
struct WriteLog {
    /// `(address, offset in data, length)`.
    runs: Vec<(u64, usize, usize)>,
    data: Vec<u8>,
    /// The byte range all runs lie in; `None` while nothing is logged.
    bounds: Option<(u64, u64)>,
    /// The [`PAGE`]s some run touches: a read inside `bounds` but on no such page skips the runs.
    touched: HashSet<u64>,
    /// The page last added to `touched` (stores mostly stay on one page).
    last_page: Option<u64>,
}

impl WriteLog {
    fn write(&mut self, addr: u64, bytes: &[u8]) {
        let Some(end) = addr
            .checked_add(bytes.len() as u64)
            .filter(|_| !bytes.is_empty())
        else {
            return;
        };
        self.bounds = Some(
            self.bounds
                .map_or((addr, end), |(lo, hi)| (lo.min(addr), hi.max(end))),
        );
        let at = self.data.len();
        self.data.extend_from_slice(bytes);
        match self.runs.last_mut() {
            Some((a, o, l)) if a.wrapping_add(*l as u64) == addr && *o + *l == at => {
                *l += bytes.len();
            }
            _ => self.runs.push((addr, at, bytes.len())),
        }
        for p in addr / PAGE..=(end - 1) / PAGE {
            if self.last_page != Some(p) {
                self.touched.insert(p);
                self.last_page = Some(p);
            }
        }
    }

    /// The bytes written, as sorted disjoint ranges `[start, end)`.
    fn ranges(&self) -> Vec<(u64, u64)> {
        let mut r: Vec<(u64, u64)> = self
            .runs
            .iter()
            .map(|&(a, _, l)| (a, a.saturating_add(l as u64)))
            .collect();
        r.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(r.len());
        for (a, b) in r {
            match out.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        out
    }

    /// Lay the logged bytes over `out` (read at `addr`), later writes winning.
    fn overlay(&self, addr: u64, out: &mut [u8]) {
        let Some((lo, hi)) = self.bounds else { return };
        let end = addr.saturating_add(out.len() as u64);
        if out.is_empty() || end <= lo || addr >= hi {
            return;
        }
        if !(addr / PAGE..=(end - 1) / PAGE).any(|p| self.touched.contains(&p)) {
            return;
        }
        for &(a, o, l) in &self.runs {
            let (from, to) = (a.max(addr), a.saturating_add(l as u64).min(end));
            if from < to {
                let (dst, src, n) = (
                    (from - addr) as usize,
                    o + (from - a) as usize,
                    (to - from) as usize,
                );
                out[dst..dst + n].copy_from_slice(&self.data[src..src + n]);
            }
        }
    }
}

/// A worker's memory: reads from the shared view under the batch's log, writes into the log.
struct Worker<'v> {
    view: &'v dyn SharedMemory,
    log: WriteLog,
}

impl GpuMemory for Worker<'_> {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        self.view.read(addr, out)?;
        self.log.overlay(addr, out);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        self.view.check_write(addr, data.len())?;
        self.log.write(addr, data);
        Ok(())
    }
    fn span_stores(&self) -> bool {
        false
    }
}

/// One batch a worker finished.
struct Finished {
    log: WriteLog,
    stats: RunStats,
    result: Result<(), String>,
}

/// Run the batches on up to `threads` threads; `None` when `mem` has no shared view (the caller then runs
/// serially).
pub(in crate::exec) fn run(
    batches: &Batches,
    prog: &Program,
    launch: &Launch<'_>,
    mem: &mut dyn GpuMemory,
    threads: usize,
) -> Option<Result<Dispatched, String>> {
    let total = batches.count();
    // Slot b receives batch b; batches past a failed one stay empty.
    let slots: Mutex<Vec<Option<Finished>>> = Mutex::new((0..total).map(|_| None).collect());
    {
        let view = mem.shared_view()?;
        let view: &dyn SharedMemory = &*view;
        let next = AtomicUsize::new(0);
        let first_failure = AtomicUsize::new(usize::MAX);
        let worker = || {
            let mut group = None;
            loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                if b >= total || b > first_failure.load(Ordering::Relaxed) {
                    break;
                }
                let mut w = Worker {
                    view,
                    log: WriteLog::default(),
                };
                let mut stats = RunStats::default();
                let result = batches.run(b, &mut group, prog, launch, &mut w, &mut stats);
                if result.is_err() {
                    first_failure.fetch_min(b, Ordering::Relaxed);
                }
                // A poisoned lock means another worker panicked; the scope re-raises that panic.
                slots.lock().unwrap_or_else(PoisonError::into_inner)[b] = Some(Finished {
                    log: w.log,
                    stats,
                    result,
                });
            }
        };
        // Every worker is joined when the scope ends, and a worker's panic is raised again there.
        std::thread::scope(|scope| {
            for _ in 0..threads.min(total) {
                scope.spawn(worker);
            }
        });
    }
    let slots = slots.into_inner().unwrap_or_else(PoisonError::into_inner);
    // Every batch before the first failing one has finished; the first empty slot lies past it.
    let finished: Vec<Finished> = slots.into_iter().map_while(|f| f).collect();
    Some(apply(&finished, mem))
}

/// Write the logs in batch order up to and including the first failing batch, whose error is returned;
/// count the bytes a batch stores that an earlier batch stored too.
fn apply(finished: &[Finished], mem: &mut dyn GpuMemory) -> Result<Dispatched, String> {
    let mut out = Dispatched::default();
    let mut earlier = Written::default();
    for f in finished {
        for &(addr, s, l) in &f.log.runs {
            mem.write(addr, &f.log.data[s..s + l])?;
        }
        let mine = f.log.ranges();
        out.overlapping_bytes += mine
            .iter()
            .map(|&(a, b)| earlier.overlap(a, b))
            .sum::<u64>();
        for (a, b) in mine {
            earlier.insert(a, b);
        }
        out.stats.issues += f.stats.issues;
        out.stats.fiber_instrs += f.stats.fiber_instrs;
        f.result.clone()?;
    }
    Ok(out)
}

/// Disjoint, non-adjacent byte ranges `[start, end)`, keyed by start: what the batches applied so far wrote.
#[derive(Default)]
struct Written(BTreeMap<u64, u64>);

impl Written {
    /// How many bytes of `[a, b)` the set holds.
    fn overlap(&self, a: u64, b: u64) -> u64 {
        let before = self
            .0
            .range(..=a)
            .next_back()
            .map_or(0, |(_, &e)| e.min(b).saturating_sub(a));
        let inside: u64 = self
            .0
            .range(a.saturating_add(1)..b.max(a.saturating_add(1)))
            .map(|(&s, &e)| e.min(b) - s)
            .sum();
        before + inside
    }

    /// Add `[a, b)`, merging every range it touches.
    fn insert(&mut self, mut a: u64, mut b: u64) {
        if let Some((&s, &e)) = self.0.range(..=a).next_back() {
            if e >= a {
                (a, b) = (s, b.max(e));
            }
        }
        let touched: Vec<u64> = self.0.range(a..=b).map(|(&s, _)| s).collect();
        for s in touched {
            if let Some(e) = self.0.remove(&s) {
                b = b.max(e);
            }
        }
        self.0.insert(a, b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_reads_its_own_later_writes_over_earlier_ones() {
        let mut log = WriteLog::default();
        log.write(100, &[1, 2, 3, 4]);
        log.write(104, &[5, 6]);
        log.write(102, &[9]);
        assert_eq!(log.runs.len(), 2, "the contiguous stores merge");
        let mut out = [0u8; 10];
        log.overlay(98, &mut out);
        assert_eq!(out, [0, 0, 1, 2, 9, 4, 5, 6, 0, 0]);
        let mut far = [7u8; 4];
        log.overlay(100 + PAGE * 3, &mut far);
        assert_eq!(far, [7; 4]);
    }

    #[test]
    fn overlap_counts_bytes_written_before_once() {
        let mut w = Written::default();
        w.insert(10, 20);
        w.insert(30, 40);
        assert_eq!(w.overlap(0, 10), 0);
        assert_eq!(w.overlap(15, 35), 5 + 5);
        assert_eq!(w.overlap(0, 100), 20);
        w.insert(20, 30);
        assert_eq!(w.0.len(), 1, "adjacent and touching ranges merge");
        assert_eq!(w.overlap(5, 45), 30);
        let mut log = WriteLog::default();
        log.write(8, &[0; 4]);
        log.write(0, &[0; 4]);
        log.write(2, &[0; 4]);
        assert_eq!(log.ranges(), vec![(0, 6), (8, 12)]);
    }
}
