//! The Adreno a6xx backend: [`AdrenoDevice`] implements the HAL [`Device`] over any [`KgslIo`] (real node or the
//! model), [`AdrenoQueue`] records one model's whole command stream into a GPU object at load time and
//! [`Device::submit`] only patches the timeline values and submits (like tinygrad's HCQGraph; no allocation).
//!
//! Timeline semantics: values given to [`Queue::wait`]/[`Queue::signal`] are relative to the submission. At submit
//! the device adds its current timeline value `T`, so `wait(0)` waits for everything submitted before and
//! `signal(n)` publishes `T + n`; after the submit the timeline is at `T + max(n)`.
//!
//! Copies ([`Queue::copy`]) have no GPU engine on this path (tinygrad also copies with the CPU): a recorded copy
//! splits the stream into separate IBs, and `submit` waits for the IB before it, then `memmove`s in the arena.
//!
//! Zero-copy inputs: [`AdrenoDevice::bind_external`] re-points every recorded argument that refers to an arena
//! range at an external GPU buffer (a camera frame imported with [`AdrenoDevice::import_user_memory`] or a raw
//! GPU address via [`ExternalBuffer::from_gpu_addr`]), rewriting only the pointers/descriptor bases in the
//! recorded args regions; [`AdrenoDevice::unbind_external`] restores the arena addresses.
//!
//! Hang reporting: each dispatch's closing CACHE_FLUSH_TS stores its 1-based index into a progress slot of the
//! dummy object (tinygrad stores 0 to the dummy's first dword; same dword count). When a submission does not
//! retire in time, the error names the first dispatch that did not report completion.
use crate::a6xx::args::{self, GpuArg, SlotKind};
use crate::a6xx::layout::{KernelLayout, CONST_LOAD_BYTES};
use crate::a6xx::stream::{self, DispatchAddrs};
use crate::kgsl::{abi, alloc_obj, free_obj, CommandObject, GpuObj, KgslError, KgslIo};
use modelrt_hal::device::{Arg, Device, KernelId, KernelImage, Queue, SubmitTiming};
use modelrt_hal::target::{KernelMeta, ParamDesc, Target};
use std::cell::RefCell;
use std::rc::Rc;

/// Byte offset of the dispatch-progress slot inside the dummy object.
pub const PROGRESS_OFF: u64 = 0x10;
/// Bytes per args chunk (regions are bump-allocated inside; the constant load reads 4 KiB past a region start).
const ARGS_CHUNK: u64 = 256 * 1024;
/// Timestamps one queue can record (8 bytes each in a 4 KiB page).
const MAX_TIMESTAMPS: usize = 512;

/// Backend error; every message is one line.
#[derive(Debug, thiserror::Error)]
pub enum AdrenoError {
    #[error(transparent)]
    Kgsl(#[from] KgslError),
    #[error("unsupported GPU: chip_id={chip_id:#010x} (this backend emits a6xx streams; tinygrad also rejects >= 7.3)")]
    UnsupportedGpu { chip_id: u32 },
    #[error("bundle targets {0}, this device is an Adreno a6xx")]
    WrongTarget(String),
    #[error("bundle was compiled for Adreno {bundle}, this GPU is a{gpu}")]
    WrongChip { bundle: u32, gpu: u32 },
    #[error("kernel {name}: {reason}")]
    Kernel { name: String, reason: String },
    #[error("arena range {offset:#x}+{len:#x} is outside the {size:#x}-byte arena")]
    OutOfArena { offset: u64, len: u64, size: u64 },
    #[error("no arena allocated (alloc_arena must come first)")]
    NoArena,
    #[error("unknown kernel id {0}")]
    NoKernel(u32),
    #[error("queue records more than {MAX_TIMESTAMPS} timestamps")]
    TooManyTimestamps,
    #[error("GPU hang: dispatch {index} ({kernel}) did not complete within {timeout_ms} ms")]
    Hang {
        index: u32,
        kernel: String,
        timeout_ms: u32,
    },
    #[error("GPU did not retire the submission within {timeout_ms} ms (no dispatch pending; last op was a wait/signal)")]
    Stuck { timeout_ms: u32 },
    #[error("timeline is {got}, expected {want} after the submission")]
    Timeline { got: u32, want: u32 },
    #[error("queue belongs to another device")]
    ForeignQueue,
}

/// Device options.
#[derive(Clone, Copy, Debug)]
pub struct AdrenoOptions {
    /// KGSL context priority (tinygrad `QCOM_PRIORITY`, default 8).
    pub priority: u32,
    /// Bound on one submission (tinygrad `HCQDEV_WAIT_TIMEOUT_MS`, default 30000).
    pub timeout_ms: u32,
    /// When the timeline passes this value it is reset to 0 before the next submission (the GPU compares
    /// 32-bit values; tinygrad swaps its timeline signal past 2^31). Submissions are synchronous, so nothing is
    /// in flight at that point.
    pub timeline_wrap: u32,
}

impl Default for AdrenoOptions {
    fn default() -> Self {
        AdrenoOptions {
            priority: 8,
            timeout_ms: 30_000,
            timeline_wrap: 1 << 31,
        }
    }
}

struct LoadedKernel {
    name: String,
    layout: KernelLayout,
    lib: GpuObj,
    params: Vec<ParamDesc>,
    immediates: Vec<u8>,
    tex_to_image: Vec<u8>,
}

struct Shared<K: KgslIo> {
    k: K,
    ctx: u32,
    dummy: GpuObj,
    border: GpuObj,
    signals: GpuObj,
    stack: Option<GpuObj>,
    arena: Option<GpuObj>,
    kernels: Vec<LoadedKernel>,
    /// Current device timeline value (the u32 at `signals + 0`).
    timeline: u32,
    chip_id: u32,
    /// Retired objects (stack grown, queue IB grown) freed at drop; the GPU may still reference them until then.
    retired: Vec<GpuObj>,
    opts: AdrenoOptions,
}

/// The Adreno device over a KGSL implementation `K`.
pub struct AdrenoDevice<K: KgslIo> {
    sh: Rc<RefCell<Shared<K>>>,
}

/// An external GPU buffer that can stand in for an arena range (see [`AdrenoDevice::bind_external`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExternalBuffer {
    pub gpuaddr: u64,
    pub len: u64,
    /// MAP_USER_MEM mapping to release with [`AdrenoDevice::release_external`] (None for raw GPU addresses).
    user_map: Option<u64>,
}

impl ExternalBuffer {
    /// Use a GPU address that is already mapped in this process's GPU address space (e.g. from another KGSL
    /// allocation or OpenCL interop). The caller guarantees it stays valid while bound.
    pub fn from_gpu_addr(gpuaddr: u64, len: u64) -> Self {
        ExternalBuffer {
            gpuaddr,
            len,
            user_map: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct ArgRef {
    /// Args chunk index and byte offset of the slot.
    chunk: u32,
    at: u64,
    kind: SlotKind,
    arena_off: u64,
}

#[derive(Clone, Copy, Debug)]
enum Patch {
    /// IB dword index ← base + rel.
    Timeline { at: usize, rel: u32 },
}

#[derive(Clone, Copy, Debug)]
enum Segment {
    Ib { start: usize, end: usize },
    Copy { dst: u64, src: u64, len: u64 },
}

/// A recorded command stream (one or more IBs in one GPU object).
pub struct AdrenoQueue<K: KgslIo> {
    sh: Rc<RefCell<Shared<K>>>,
    dw: Vec<u32>,
    ib: Option<GpuObj>,
    synced: usize,
    patches: Vec<Patch>,
    segments: Vec<Segment>,
    seg_start: usize,
    args_chunks: Vec<GpuObj>,
    args_used: u64,
    arg_refs: Vec<ArgRef>,
    ts: Option<GpuObj>,
    n_ts: usize,
    max_signal: u32,
    /// Kernel id per dispatch, in order (for hang messages).
    dispatches: Vec<u32>,
    /// A memory barrier must precede the next dispatch (start of the queue, or after a CPU copy).
    need_barrier: bool,
    /// Scratch for the args region (reused).
    scratch: Vec<u8>,
    /// Submission timestamps scratch (reused, no allocation in submit).
    cmd: Vec<CommandObject>,
}

fn kern_err(name: &str, reason: impl core::fmt::Display) -> AdrenoError {
    AdrenoError::Kernel {
        name: name.to_string(),
        reason: reason.to_string(),
    }
}

/// `[offset, offset + len)` must lie inside an arena of `size` bytes (overflow counts as outside).
fn check_arena_range(offset: u64, len: u64, size: u64) -> Result<(), AdrenoError> {
    if offset.checked_add(len).is_none_or(|e| e > size) {
        return Err(AdrenoError::OutOfArena { offset, len, size });
    }
    Ok(())
}

impl<K: KgslIo> Shared<K> {
    /// The arena, once `[offset, offset + len)` is checked to lie inside it.
    fn arena_range(&self, offset: u64, len: u64) -> Result<&GpuObj, AdrenoError> {
        let a = self.arena.as_ref().ok_or(AdrenoError::NoArena)?;
        check_arena_range(offset, len, a.size)?;
        Ok(a)
    }
}

impl<K: KgslIo> AdrenoDevice<K> {
    /// Bring the device up in tinygrad's order (spec §3): dummy object, draw context, border-colour buffer, max
    /// power, device info (reject ≥ 7.3), signal page. The 16 MiB ring and the HCQ staging buffers are not
    /// needed: every queue owns its IB object.
    pub fn open(mut k: K, opts: AdrenoOptions) -> Result<Self, AdrenoError> {
        let dummy = alloc_obj(&mut k, 0x1000)?;
        let ctx = k.drawctxt_create(abi::context_flags(opts.priority))?;
        let border = alloc_obj(&mut k, 0x1000)?;
        border.write(0, &[0u8; 0x1000]);
        k.set_power_max(ctx)?;
        let info = k.device_info()?;
        // tinygrad accepts anything below 7.3; our a6xx-only event/register choices (spec §11) make us stricter.
        if info.chip_id >> 24 != 6 {
            return Err(AdrenoError::UnsupportedGpu {
                chip_id: info.chip_id,
            });
        }
        let signals = alloc_obj(&mut k, 0x1000)?;
        signals.write(0, &[0u8; 16]);
        dummy.write(0, &[0u8; 32]);
        Ok(AdrenoDevice {
            sh: Rc::new(RefCell::new(Shared {
                k,
                ctx,
                dummy,
                border,
                signals,
                stack: None,
                arena: None,
                kernels: Vec::new(),
                timeline: 0,
                chip_id: info.chip_id,
                retired: Vec::new(),
                opts,
            })),
        })
    }

    /// The GPU as `a630`-style number (e.g. 630).
    pub fn gpu(&self) -> u32 {
        let c = self.sh.borrow().chip_id;
        (c >> 24) * 100 + ((c >> 16) & 0xFF) * 10 + ((c >> 8) & 0xFF)
    }

    /// Arena GPU base address and size (None before `alloc_arena`).
    pub fn arena(&self) -> Option<(u64, u64)> {
        self.sh.borrow().arena.as_ref().map(|a| (a.va, a.size))
    }

    /// Named GPU objects the device uses (for traces and stream normalisation): dummy, border, signals, stack,
    /// arena, and each kernel's shader as `lib:<name>`.
    pub fn address_map(&self) -> Vec<(String, u64, u64)> {
        let s = self.sh.borrow();
        let mut v = vec![
            ("dummy".to_string(), s.dummy.va, s.dummy.size),
            ("border".to_string(), s.border.va, s.border.size),
            ("timeline".to_string(), s.signals.va, s.signals.size),
        ];
        if let Some(o) = &s.stack {
            v.push(("stack".into(), o.va, o.size));
        }
        if let Some(o) = &s.arena {
            v.push(("arena".into(), o.va, o.size));
        }
        for k in &s.kernels {
            v.push((format!("lib:{}", k.name), k.lib.va, k.lib.size));
        }
        v
    }

    /// Run `f` with the KGSL implementation (e.g. to read the model's trace).
    pub fn with_kgsl<R>(&self, f: impl FnOnce(&mut K) -> R) -> R {
        f(&mut self.sh.borrow_mut().k)
    }

    /// Import `len` bytes of CPU memory at `ptr` (MAP_USER_MEM, page-aligned as tinygrad does). On aarch64 the
    /// CPU data cache is cleaned for the range first (`dc cvac` + `dsb sy`). If KGSL answers EFAULT the pointer
    /// is taken to already be a GPU address (tinygrad's OpenCL-interop rule).
    pub fn import_user_memory(
        &mut self,
        ptr: u64,
        len: u64,
    ) -> Result<ExternalBuffer, AdrenoError> {
        let base = ptr & !0xFFF;
        let mapped = (len + (ptr & 0xFFF)).div_ceil(0x1000) * 0x1000;
        clean_dcache(ptr, len);
        match self.sh.borrow_mut().k.map_user_mem(base, mapped) {
            Ok(gpuaddr) => Ok(ExternalBuffer {
                gpuaddr: gpuaddr + (ptr - base),
                len,
                user_map: Some(gpuaddr),
            }),
            Err(e) if e.errno() == Some(14) => Ok(ExternalBuffer::from_gpu_addr(ptr, len)),
            Err(e) => Err(e.into()),
        }
    }

    /// Release a buffer from [`AdrenoDevice::import_user_memory`] (SHAREDMEM_FREE). Unbind it first.
    pub fn release_external(&mut self, buf: ExternalBuffer) -> Result<(), AdrenoError> {
        if let Some(g) = buf.user_map {
            self.sh.borrow_mut().k.sharedmem_free(g)?;
        }
        Ok(())
    }

    /// Point every argument of `queue` that lies in arena range `[arena_offset, arena_offset + buf.len)` at the
    /// corresponding bytes of `buf` instead (zero copy). Returns how many argument slots were rewritten.
    pub fn bind_external(
        &mut self,
        queue: &mut AdrenoQueue<K>,
        arena_offset: u64,
        buf: &ExternalBuffer,
    ) -> Result<usize, AdrenoError> {
        self.rebind(queue, arena_offset, buf.len, Some(buf.gpuaddr))
    }

    /// Undo [`AdrenoDevice::bind_external`] for the arena range.
    pub fn unbind_external(
        &mut self,
        queue: &mut AdrenoQueue<K>,
        arena_offset: u64,
        len: u64,
    ) -> Result<usize, AdrenoError> {
        self.rebind(queue, arena_offset, len, None)
    }

    fn rebind(
        &mut self,
        q: &mut AdrenoQueue<K>,
        off: u64,
        len: u64,
        to: Option<u64>,
    ) -> Result<usize, AdrenoError> {
        if !Rc::ptr_eq(&self.sh, &q.sh) {
            return Err(AdrenoError::ForeignQueue);
        }
        let s = self.sh.borrow();
        let arena = s.arena_range(off, len)?;
        let mut n = 0;
        for r in q
            .arg_refs
            .iter()
            .filter(|r| r.arena_off >= off && r.arena_off < off + len)
        {
            let addr = match to {
                Some(g) => g + (r.arena_off - off),
                None => arena.va + r.arena_off,
            };
            let mut b = [0u8; 8];
            r.kind.write(&mut b, 0, addr);
            q.args_chunks[r.chunk as usize].write(r.at, &b);
            n += 1;
        }
        Ok(n)
    }
}

/// Clean the CPU data cache over `[ptr, ptr+len)` so the GPU sees CPU writes (aarch64 only; spec §4.3).
fn clean_dcache(ptr: u64, len: u64) {
    #[cfg(target_arch = "aarch64")]
    {
        let mut line = ptr & !63;
        while line < ptr + len {
            // SAFETY: `dc cvac` only cleans the cache line containing `line`; it does not write memory contents
            // and faults only for unmapped addresses, which the caller's buffer is not.
            unsafe { core::arch::asm!("dc cvac, {0}", in(reg) line, options(nostack)) };
            line += 64;
        }
        // SAFETY: a full-system data synchronisation barrier has no memory-safety effect.
        unsafe { core::arch::asm!("dsb sy", options(nostack)) };
    }
    #[cfg(not(target_arch = "aarch64"))]
    let _ = (ptr, len);
}

impl<K: KgslIo> Drop for Shared<K> {
    fn drop(&mut self) {
        let objs: Vec<GpuObj> = self
            .kernels
            .drain(..)
            .map(|k| k.lib)
            .chain(self.retired.drain(..))
            .chain(self.stack.take())
            .chain(self.arena.take())
            .collect();
        for o in objs {
            let _ = free_obj(&mut self.k, o);
        }
        for o in [&self.dummy, &self.border, &self.signals] {
            let _ = self.k.gpuobj_free(o.id);
            let _ = self.k.munmap(o.va, o.size);
        }
    }
}

impl<K: KgslIo> Drop for AdrenoQueue<K> {
    fn drop(&mut self) {
        let mut s = self.sh.borrow_mut();
        let objs: Vec<GpuObj> = self
            .args_chunks
            .drain(..)
            .chain(self.ib.take())
            .chain(self.ts.take())
            .collect();
        for o in objs {
            let _ = free_obj(&mut s.k, o);
        }
    }
}

impl<K: KgslIo> Device for AdrenoDevice<K> {
    type Error = AdrenoError;
    type Queue = AdrenoQueue<K>;

    fn check_target(&self, target: &Target<'_>) -> Result<(), AdrenoError> {
        match target {
            Target::Adreno { chip, .. } if *chip == self.gpu() => Ok(()),
            Target::Adreno { chip, .. } => Err(AdrenoError::WrongChip {
                bundle: *chip,
                gpu: self.gpu(),
            }),
            other => Err(AdrenoError::WrongTarget(other.family().to_string())),
        }
    }

    fn alloc_arena(&mut self, bytes: u64) -> Result<(), AdrenoError> {
        let mut s = self.sh.borrow_mut();
        let obj = alloc_obj(&mut s.k, bytes)?;
        if let Some(old) = s.arena.replace(obj) {
            s.retired.push(old);
        }
        Ok(())
    }

    fn upload(&mut self, offset: u64, data: &[u8]) -> Result<(), AdrenoError> {
        self.sh
            .borrow()
            .arena_range(offset, data.len() as u64)?
            .write(offset, data);
        Ok(())
    }

    fn download(&mut self, offset: u64, out: &mut [u8]) -> Result<(), AdrenoError> {
        self.sh
            .borrow()
            .arena_range(offset, out.len() as u64)?
            .read(offset, out);
        Ok(())
    }

    fn load_kernel(&mut self, kernel: &KernelImage<'_>) -> Result<KernelId, AdrenoError> {
        let KernelMeta::Ir3(meta) = kernel.meta else {
            return Err(kern_err(
                kernel.name,
                "metadata is not IR3 (Adreno bundles carry Ir3KernelMeta)",
            ));
        };
        let layout = KernelLayout::new(meta).map_err(|e| kern_err(kernel.name, e))?;
        if kernel.binary.len() != meta.image_size as usize {
            return Err(kern_err(
                kernel.name,
                format_args!(
                    "ISA is {} bytes, metadata says {}",
                    kernel.binary.len(),
                    meta.image_size
                ),
            ));
        }
        let mut s = self.sh.borrow_mut();
        let lib = alloc_obj(&mut s.k, kernel.binary.len() as u64)?;
        lib.write(0, kernel.binary);
        let need_stack = layout.hw_stack_offset as u64 * 4;
        if s.stack.as_ref().is_none_or(|st| st.size < need_stack) {
            let st = alloc_obj(&mut s.k, need_stack)?;
            if let Some(old) = s.stack.replace(st) {
                s.retired.push(old);
            }
        }
        let id = s.kernels.len() as u32;
        s.kernels.push(LoadedKernel {
            name: kernel.name.to_string(),
            layout,
            lib,
            params: kernel.params.to_vec(),
            immediates: meta.immediates.to_vec(),
            tex_to_image: meta.tex_to_image.to_vec(),
        });
        Ok(KernelId(id))
    }

    fn create_queue(&mut self) -> Result<AdrenoQueue<K>, AdrenoError> {
        Ok(AdrenoQueue {
            sh: self.sh.clone(),
            dw: Vec::new(),
            ib: None,
            synced: 0,
            patches: Vec::new(),
            segments: Vec::new(),
            seg_start: 0,
            args_chunks: Vec::new(),
            args_used: 0,
            arg_refs: Vec::new(),
            ts: None,
            n_ts: 0,
            max_signal: 0,
            dispatches: Vec::new(),
            need_barrier: true,
            scratch: Vec::new(),
            cmd: Vec::with_capacity(1),
        })
    }

    fn submit(&mut self, q: &mut AdrenoQueue<K>) -> Result<SubmitTiming, AdrenoError> {
        if !Rc::ptr_eq(&self.sh, &q.sh) {
            return Err(AdrenoError::ForeignQueue);
        }
        let t0 = self.now_ns();
        let mut s = self.sh.borrow_mut();
        let s = &mut *s;
        let Some(ib) = q.ib.as_ref() else {
            return Ok(SubmitTiming::default());
        };
        if s.timeline > s.opts.timeline_wrap {
            s.signals.write_u32(0, 0);
            s.timeline = 0;
        }
        let base = s.timeline;
        for p in &q.patches {
            let Patch::Timeline { at, rel } = *p;
            ib.write_u32(at as u64 * 4, base.wrapping_add(rel));
        }
        s.dummy.write_u32(PROGRESS_OFF, 0);
        let timeout_ms = s.opts.timeout_ms;
        let mut last_ts = None;
        let mut enqueue_ns = 0;
        let n_segments = q.segments.len() + usize::from(q.seg_start < q.dw.len());
        for i in 0..n_segments {
            let seg = q.segments.get(i).copied().unwrap_or(Segment::Ib {
                start: q.seg_start,
                end: q.dw.len(),
            });
            match seg {
                Segment::Ib { start, end } => {
                    q.cmd.clear();
                    q.cmd.push(CommandObject {
                        offset: 0,
                        gpuaddr: ib.va + start as u64 * 4,
                        size: (end - start) as u64 * 4,
                        flags: abi::CMDLIST_IB,
                        id: 0,
                    });
                    last_ts = Some(s.k.gpu_command(s.ctx, &q.cmd)?);
                    enqueue_ns = now_ns().saturating_sub(t0);
                }
                Segment::Copy { dst, src, len } => {
                    if let Some(ts) = last_ts {
                        wait_retired(s, q, ts, timeout_ms)?;
                    }
                    let arena = s.arena.as_ref().ok_or(AdrenoError::NoArena)?;
                    arena.copy_within(dst, src, len);
                }
            }
        }
        if let Some(ts) = last_ts {
            wait_retired(s, q, ts, timeout_ms)?;
        }
        let want = base.wrapping_add(q.max_signal);
        let got = s.signals.read_u32(0);
        if got != want {
            return Err(AdrenoError::Timeline { got, want });
        }
        s.timeline = want;
        let device_ns = match (&q.ts, q.n_ts) {
            (Some(ts), n) if n >= 2 => {
                let ticks = ts
                    .read_u64(8 * (n as u64 - 1))
                    .saturating_sub(ts.read_u64(0));
                ticks * 625 / 12 // 19.2 MHz → ns
            }
            _ => 0,
        };
        Ok(SubmitTiming {
            enqueue_ns,
            device_ns,
        })
    }

    fn now_ns(&self) -> u64 {
        now_ns()
    }
}

fn now_ns() -> u64 {
    use std::sync::OnceLock;
    static T0: OnceLock<std::time::Instant> = OnceLock::new();
    T0.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}

fn wait_retired<K: KgslIo>(
    s: &mut Shared<K>,
    q: &AdrenoQueue<K>,
    ts: u32,
    timeout_ms: u32,
) -> Result<(), AdrenoError> {
    match s.k.wait_timestamp(s.ctx, ts, timeout_ms) {
        Ok(()) => Ok(()),
        Err(KgslError::Timeout { .. }) => {
            let done = s.dummy.read_u32(PROGRESS_OFF) as usize;
            match q.dispatches.get(done) {
                Some(&kid) => Err(AdrenoError::Hang {
                    index: done as u32,
                    kernel: s
                        .kernels
                        .get(kid as usize)
                        .map_or_else(|| "?".into(), |k| k.name.clone()),
                    timeout_ms,
                }),
                None => Err(AdrenoError::Stuck { timeout_ms }),
            }
        }
        Err(e) => Err(e.into()),
    }
}

impl<K: KgslIo> AdrenoQueue<K> {
    /// The recorded dwords (host mirror of the IB object, before timeline patching).
    pub fn dwords(&self) -> &[u32] {
        &self.dw
    }

    /// GPU address of the IB object (None before anything was recorded).
    pub fn ib_addr(&self) -> Option<u64> {
        self.ib.as_ref().map(|o| o.va)
    }

    /// GPU addresses of the args chunks.
    pub fn args_chunks(&self) -> Vec<(u64, u64)> {
        self.args_chunks.iter().map(|o| (o.va, o.size)).collect()
    }

    /// Copy newly recorded dwords into the IB object, growing it (during recording only).
    fn sync(&mut self) -> Result<(), AdrenoError> {
        let need = self.dw.len() as u64 * 4;
        let mut s = self.sh.borrow_mut();
        if self.ib.as_ref().is_none_or(|o| o.size < need) {
            let new = alloc_obj(&mut s.k, need.max(64 * 1024).next_power_of_two())?;
            if let Some(old) = self.ib.replace(new) {
                s.retired.push(old);
            }
            self.synced = 0;
        }
        if let Some(ib) = &self.ib {
            let bytes: Vec<u8> = self.dw[self.synced..]
                .iter()
                .flat_map(|d| d.to_le_bytes())
                .collect();
            ib.write(self.synced as u64 * 4, &bytes);
        }
        self.synced = self.dw.len();
        Ok(())
    }

    fn args_region(&mut self, size: u64) -> Result<(u32, u64), AdrenoError> {
        let reserve = size.max(1).div_ceil(256) * 256;
        let fits = |o: &GpuObj, used: u64| used + reserve.max(CONST_LOAD_BYTES as u64) <= o.size;
        if self
            .args_chunks
            .last()
            .is_none_or(|o| !fits(o, self.args_used))
        {
            let mut s = self.sh.borrow_mut();
            let o = alloc_obj(&mut s.k, ARGS_CHUNK.max(reserve + CONST_LOAD_BYTES as u64))?;
            o.write(0, &vec![0u8; o.size as usize]);
            self.args_chunks.push(o);
            self.args_used = 0;
        }
        let at = self.args_used;
        self.args_used += reserve;
        Ok((self.args_chunks.len() as u32 - 1, at))
    }

    fn timeline_addr(&self) -> u64 {
        self.sh.borrow().signals.va
    }
}

impl<K: KgslIo> Queue for AdrenoQueue<K> {
    type Error = AdrenoError;

    /// CP_WAIT_REG_MEM on the device timeline for `T + value`, then tinygrad's launch barrier (flush, invalidate,
    /// wait for memory writes and idle). Queues recorded without a `wait` get the barrier before their first
    /// dispatch (and after each copy) instead.
    fn wait(&mut self, value: u64) -> Result<(), AdrenoError> {
        let (tl, dummy) = {
            let s = self.sh.borrow();
            (s.signals.va, s.dummy.va)
        };
        let at = stream::wait(&mut self.dw, tl, 0).map_err(|e| kern_err("wait", e))?;
        self.patches.push(Patch::Timeline {
            at,
            rel: value as u32,
        });
        stream::memory_barrier(&mut self.dw, dummy).map_err(|e| kern_err("wait", e))?;
        self.need_barrier = false;
        self.sync()
    }

    fn timestamp(&mut self) -> Result<(), AdrenoError> {
        if self.n_ts >= MAX_TIMESTAMPS {
            return Err(AdrenoError::TooManyTimestamps);
        }
        if self.ts.is_none() {
            let mut s = self.sh.borrow_mut();
            self.ts = Some(alloc_obj(&mut s.k, 8 * MAX_TIMESTAMPS as u64)?);
        }
        let addr = self.ts.as_ref().map_or(0, |o| o.va) + 8 * self.n_ts as u64;
        self.n_ts += 1;
        stream::timestamp(&mut self.dw, addr).map_err(|e| kern_err("timestamp", e))?;
        self.sync()
    }

    fn exec(
        &mut self,
        kernel: KernelId,
        args: &[Arg],
        global: [u32; 3],
        local: [u32; 3],
    ) -> Result<(), AdrenoError> {
        let (layout, name, arena_va, arena_size) = {
            let s = self.sh.borrow();
            let k = s
                .kernels
                .get(kernel.0 as usize)
                .ok_or(AdrenoError::NoKernel(kernel.0))?;
            let a = s.arena.as_ref().ok_or(AdrenoError::NoArena)?;
            (k.layout.clone(), k.name.clone(), a.va, a.size)
        };
        layout
            .check_launch(global, local)
            .map_err(|e| kern_err(&name, e))?;
        let mut gargs: heapless::Vec<GpuArg, { modelrt_hal::target::MAX_PARAMS }> =
            heapless::Vec::new();
        for a in args {
            let g = match *a {
                Arg::Buffer { offset, size } => {
                    check_arena_range(offset, size, arena_size)?;
                    GpuArg::Addr(arena_va + offset)
                }
                Arg::Int(v) => GpuArg::Int(v),
            };
            gargs
                .push(g)
                .map_err(|_| kern_err(&name, "too many arguments"))?;
        }
        let (chunk, at) = self.args_region(layout.args_size as u64)?;
        self.scratch.resize(layout.args_size as usize, 0);
        let slots = {
            let s = self.sh.borrow();
            let k = &s.kernels[kernel.0 as usize];
            args::fill(
                &layout,
                &k.immediates,
                &k.tex_to_image,
                &k.params,
                &gargs,
                local,
                &mut self.scratch,
            )
            .map_err(|e| kern_err(&name, e))?
        };
        let region_va = self.args_chunks[chunk as usize].va + at;
        self.args_chunks[chunk as usize].write(at, &self.scratch);
        for sl in &slots {
            if let Some(Arg::Buffer { offset, .. }) = args.get(sl.arg as usize) {
                self.arg_refs.push(ArgRef {
                    chunk,
                    at: at + sl.at as u64,
                    kind: sl.kind,
                    arena_off: *offset,
                });
            }
        }
        let (lib, stack, border, dummy) = {
            let s = self.sh.borrow();
            let st = s.stack.as_ref().map_or(0, |o| o.va);
            (
                s.kernels[kernel.0 as usize].lib.va,
                st,
                s.border.va,
                s.dummy.va,
            )
        };
        if self.need_barrier {
            // Every IB must invalidate GPU caches before its first dispatch: the CPU may have uploaded inputs or
            // copied since the last submission (HCQGraph starts each graph with memory_barrier()).
            stream::memory_barrier(&mut self.dw, dummy).map_err(|e| kern_err(&name, e))?;
            self.need_barrier = false;
        }
        self.dispatches.push(kernel.0);
        let addrs = DispatchAddrs {
            lib,
            stack,
            args: region_va,
            border,
            flush: (dummy + PROGRESS_OFF, self.dispatches.len() as u32),
        };
        stream::exec(&mut self.dw, &layout, &addrs, global, local)
            .map_err(|e| kern_err(&name, e))?;
        self.sync()
    }

    fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), AdrenoError> {
        let size = self
            .sh
            .borrow()
            .arena
            .as_ref()
            .ok_or(AdrenoError::NoArena)?
            .size;
        for off in [dst, src] {
            check_arena_range(off, len, size)?;
        }
        if self.seg_start < self.dw.len() {
            self.segments.push(Segment::Ib {
                start: self.seg_start,
                end: self.dw.len(),
            });
        }
        self.segments.push(Segment::Copy { dst, src, len });
        self.seg_start = self.dw.len();
        self.need_barrier = true;
        Ok(())
    }

    fn signal(&mut self, value: u64) -> Result<(), AdrenoError> {
        let tl = self.timeline_addr();
        let dummy = self.sh.borrow().dummy.va;
        let at = stream::signal(&mut self.dw, tl, 0, dummy).map_err(|e| kern_err("signal", e))?;
        self.patches.push(Patch::Timeline {
            at,
            rel: value as u32,
        });
        self.max_signal = self.max_signal.max(value as u32);
        self.sync()
    }
}
