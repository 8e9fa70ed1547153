//! A fixed pool of worker threads that runs the `core_id` invocations of one kernel launch in
//! parallel, without allocating per launch.
//!
//! A launch is published under a mutex with a new generation number; the calling thread and every
//! worker then claim core ids from one atomic word that packs `(generation << 32) | next_core_id`,
//! so a worker that wakes late can never claim an id of a later launch with the arguments of an
//! earlier one. The caller returns only when every claimed id has finished.
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::call::{self, EntryPoint, MAX_ARGS};
use super::error::CpuError;

/// One kernel launch: `threads` calls of `entry`, with `args[core_slot]` set to the core id.
#[derive(Clone, Copy)]
pub struct Launch {
    pub(crate) entry: EntryPoint,
    /// Pointer to the argument slots (owned by the recorded queue, alive for the whole launch).
    pub(crate) args: *const u64,
    pub(crate) nargs: usize,
    pub(crate) core_slot: usize,
    pub(crate) threads: u32,
}

// SAFETY: a `Launch` is only shared with pool workers while `Pool::run` blocks the owner of the
// argument array and the code, so the pointers stay valid for every use.
unsafe impl Send for Launch {}

impl Launch {
    /// Run invocation `core_id`.
    ///
    /// # Safety
    /// `args`/`nargs` must describe a live argument array matching the kernel (see [`call::call`]).
    pub unsafe fn invoke(&self, core_id: u32) {
        let mut slots = [0u64; MAX_ARGS];
        let n = self.nargs.min(MAX_ARGS);
        // SAFETY: the caller guarantees `args` points at `nargs` initialised slots.
        let src = unsafe { std::slice::from_raw_parts(self.args, n) };
        slots[..n].copy_from_slice(src);
        if let Some(slot) = slots[..n].get_mut(self.core_slot) {
            *slot = u64::from(core_id);
        }
        // SAFETY: forwarded contract of `call::call`; `slots[..n]` are this kernel's arguments.
        unsafe { call::call(self.entry, &slots[..n]) };
    }
}

struct State {
    generation: u32,
    launch: Option<Launch>,
    shutdown: bool,
    /// Workers that have entered their loop (see [`Pool::new`]).
    started: usize,
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
    done_cv: Condvar,
    /// `(generation << 32) | next core id to claim`.
    claim: AtomicU64,
    /// Invocations of the current generation that have finished.
    done: AtomicU32,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a thread panicked while holding it; the state is still
        // consistent (it is only ever assigned whole), so keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Claim and run invocations of `generation` until none are left.
    fn work_on(&self, generation: u32, launch: &Launch) {
        loop {
            let current = self.claim.load(Ordering::Acquire);
            if (current >> 32) as u32 != generation || (current as u32) >= launch.threads {
                return;
            }
            if self
                .claim
                .compare_exchange_weak(current, current + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            // SAFETY: the launch of `generation` is still running (its submitter waits for
            // `done == threads`, and this claimed id is not done yet), so its pointers are live.
            unsafe { launch.invoke(current as u32) };
            if self.done.fetch_add(1, Ordering::AcqRel) + 1 == launch.threads {
                // Take the lock so the notification cannot slip between the submitter's check of
                // `done` and its wait.
                drop(self.lock());
                self.done_cv.notify_all();
            }
        }
    }
}

/// The worker pool. Dropping it stops and joins the workers.
pub struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl Pool {
    /// A pool whose launches run on `parallelism` threads: the caller plus `parallelism - 1` workers.
    pub fn new(parallelism: usize) -> Result<Pool, CpuError> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                generation: 0,
                launch: None,
                shutdown: false,
                started: 0,
            }),
            work: Condvar::new(),
            done_cv: Condvar::new(),
            claim: AtomicU64::new(0),
            done: AtomicU32::new(0),
        });
        let mut pool = Pool {
            shared,
            workers: Vec::new(),
        };
        for i in 1..parallelism.max(1) {
            let shared = Arc::clone(&pool.shared);
            let handle = std::thread::Builder::new()
                .name(format!("modelrt-cpu-{i}"))
                .spawn(move || worker(&shared))
                .map_err(|e| CpuError::Spawn(e.kind()))?;
            pool.workers.push(handle);
        }
        // Wait until every worker runs its loop. A thread's start-up inside std allocates (its
        // handle, thread-local registration); doing that before `new` returns keeps it out of
        // the first launches, whose zero-allocation contract a late-starting worker would
        // otherwise break on a busy machine.
        let mut state = pool.shared.lock();
        while state.started < pool.workers.len() {
            state = pool
                .shared
                .done_cv
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        drop(state);
        Ok(pool)
    }

    /// Threads a launch can use (workers plus the caller).
    pub fn parallelism(&self) -> usize {
        self.workers.len() + 1
    }

    /// Run all `launch.threads` invocations and return when they are finished. Serial on the
    /// calling thread when there is one invocation or no worker. Does not allocate.
    ///
    /// # Safety
    /// `launch` must satisfy [`Launch::invoke`]'s contract for the duration of the call.
    pub unsafe fn run(&self, launch: &Launch) {
        if launch.threads <= 1 || self.workers.is_empty() {
            for core_id in 0..launch.threads {
                // SAFETY: forwarded contract.
                unsafe { launch.invoke(core_id) };
            }
            return;
        }
        let generation = {
            let mut state = self.shared.lock();
            state.generation = state.generation.wrapping_add(1);
            state.launch = Some(*launch);
            self.shared.done.store(0, Ordering::Release);
            self.shared
                .claim
                .store(u64::from(state.generation) << 32, Ordering::Release);
            state.generation
        };
        self.shared.work.notify_all();
        self.shared.work_on(generation, launch);
        // No timeout: a started kernel cannot be cancelled, and returning while workers still run
        // it would free its arguments under them. The wait is bounded by the kernels' own runtime.
        let mut state = self.shared.lock();
        while self.shared.done.load(Ordering::Acquire) < launch.threads {
            state = self
                .shared
                .done_cv
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        state.launch = None;
    }
}

fn worker(shared: &Shared) {
    let mut seen = 0u32;
    shared.lock().started += 1;
    shared.done_cv.notify_all();
    loop {
        let (generation, launch) = {
            let mut state = shared.lock();
            loop {
                if state.shutdown {
                    return;
                }
                match state.launch {
                    Some(launch) if state.generation != seen => break (state.generation, launch),
                    _ => state = shared.work.wait(state).unwrap_or_else(|e| e.into_inner()),
                }
            }
        };
        seen = generation;
        shared.work_on(generation, &launch);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.work.notify_all();
        for handle in self.workers.drain(..) {
            // A worker can only have panicked inside a kernel call; nothing is left to clean up.
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// A stand-in kernel `(counters, generation_tag, core_id)`: bumps `counters[core_id]` and
    /// checks the tag it was launched with.
    extern "C" fn record(counters: u64, tag: u64, core_id: u64) {
        // SAFETY: the test passes a pointer to a live `[AtomicU32; 17]`; index 16 counts tag errors.
        let counters = unsafe { &*(counters as *const [AtomicU32; 17]) };
        counters[core_id as usize].fetch_add(1, Ordering::Relaxed);
        if tag != 0xabc {
            counters[16].fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn every_core_id_runs_exactly_once_per_launch() {
        for parallelism in [1, 2, 4] {
            let pool = Pool::new(parallelism).unwrap();
            assert_eq!(pool.parallelism(), parallelism);
            for launch_no in 0..200u32 {
                let counters: [AtomicU32; 17] = std::array::from_fn(|_| AtomicU32::new(0));
                let threads = 1 + launch_no % 16;
                let args = [&counters as *const _ as u64, 0xabc, 0];
                let launch = Launch {
                    entry: EntryPoint(record as *const u8),
                    args: args.as_ptr(),
                    nargs: 3,
                    core_slot: 2,
                    threads,
                };
                // SAFETY: `record` takes three 64-bit arguments; `args` and `counters` outlive
                // the call.
                unsafe { pool.run(&launch) };
                for (core, count) in counters[..16].iter().enumerate() {
                    let expected = u32::from((core as u32) < threads);
                    assert_eq!(
                        count.load(Ordering::Relaxed),
                        expected,
                        "core {core} of {threads}"
                    );
                }
                assert_eq!(counters[16].load(Ordering::Relaxed), 0);
            }
        }
    }
}
