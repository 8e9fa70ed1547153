//! [`CpuDevice`]: the host CPU as a modelrt [`Device`], running tinygrad CLANG kernels, and
//! [`CpuQueue`], its recorded command list.
use std::sync::Arc;
use std::time::Instant;

use modelrt_hal::device::{Arg, Device, KernelId, KernelImage, Queue, SubmitTiming};
use modelrt_hal::target::{CpuArch, KernelMeta, ParamKind, Target};

use super::call::{EntryPoint, MAX_ARGS};
use super::elf::KernelObject;
use super::error::CpuError;
use super::exec_mem::{CodeMapping, Mapping};
use super::features;
use super::pool::{Launch, Pool};
use super::weights::BoundWeights;

/// The arena: one zeroed, page-aligned host mapping, and the weight ranges read in place from the
/// bundle mapping instead (see [`super::weights`]).
pub(super) struct Arena {
    map: Option<Mapping>,
    size: u64,
    pub(super) weights: BoundWeights,
}

impl Arena {
    pub(super) fn check(&self, offset: u64, len: u64) -> Result<(), CpuError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(CpuError::OutOfBounds {
                offset,
                len,
                arena: self.size,
            }),
        }
    }

    pub(super) fn base(&self) -> *mut u8 {
        self.map
            .as_ref()
            .map_or(std::ptr::NonNull::dangling().as_ptr(), Mapping::as_ptr)
    }

    /// Host address of arena bytes `offset..offset + len`: inside a weight read in place, the
    /// mapping's; else the arena's. Errors outside the arena or across a bound weight's edge.
    pub(super) fn resolve(&self, offset: u64, len: u64) -> Result<u64, CpuError> {
        self.check(offset, len)?;
        Ok(match self.weights.find(offset, len)? {
            Some(addr) => addr,
            None => self.base() as u64 + offset,
        })
    }
}

/// A linked kernel kept alive by the device and every queue that records it.
pub(super) struct LoadedKernel {
    name: String,
    _code: CodeMapping,
    entry: EntryPoint,
    params: Vec<ParamKind>,
    core_slot: Option<usize>,
    threads: u32,
}

/// A buffer argument of a recorded launch: argument slot `slot` points at arena bytes
/// `offset..offset + size`, recorded as host address `addr` (kept so a zero-copy binding can
/// re-point and restore it).
pub(super) struct Span {
    pub slot: usize,
    pub offset: u64,
    pub size: u64,
    pub addr: u64,
}

/// One resolved command of a recorded queue.
pub(super) enum Command {
    Wait(u64),
    Signal(u64),
    /// Index into the queue's timestamp slots.
    Timestamp(usize),
    Exec {
        kernel: Arc<LoadedKernel>,
        args: Box<[u64]>,
        spans: Box<[Span]>,
        core_slot: usize,
        threads: u32,
    },
    Copy {
        dst: usize,
        src: usize,
        len: usize,
    },
}

/// A recorded CPU command list: function pointers with fully resolved argument arrays.
pub struct CpuQueue {
    pub(super) arena: Arc<Arena>,
    kernels: Vec<Arc<LoadedKernel>>,
    pub(super) commands: Vec<Command>,
    stamps: Vec<Option<Instant>>,
    timeline: u64,
}

impl CpuQueue {
    /// Current value of the queue's timeline (set by `signal` commands when submitted).
    pub fn timeline(&self) -> u64 {
        self.timeline
    }
}

impl Queue for CpuQueue {
    type Error = CpuError;

    fn wait(&mut self, value: u64) -> Result<(), CpuError> {
        self.commands.push(Command::Wait(value));
        Ok(())
    }

    fn timestamp(&mut self) -> Result<(), CpuError> {
        self.commands.push(Command::Timestamp(self.stamps.len()));
        self.stamps.push(None);
        Ok(())
    }

    fn exec(
        &mut self,
        kernel: KernelId,
        args: &[Arg],
        _global: [u32; 3],
        _local: [u32; 3],
    ) -> Result<(), CpuError> {
        // The CPU launch shape is fully described by the kernel's `CpuKernelMeta.threads`
        // (tinygrad's `global_size[0]`); `global`/`local` carry nothing else on this target.
        let loaded = self
            .kernels
            .get(kernel.0 as usize)
            .ok_or(CpuError::UnknownKernel(kernel.0))?
            .clone();
        let bad = |reason| CpuError::BadArgs {
            kernel: loaded.name.clone(),
            reason,
        };
        if args.len() != loaded.params.len() {
            return Err(bad(
                "argument count differs from the kernel's parameter list",
            ));
        }
        let mut slots = [0u64; MAX_ARGS];
        let mut spans = Vec::new();
        for (i, (arg, kind)) in args.iter().zip(&loaded.params).enumerate() {
            slots[i] = match (arg, kind) {
                (Arg::Buffer { offset, size }, ParamKind::Buffer | ParamKind::Image { .. }) => {
                    let addr = self.arena.resolve(*offset, *size)?;
                    spans.push(Span {
                        slot: i,
                        offset: *offset,
                        size: *size,
                        addr,
                    });
                    addr
                }
                // Sign-extended like a C `int` promoted to a 64-bit slot; kernels read the low 32 bits.
                (Arg::Int(v), ParamKind::Var) => i64::from(*v) as u64,
                (Arg::Int(_), ParamKind::CoreId) => 0,
                (Arg::Buffer { .. }, _) => {
                    return Err(bad("a buffer argument is passed for an int parameter"))
                }
                (Arg::Int(_), _) => {
                    return Err(bad("an int argument is passed for a buffer parameter"))
                }
            };
        }
        let core_slot = loaded.core_slot.unwrap_or(usize::MAX);
        let threads = loaded.threads;
        let args = slots[..args.len()].into();
        self.commands.push(Command::Exec {
            kernel: loaded,
            args,
            spans: spans.into(),
            core_slot,
            threads,
        });
        Ok(())
    }

    fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), CpuError> {
        self.arena.check(dst, len)?;
        self.arena.check(src, len)?;
        if self.arena.weights.touches(dst, len) {
            return Err(CpuError::WeightWrite { offset: dst, len });
        }
        // A source inside a weight read in place is read from the mapping at submit; one that
        // straddles such a weight's edge is refused here.
        self.arena.weights.find(src, len)?;
        // The checks bound all three by the arena size, which is a mapped `usize` length.
        self.commands.push(Command::Copy {
            dst: dst as usize,
            src: src as usize,
            len: len as usize,
        });
        Ok(())
    }

    fn signal(&mut self, value: u64) -> Result<(), CpuError> {
        self.commands.push(Command::Signal(value));
        Ok(())
    }
}

/// The host CPU device.
pub struct CpuDevice {
    pool: Pool,
    pub(super) arena: Arc<Arena>,
    kernels: Vec<Arc<LoadedKernel>>,
    clock_origin: Instant,
    /// Weights to read in place, moved into the arena when it is allocated.
    pending_weights: BoundWeights,
}

impl CpuDevice {
    /// A device whose threaded kernels run on `threads` threads (the submitting thread plus
    /// `threads - 1` pool workers started now; 0 is treated as 1).
    pub fn new(threads: usize) -> Result<CpuDevice, CpuError> {
        Ok(CpuDevice {
            pool: Pool::new(threads.max(1))?,
            arena: Arc::new(Arena {
                map: None,
                size: 0,
                weights: BoundWeights::default(),
            }),
            kernels: Vec::new(),
            clock_origin: Instant::now(),
            pending_weights: BoundWeights::default(),
        })
    }

    /// A device using every CPU the OS grants this process.
    pub fn with_host_threads() -> Result<CpuDevice, CpuError> {
        CpuDevice::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// Threads a launch can use.
    pub fn threads(&self) -> usize {
        self.pool.parallelism()
    }

    fn arena_ptr(&self, offset: u64, len: usize) -> Result<*mut u8, CpuError> {
        if self.arena.map.is_none() {
            return Err(CpuError::NoArena);
        }
        self.arena.check(offset, len as u64)?;
        // In bounds of the mapping by the check above.
        Ok(self.arena.base().wrapping_add(offset as usize))
    }

    pub(super) fn arena_allocated(&self) -> bool {
        self.arena.map.is_some()
    }

    pub(super) fn set_pending_weights(&mut self, w: BoundWeights) {
        self.pending_weights = w;
    }

    /// Bytes of the arena mapping resident in memory right now (`mincore`; 0 before the arena
    /// is allocated, `None` if the OS query fails). Weights read in place never touch theirs.
    pub fn arena_resident_bytes(&self) -> Option<u64> {
        self.arena
            .map
            .as_ref()
            .map_or(Some(0), Mapping::resident_bytes)
    }

    /// Size of the arena mapping in bytes (the bundle's arena size).
    pub fn arena_size(&self) -> u64 {
        self.arena.size
    }

    fn load(&self, kernel: &KernelImage<'_>) -> Result<LoadedKernel, CpuError> {
        let bad_meta = |reason| CpuError::BadMeta {
            kernel: kernel.name.to_string(),
            reason,
        };
        let KernelMeta::Cpu(meta) = kernel.meta else {
            return Err(bad_meta("kernel metadata is not CPU metadata"));
        };
        if kernel.params.len() > MAX_ARGS {
            return Err(bad_meta("more than 63 parameters"));
        }
        let params: Vec<ParamKind> = kernel.params.iter().map(|p| p.kind).collect();
        let mut core_slots = params
            .iter()
            .enumerate()
            .filter(|(_, k)| matches!(k, ParamKind::CoreId))
            .map(|(i, _)| i);
        let core_slot = core_slots.next();
        if core_slots.next().is_some() {
            return Err(bad_meta("more than one core_id parameter"));
        }
        match (meta.threads, core_slot) {
            (0, _) => return Err(bad_meta("threads is 0")),
            (1, _) | (_, Some(_)) => {}
            (_, None) => {
                return Err(bad_meta(
                    "threads > 1 but the kernel has no core_id parameter",
                ))
            }
        }
        let host = CpuArch::host().ok_or(CpuError::UnsupportedHost(std::env::consts::ARCH))?;
        let object = KernelObject::parse(kernel.binary, Some(host), kernel.entry)?;
        let size = usize::try_from(object.image_size())
            .map_err(|_| CpuError::ImageTooLarge(object.image_size()))?;
        let mut map = Mapping::new_rw(size)?;
        let base = map.as_ptr() as u64;
        object.link(map.as_mut_slice(), base)?;
        let code = map.into_code(object.readonly_size() as usize)?;
        // The entry offset was validated to lie inside an executable section of the image.
        let entry = EntryPoint(code.base().wrapping_add(object.entry_offset() as usize));
        Ok(LoadedKernel {
            name: kernel.name.to_string(),
            _code: code,
            entry,
            params,
            core_slot,
            threads: meta.threads,
        })
    }
}

impl Device for CpuDevice {
    type Error = CpuError;
    type Queue = CpuQueue;

    fn check_target(&self, target: &Target<'_>) -> Result<(), CpuError> {
        features::check_host_target(target)
    }

    fn alloc_arena(&mut self, bytes: u64) -> Result<(), CpuError> {
        let len = usize::try_from(bytes).map_err(|_| CpuError::ArenaTooLarge(bytes))?;
        let map = Mapping::new_rw(len).map_err(|e| match e {
            CpuError::Os { .. } => CpuError::ArenaTooLarge(bytes),
            other => other,
        })?;
        if !self.pending_weights.fit(bytes) {
            return Err(CpuError::WeightsForAnotherBundle);
        }
        self.arena = Arc::new(Arena {
            map: Some(map),
            size: bytes,
            weights: self.pending_weights.clone(),
        });
        Ok(())
    }

    fn upload(&mut self, offset: u64, data: &[u8]) -> Result<(), CpuError> {
        let dst = self.arena_ptr(offset, data.len())?;
        let len = data.len() as u64;
        if self.arena.weights.touches(offset, len) {
            // The executor uploads a weight's initial bytes, which for a weight read in place are
            // the mapped bytes themselves: nothing to copy. Anything else would change a weight.
            return match self.arena.weights.find(offset, len) {
                Ok(Some(addr)) if addr == data.as_ptr() as u64 => Ok(()),
                _ => Err(CpuError::WeightWrite { offset, len }),
            };
        }
        // SAFETY: `dst..dst+len` is inside the arena mapping (checked), `data` is a separate host
        // buffer, and no kernel runs concurrently (`&mut self`).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }

    fn download(&mut self, offset: u64, out: &mut [u8]) -> Result<(), CpuError> {
        self.arena_ptr(offset, out.len())?;
        let src = self.arena.resolve(offset, out.len() as u64)? as *const u8;
        // SAFETY: as in `upload`, with the roles swapped; a weight read in place is read from the
        // bundle mapping the arena keeps alive (`resolve` checked the range lies inside it).
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    fn load_kernel(&mut self, kernel: &KernelImage<'_>) -> Result<KernelId, CpuError> {
        let id =
            u32::try_from(self.kernels.len()).map_err(|_| CpuError::UnknownKernel(u32::MAX))?;
        let loaded = self.load(kernel)?;
        self.kernels.push(Arc::new(loaded));
        Ok(KernelId(id))
    }

    fn create_queue(&mut self) -> Result<CpuQueue, CpuError> {
        if self.arena.map.is_none() {
            return Err(CpuError::NoArena);
        }
        Ok(CpuQueue {
            arena: Arc::clone(&self.arena),
            kernels: self.kernels.clone(),
            commands: Vec::new(),
            stamps: Vec::new(),
            timeline: 0,
        })
    }

    fn submit(&mut self, queue: &mut CpuQueue) -> Result<SubmitTiming, CpuError> {
        // SAFETY: no redirects, so no host memory besides the arena is read.
        unsafe { self.submit_redirected(queue, &[]) }
    }

    fn now_ns(&self) -> u64 {
        self.clock_origin.elapsed().as_nanos() as u64
    }
}

/// An arena range whose recorded copies read from host memory at `ptr` instead (see
/// [`super::borrow`], which re-points the launch arguments itself and builds these).
#[derive(Clone, Copy)]
pub(super) struct Redirect {
    pub(super) offset: u64,
    pub(super) len: u64,
    pub(super) ptr: *const u8,
}

impl Redirect {
    /// An empty range (matches no copy).
    pub const NONE: Redirect = Redirect {
        offset: 0,
        len: 0,
        ptr: std::ptr::null(),
    };
}

impl CpuDevice {
    /// Run `queue`; a copy whose source lies inside a `redirects` range reads the redirect's
    /// memory instead of the arena.
    ///
    /// # Safety
    /// For every redirect, `ptr..ptr+len` must be readable host memory that nothing writes
    /// during the call.
    pub(super) unsafe fn submit_redirected(
        &mut self,
        queue: &mut CpuQueue,
        redirects: &[Redirect],
    ) -> Result<SubmitTiming, CpuError> {
        let start = Instant::now();
        if !Arc::ptr_eq(&queue.arena, &self.arena) {
            return Err(CpuError::StaleQueue);
        }
        let base = self.arena.base();
        let mut first_command: Option<Instant> = None;
        for command in &queue.commands {
            if first_command.is_none() {
                first_command = Some(Instant::now());
            }
            match command {
                Command::Wait(want) => {
                    // Commands run synchronously, so nothing can advance the timeline while we
                    // wait: an unmet wait would block forever.
                    if queue.timeline < *want {
                        return Err(CpuError::WaitUnsatisfiable {
                            want: *want,
                            have: queue.timeline,
                        });
                    }
                }
                Command::Signal(value) => queue.timeline = *value,
                Command::Timestamp(slot) => {
                    if let Some(stamp) = queue.stamps.get_mut(*slot) {
                        *stamp = Some(Instant::now());
                    }
                }
                Command::Exec {
                    kernel,
                    args,
                    core_slot,
                    threads,
                    ..
                } => {
                    let launch = Launch {
                        entry: kernel.entry,
                        args: args.as_ptr(),
                        nargs: args.len(),
                        core_slot: *core_slot,
                        threads: *threads,
                    };
                    // SAFETY: `kernel` (held by this queue) keeps the code mapped; the argument
                    // array lives in `queue.commands`, borrowed for the whole launch; every buffer
                    // argument was bounds-checked against this same arena (checked by `ptr_eq`
                    // above) when recorded, or lies in a weight read in place from the bundle
                    // mapping this arena keeps alive; `args.len()` equals the kernel's parameter
                    // count, which its compiled C signature also has (tinygrad builds both from
                    // one parameter list).
                    unsafe { self.pool.run(&launch) };
                }
                Command::Copy { dst, src, len } => {
                    let from = redirects
                        .iter()
                        .find(|r| (*src as u64).wrapping_sub(r.offset) < r.len)
                        // In range: `src - r.offset < r.len`, and the source lies wholly inside the
                        // redirect (caller's guarantee).
                        .map(|r| r.ptr.wrapping_add(*src - r.offset as usize))
                        // A weight read in place: its mapped bytes (the range was checked to
                        // lie inside it when the copy was recorded).
                        .or_else(|| {
                            let addr = self.arena.weights.find(*src as u64, *len as u64);
                            addr.ok().flatten().map(|a| a as *const u8)
                        });
                    match from {
                        // SAFETY: `p..p+len` lies inside the redirect's host memory (caller's
                        // guarantee above) or inside the bundle mapping the arena keeps alive; the
                        // destination lies inside the arena (checked when recorded) and never in
                        // a bound weight; neither source memory overlaps the arena mapping.
                        Some(p) => unsafe {
                            std::ptr::copy_nonoverlapping(p, base.add(*dst), *len)
                        },
                        // SAFETY: both ranges were bounds-checked against this arena when recorded;
                        // `copy` has memmove semantics, so overlap is fine.
                        None => unsafe { std::ptr::copy(base.add(*src), base.add(*dst), *len) },
                    }
                }
            }
        }
        let mut stamps = queue.stamps.iter().flatten();
        let first = stamps.next();
        let device_ns = match (first, stamps.last()) {
            (Some(a), Some(b)) => b.saturating_duration_since(*a).as_nanos() as u64,
            _ => 0,
        };
        let enqueue_ns =
            first_command.map_or(0, |t| t.saturating_duration_since(start).as_nanos() as u64);
        Ok(SubmitTiming {
            enqueue_ns,
            device_ns,
        })
    }
}
