//! [`AdrenoQueue`]: records one model's whole command stream (barriers, dispatches, signals, waits,
//! timestamps, CPU copies) into a GPU object at load time, with the timeline values left to patch at submit.
use super::{check_arena_range, kern_err, AdrenoError, Shared, PROGRESS_OFF};
use crate::a6xx::args::{self, GpuArg, SlotKind};
use crate::a6xx::cl_args;
use crate::a6xx::layout::CONST_LOAD_BYTES;
use crate::a6xx::stream::{self, DispatchAddrs};
use crate::kgsl::{alloc_obj, free_obj, CommandObject, GpuObj, KgslIo};
use modelrt_hal::device::{Arg, KernelId, Queue};
use std::cell::RefCell;
use std::rc::Rc;

/// Bytes per args chunk (regions are bump-allocated inside; the constant load reads 4 KiB past a region start).
const ARGS_CHUNK: u64 = 256 * 1024;
/// Timestamps one queue can record (8 bytes each in a 4 KiB page).
pub(super) const MAX_TIMESTAMPS: usize = 512;

#[derive(Clone, Copy, Debug)]
pub(super) struct ArgRef {
    /// Args chunk index and byte offset of the slot.
    pub(super) chunk: u32,
    pub(super) at: u64,
    pub(super) kind: SlotKind,
    pub(super) arena_off: u64,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Patch {
    /// IB dword index ← base + rel.
    Timeline { at: usize, rel: u32 },
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Segment {
    Ib { start: usize, end: usize },
    Copy { dst: u64, src: u64, len: u64 },
}

/// A recorded command stream (one or more IBs in one GPU object).
pub struct AdrenoQueue<K: KgslIo> {
    pub(super) sh: Rc<RefCell<Shared<K>>>,
    pub(super) dw: Vec<u32>,
    pub(super) ib: Option<GpuObj>,
    pub(super) synced: usize,
    pub(super) patches: Vec<Patch>,
    pub(super) segments: Vec<Segment>,
    pub(super) seg_start: usize,
    pub(super) args_chunks: Vec<GpuObj>,
    pub(super) args_used: u64,
    pub(super) arg_refs: Vec<ArgRef>,
    pub(super) ts: Option<GpuObj>,
    pub(super) n_ts: usize,
    pub(super) max_signal: u32,
    /// Kernel id per dispatch, in order (for hang messages).
    pub(super) dispatches: Vec<u32>,
    /// A memory barrier must precede the next dispatch (start of the queue, or after a CPU copy).
    pub(super) need_barrier: bool,
    /// Scratch for the args region (reused).
    pub(super) scratch: Vec<u8>,
    /// Submission timestamps scratch (reused, no allocation in submit).
    pub(super) cmd: Vec<CommandObject>,
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

impl<K: KgslIo> AdrenoQueue<K> {
    /// An empty queue of the device behind `sh`.
    pub(super) fn new(sh: Rc<RefCell<Shared<K>>>) -> Self {
        AdrenoQueue {
            sh,
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
        }
    }

    /// The recorded dwords (host mirror of the IB object, before timeline patching).
    pub fn dwords(&self) -> &[u32] {
        &self.dw
    }

    /// GPU address of the IB object (None before anything was recorded).
    pub fn ib_addr(&self) -> Option<u64> {
        self.ib.as_ref().map(|o| o.gpu_addr())
    }

    /// GPU addresses of the args chunks.
    pub fn args_chunks(&self) -> Vec<(u64, u64)> {
        self.args_chunks
            .iter()
            .map(|o| (o.gpu_addr(), o.size()))
            .collect()
    }

    /// Copy newly recorded dwords into the IB object, growing it (during recording only).
    fn sync(&mut self) -> Result<(), AdrenoError> {
        let need = self.dw.len() as u64 * 4;
        let mut s = self.sh.borrow_mut();
        if self.ib.as_ref().is_none_or(|o| o.size() < need) {
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
            ib.write(self.synced as u64 * 4, &bytes)?;
        }
        self.synced = self.dw.len();
        Ok(())
    }

    fn args_region(&mut self, size: u64) -> Result<(u32, u64), AdrenoError> {
        let reserve = size.max(1).div_ceil(256) * 256;
        let fits = |o: &GpuObj, used: u64| used + reserve.max(CONST_LOAD_BYTES as u64) <= o.size();
        if self
            .args_chunks
            .last()
            .is_none_or(|o| !fits(o, self.args_used))
        {
            let mut s = self.sh.borrow_mut();
            let o = alloc_obj(&mut s.k, ARGS_CHUNK.max(reserve + CONST_LOAD_BYTES as u64))?;
            o.write(0, &vec![0u8; o.size() as usize])?;
            self.args_chunks.push(o);
            self.args_used = 0;
        }
        let at = self.args_used;
        self.args_used += reserve;
        Ok((self.args_chunks.len() as u32 - 1, at))
    }

    /// One dispatch of `kernel` (the body of [`Queue::exec`] and [`Queue::exec_threads`]); `threads` is the NDRANGE
    /// item count per dimension.
    fn launch(
        &mut self,
        kernel: KernelId,
        args: &[Arg],
        global: [u32; 3],
        local: [u32; 3],
        threads: [u32; 3],
    ) -> Result<(), AdrenoError> {
        let (layout, name, arena_va, arena_size) = {
            let s = self.sh.borrow();
            let k = s
                .kernels
                .get(kernel.0 as usize)
                .ok_or(AdrenoError::NoKernel(kernel.0))?;
            let a = s.arena.as_ref().ok_or(AdrenoError::NoArena)?;
            (k.layout.clone(), k.name.clone(), a.gpu_addr(), a.size())
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
            match &k.cl {
                Some(cl) => cl_args::fill_cl(&layout, cl, &k.params, &gargs, &mut self.scratch),
                None => args::fill(
                    &layout,
                    &k.immediates,
                    &k.tex_to_image,
                    &k.params,
                    &gargs,
                    local,
                    &mut self.scratch,
                ),
            }
            .map_err(|e| kern_err(&name, e))?
        };
        let region_va = self.args_chunks[chunk as usize].gpu_addr() + at;
        self.args_chunks[chunk as usize].write(at, &self.scratch)?;
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
            let st = s.stack.as_ref().map_or(0, |o| o.gpu_addr());
            (
                s.kernels[kernel.0 as usize].lib.gpu_addr(),
                st,
                s.border.gpu_addr(),
                s.dummy.gpu_addr(),
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
        stream::exec(&mut self.dw, &layout, &addrs, global, local, threads)
            .map_err(|e| kern_err(&name, e))?;
        self.sync()
    }

    fn timeline_addr(&self) -> u64 {
        self.sh.borrow().signals.gpu_addr()
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
            (s.signals.gpu_addr(), s.dummy.gpu_addr())
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
        let addr = self.ts.as_ref().map_or(0, |o| o.gpu_addr()) + 8 * self.n_ts as u64;
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
        let full = [0, 1, 2].map(|d| global[d].saturating_mul(local[d]));
        self.launch(kernel, args, global, local, full)
    }

    /// Partial last work groups run only for Qualcomm-compiled (CL-mode) kernels, as tinygrad's QCOM path launches
    /// them (NDRANGE = the item count, KERNEL_GROUP = the group count, CP_RUN_OPENCL); IR3 kernels refuse them.
    fn exec_threads(
        &mut self,
        kernel: KernelId,
        args: &[Arg],
        global: [u32; 3],
        local: [u32; 3],
        threads: [u32; 3],
    ) -> Result<bool, AdrenoError> {
        let cl = {
            let s = self.sh.borrow();
            let k = s
                .kernels
                .get(kernel.0 as usize)
                .ok_or(AdrenoError::NoKernel(kernel.0))?;
            k.cl.is_some()
        };
        if !cl {
            return Ok(false);
        }
        self.launch(kernel, args, global, local, threads)?;
        Ok(true)
    }

    fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), AdrenoError> {
        let size = self
            .sh
            .borrow()
            .arena
            .as_ref()
            .ok_or(AdrenoError::NoArena)?
            .size();
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
        let dummy = self.sh.borrow().dummy.gpu_addr();
        let at = stream::signal(&mut self.dw, tl, 0, dummy).map_err(|e| kern_err("signal", e))?;
        self.patches.push(Patch::Timeline {
            at,
            rel: value as u32,
        });
        self.max_signal = self.max_signal.max(value as u32);
        self.sync()
    }
}
