//! Workgroups of one dispatch on several host threads (std only; docs/hw/rdna3-isa.md §11).
//!
//! The dispatch's [`GpuMemory`] stays with the calling thread; it is never shared. Worker threads
//! each run whole workgroups on their own [`Group`] and see memory through a `Snapshot`:
//! - **reads** come from 4 KiB pages the calling thread reads through `GpuMemory` (so through the
//!   GPU model's page tables) on request — the page asked for and up to 15 after it, read ahead
//!   without leaving fault records ([`GpuMemory::read_ahead`]) — and hands out as shared,
//!   immutable copies. A page that cannot be read whole is not cached: the calling thread then
//!   performs the worker's exact access and returns its bytes or its fault, as a serial run
//!   would have met it;
//! - **writes** go to the workgroup's own [`WriteLog`] (contiguous runs, never crossing a page),
//!   which its later reads see. Nothing reaches memory while workers run.
//!
//! When every workgroup up to the first failing one has finished, the calling thread applies the
//! logs through `GpuMemory` in workgroup order (x fastest): the final memory is the serial one
//! byte for byte for any kernel whose workgroups do not read bytes another workgroup writes (a
//! race on a real GPU too), even when their writes overlap (the later workgroup wins, as
//! serially). Overlapping bytes are counted ([`Applied::overlapping_bytes`]). A write to an
//! unwritable page faults when its run is applied, with the run's first address — the first
//! lane that would have faulted serially. The error reported is the one of the lowest failing
//! workgroup (a write fault first if one of its earlier writes faults), as serially; workers stop
//! taking workgroups past it.
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, RwLock};

use super::group::{Abi, Group};
use super::program::Program;
use crate::shader::{DispatchRequest, ExecError, GpuMemory, MemFault};

/// Environment variable overriding the number of worker threads (1 = serial).
pub const THREADS_ENV: &str = "MODELRT_RDNA3_THREADS";

/// Bytes per snapshot page (the GPU's small page).
const PAGE: u64 = 4096;
/// Slots of a worker's direct-mapped page table.
const RECENT: usize = 64;
/// Pages fetched per request: the one asked for and those after it (shaders mostly stream).
const READ_AHEAD: u64 = 16;

type Page = [u8; PAGE as usize];

/// Pages the calling thread has read so far in this dispatch, for every worker to look up.
type Shared = RwLock<HashMap<u64, Arc<Page>>>;

/// Threads for parallel dispatch: `$MODELRT_RDNA3_THREADS` when it is a positive integer, else
/// the host's available parallelism (1 if unknown).
pub fn default_threads() -> usize {
    std::env::var(THREADS_ENV)
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A worker's read request: the page at `page`, or else the exact access `[va, va + len)`.
struct Request {
    page: u64,
    va: u64,
    len: usize,
    reply: mpsc::Sender<Reply>,
}

enum Reply {
    Page(Arc<Page>),
    Exact(Result<Vec<u8>, MemFault>),
}

/// The writes of one workgroup, in program order, merged into runs that never cross a page.
#[derive(Default)]
pub struct WriteLog {
    /// `(va, start in bytes, len)`.
    runs: Vec<(u64, usize, usize)>,
    bytes: Vec<u8>,
    /// Pages written (page numbers), and the byte range `[lo, hi)` all writes lie in: reads outside
    /// it skip the overlay without a lookup.
    pages: HashSet<u64>,
    lo: u64,
    hi: u64,
}

impl WriteLog {
    fn write(&mut self, va: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let a = va.wrapping_add(done as u64);
            let n = ((PAGE - a % PAGE) as usize).min(data.len() - done);
            if self.pages.is_empty() {
                (self.lo, self.hi) = (a, a);
            }
            (self.lo, self.hi) = (self.lo.min(a), self.hi.max(a.saturating_add(n as u64)));
            if self.runs.last().is_none_or(|r| r.0 / PAGE != a / PAGE) {
                self.pages.insert(a / PAGE);
            }
            let start = self.bytes.len();
            self.bytes.extend_from_slice(&data[done..done + n]);
            match self.runs.last_mut() {
                Some((v, s, l)) if v.wrapping_add(*l as u64) == a && !a.is_multiple_of(PAGE) => {
                    debug_assert_eq!(*s + *l, start);
                    *l += n;
                }
                _ => self.runs.push((a, start, n)),
            }
            done += n;
        }
    }

    /// Lay this workgroup's own writes over `out` (read at `va`), later writes winning.
    fn overlay(&self, va: u64, out: &mut [u8]) {
        let end = va.saturating_add(out.len() as u64);
        if self.pages.is_empty() || end <= self.lo || va >= self.hi {
            return;
        }
        let (lo, hi) = (u128::from(va), u128::from(va) + out.len() as u128);
        let touched = (lo / u128::from(PAGE)..=(hi - 1) / u128::from(PAGE))
            .any(|p| self.pages.contains(&(p as u64)));
        if !touched {
            return;
        }
        for &(v, s, l) in &self.runs {
            let (a, b) = (u128::from(v), u128::from(v) + l as u128);
            let (from, to) = (a.max(lo), b.min(hi));
            if from < to {
                let (o, i) = ((from - lo) as usize, (from - a) as usize);
                let n = (to - from) as usize;
                out[o..o + n].copy_from_slice(&self.bytes[s + i..s + i + n]);
            }
        }
    }

    fn clear(&mut self) {
        self.runs.clear();
        self.bytes.clear();
        self.pages.clear();
    }
}

/// A worker's view of memory: shared page copies for reads, its workgroup's log for writes.
struct Snapshot<'a> {
    shared: &'a Shared,
    pages: HashMap<u64, Arc<Page>>,
    /// Recently used pages, direct-mapped by page number (a lookup without hashing).
    recent: Vec<Option<(u64, Arc<Page>)>>,
    requests: mpsc::Sender<Request>,
    reply_tx: mpsc::Sender<Reply>,
    replies: mpsc::Receiver<Reply>,
    log: WriteLog,
}

impl<'a> Snapshot<'a> {
    fn new(shared: &'a Shared, requests: mpsc::Sender<Request>) -> Snapshot<'a> {
        let (reply_tx, replies) = mpsc::channel();
        Snapshot {
            shared,
            pages: HashMap::new(),
            recent: vec![None; RECENT],
            requests,
            reply_tx,
            replies,
            log: WriteLog::default(),
        }
    }

    /// Put the page at `page` in its [`RECENT`] slot, or return the exact bytes
    /// (or fault) of `[va, va + len)` when that page cannot be read whole.
    fn load(&mut self, page: u64, va: u64, len: usize) -> Result<(), Reply> {
        let slot = (page / PAGE) as usize % RECENT;
        if self.recent[slot].as_ref().is_some_and(|(p, _)| *p == page) {
            return Ok(());
        }
        if let Some(data) = self.pages.get(&page) {
            self.recent[slot] = Some((page, data.clone()));
            return Ok(());
        }
        // A page another worker had read already (a poisoned lock only means a worker panicked,
        // which the dispatch re-raises anyway).
        let known = match self.shared.read() {
            Ok(map) => map.get(&page).cloned(),
            Err(poisoned) => poisoned.into_inner().get(&page).cloned(),
        };
        if let Some(data) = known {
            self.pages.insert(page, data.clone());
            self.recent[slot] = Some((page, data));
            return Ok(());
        }
        let req = Request {
            page,
            va,
            len,
            reply: self.reply_tx.clone(),
        };
        // The calling thread serves requests until every worker is done, so neither side of the
        // channel can be gone while a worker runs; a broken channel is reported as a fault.
        let gone = || Reply::Exact(Err(MemFault { va, write: false }));
        if self.requests.send(req).is_err() {
            return Err(gone());
        }
        match self.replies.recv() {
            Ok(Reply::Page(data)) => {
                self.pages.insert(page, data.clone());
                self.recent[slot] = Some((page, data));
                Ok(())
            }
            Ok(exact) => Err(exact),
            Err(_) => Err(gone()),
        }
    }
}

impl GpuMemory for Snapshot<'_> {
    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), MemFault> {
        let mut done = 0;
        while done < out.len() {
            let a = va.wrapping_add(done as u64);
            let off = (a % PAGE) as usize;
            let n = (PAGE as usize - off).min(out.len() - done);
            match self.load(a - off as u64, va, out.len()) {
                Ok(()) => match &self.recent[((a - off as u64) / PAGE) as usize % RECENT] {
                    Some((_, p)) => out[done..done + n].copy_from_slice(&p[off..off + n]),
                    None => return Err(MemFault { va, write: false }),
                },
                Err(Reply::Exact(Ok(bytes))) if bytes.len() == out.len() => {
                    out.copy_from_slice(&bytes);
                    break;
                }
                Err(Reply::Exact(Err(fault))) => return Err(fault),
                Err(_) => return Err(MemFault { va, write: false }),
            }
            done += n;
        }
        self.log.overlay(va, out);
        Ok(())
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        self.log.write(va, data);
        Ok(())
    }
}

/// What a parallel dispatch did besides its memory effects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Bytes written by more than one workgroup (the later one in workgroup order wins).
    pub overlapping_bytes: u64,
}

/// One finished workgroup: its writes and how it ended.
struct Finished {
    index: u64,
    log: WriteLog,
    result: Result<(), ExecError>,
}

/// Run every workgroup of `req` on `groups.len()` threads (see the module doc); the counters of
/// each [`Group`] accumulate as in a serial run.
pub fn dispatch(
    groups: &mut [Group],
    prog: &Program,
    req: &DispatchRequest,
    abi: &Abi,
    mem: &mut dyn GpuMemory,
) -> Result<Applied, ExecError> {
    let [gx, gy, gz] = req.grid.map(u64::from);
    // The caller runs grids whose size overflows serially.
    let total = gx.saturating_mul(gy).saturating_mul(gz);
    let next = AtomicU64::new(0);
    let first_failure = AtomicU64::new(u64::MAX);
    let (requests, incoming) = mpsc::channel::<Request>();
    let shared = Shared::default();
    let mut finished: Vec<Finished> = std::thread::scope(|scope| {
        let workers: Vec<_> = groups
            .iter_mut()
            .map(|g| {
                let requests = requests.clone();
                let (next, first_failure, shared) = (&next, &first_failure, &shared);
                scope.spawn(move || {
                    let mut snap = Snapshot::new(shared, requests);
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= total || index > first_failure.load(Ordering::Relaxed) {
                            return done;
                        }
                        let id = [index % gx, index / gx % gy, index / (gx * gy)].map(|n| n as u32);
                        snap.log.clear();
                        let result = g.run(prog, req, abi, id, &mut snap);
                        if result.is_err() {
                            first_failure.fetch_min(index, Ordering::Relaxed);
                        }
                        done.push(Finished {
                            index,
                            log: std::mem::take(&mut snap.log),
                            result,
                        });
                    }
                })
            })
            .collect();
        drop(requests);
        serve(&incoming, &shared, mem);
        workers
            .into_iter()
            .flat_map(|w| match w.join() {
                Ok(done) => done,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    finished.sort_unstable_by_key(|f| f.index);
    apply(&finished, req.code_va, mem)
}

/// Answer workers' page requests until every worker has dropped its sender.
fn serve(incoming: &mpsc::Receiver<Request>, shared: &Shared, mem: &mut dyn GpuMemory) {
    let mut cache: HashMap<u64, Arc<Page>> = HashMap::new();
    while let Ok(r) = incoming.recv() {
        let reply = match cache.get(&r.page) {
            Some(p) => Reply::Page(p.clone()),
            None => {
                // The page asked for and up to READ_AHEAD - 1 after it, until one is unreadable
                // (read ahead leaves no fault record: no shader asked for those bytes).
                let mut fetched = Vec::new();
                for k in 0..READ_AHEAD {
                    let va = r.page.wrapping_add(k * PAGE);
                    if k > 0 && cache.contains_key(&va) {
                        continue;
                    }
                    let mut page = Box::new([0u8; PAGE as usize]);
                    if !mem.read_ahead(va, &mut page[..]) {
                        break;
                    }
                    let page: Arc<Page> = Arc::from(page);
                    cache.insert(va, page.clone());
                    fetched.push((va, page));
                }
                if !fetched.is_empty() {
                    let mut map = match shared.write() {
                        Ok(map) => map,
                        Err(poisoned) => poisoned.into_inner(),
                    };
                    map.extend(fetched.iter().cloned());
                }
                match fetched.first() {
                    Some((va, page)) if *va == r.page => Reply::Page(page.clone()),
                    _ => {
                        // Unreadable as a whole page: the worker's exact access, faults recorded.
                        let mut exact = vec![0u8; r.len];
                        Reply::Exact(mem.read(r.va, &mut exact).map(|()| exact))
                    }
                }
            }
        };
        // A worker that stopped waiting has nothing left to do with the answer.
        let _ = r.reply.send(reply);
    }
}

/// Apply the logs in workgroup order up to and including the first failing workgroup.
fn apply(
    finished: &[Finished],
    code_va: u64,
    mem: &mut dyn GpuMemory,
) -> Result<Applied, ExecError> {
    let mut applied = Applied::default();
    let mut earlier: HashMap<u64, Box<[u64; 64]>> = HashMap::new();
    let mut mine: HashMap<u64, Box<[u64; 64]>> = HashMap::new();
    for f in finished {
        for &(va, s, l) in &f.log.runs {
            mem.write(va, &f.log.bytes[s..s + l])
                .map_err(|fault| ExecError::PageFault { code_va, fault })?;
            // A run lies inside one page (WriteLog::write).
            let (page, off) = (va / PAGE, (va % PAGE) as usize);
            let m = mine.entry(page).or_insert_with(|| Box::new([0; 64]));
            let e = earlier.get(&page);
            for (word, mask) in bit_words(off, l) {
                let new = mask & !m[word];
                m[word] |= mask;
                if let Some(e) = e {
                    applied.overlapping_bytes += u64::from((new & e[word]).count_ones());
                }
            }
        }
        for (page, m) in mine.drain() {
            let e = earlier.entry(page).or_insert_with(|| Box::new([0; 64]));
            for (x, y) in e.iter_mut().zip(m.iter()) {
                *x |= y;
            }
        }
        f.result.clone()?;
    }
    Ok(applied)
}

/// The 64-bit words and masks covering bits `[off, off + len)` of a page's byte bitmap.
fn bit_words(off: usize, len: usize) -> impl Iterator<Item = (usize, u64)> {
    let end = off + len;
    (off / 64..end.div_ceil(64)).map(move |w| {
        let (lo, hi) = (off.max(w * 64) - w * 64, end.min(w * 64 + 64) - w * 64);
        let mask = if hi - lo == 64 {
            u64::MAX
        } else {
            ((1u64 << (hi - lo)) - 1) << lo
        };
        (w, mask)
    })
}
