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
//!
//! Files: this one holds the options, the device state shared with queues, bring-up and teardown;
//! [`error`] the error type; `device` the HAL `Device` implementation (target check, arena, host
//! transfers, kernel loading, submit); `queue` the stream recorder; `external` zero-copy buffers (their
//! constructors are `unsafe`: they hand the GPU memory that Rust cannot track).
use crate::a6xx::layout::KernelLayout;
use crate::kgsl::{abi, alloc_obj, free_obj, GpuObj, KgslIo};
use modelrt_hal::target::ParamDesc;
use std::cell::RefCell;
use std::rc::Rc;

mod device;
pub mod error;
#[allow(unsafe_code)]
mod external;
mod queue;

pub use error::AdrenoError;
pub use external::ExternalBuffer;
pub use queue::AdrenoQueue;

/// Byte offset of the dispatch-progress slot inside the dummy object.
pub const PROGRESS_OFF: u64 = 0x10;

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
    /// Constants and argument offsets of a Qualcomm-compiled kernel (None for IR3).
    cl: Option<crate::a6xx::cl_args::ClArgs>,
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
        check_arena_range(offset, len, a.size())?;
        Ok(a)
    }
}

impl<K: KgslIo> AdrenoDevice<K> {
    /// Bring the device up in tinygrad's order (docs/hw/adreno-kgsl-pm4.md §3): dummy object, draw context, border-colour buffer, max
    /// power, device info (reject ≥ 7.3), signal page. The 16 MiB ring and the HCQ staging buffers are not
    /// needed: every queue owns its IB object.
    pub fn open(mut k: K, opts: AdrenoOptions) -> Result<Self, AdrenoError> {
        let dummy = alloc_obj(&mut k, 0x1000)?;
        let ctx = k.drawctxt_create(abi::context_flags(opts.priority))?;
        let border = alloc_obj(&mut k, 0x1000)?;
        border.write(0, &[0u8; 0x1000])?;
        k.set_power_max(ctx)?;
        let info = k.device_info()?;
        // tinygrad accepts anything below 7.3; our a6xx-only event/register choices (docs/hw/adreno-kgsl-pm4.md §11) make us stricter.
        if info.chip_id >> 24 != 6 {
            return Err(AdrenoError::UnsupportedGpu {
                chip_id: info.chip_id,
            });
        }
        let signals = alloc_obj(&mut k, 0x1000)?;
        signals.write(0, &[0u8; 16])?;
        dummy.write(0, &[0u8; 32])?;
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
        self.sh
            .borrow()
            .arena
            .as_ref()
            .map(|a| (a.gpu_addr(), a.size()))
    }

    /// Named GPU objects the device uses (for traces and stream normalisation): dummy, border, signals, stack,
    /// arena, and each kernel's shader as `lib:<name>`.
    pub fn address_map(&self) -> Vec<(String, u64, u64)> {
        let s = self.sh.borrow();
        let mut v = vec![
            ("dummy".to_string(), s.dummy.gpu_addr(), s.dummy.size()),
            ("border".to_string(), s.border.gpu_addr(), s.border.size()),
            (
                "timeline".to_string(),
                s.signals.gpu_addr(),
                s.signals.size(),
            ),
        ];
        if let Some(o) = &s.stack {
            v.push(("stack".into(), o.gpu_addr(), o.size()));
        }
        if let Some(o) = &s.arena {
            v.push(("arena".into(), o.gpu_addr(), o.size()));
        }
        for k in &s.kernels {
            v.push((format!("lib:{}", k.name), k.lib.gpu_addr(), k.lib.size()));
        }
        v
    }

    /// Run `f` with the KGSL implementation (e.g. to read the model's trace).
    pub fn with_kgsl<R>(&self, f: impl FnOnce(&mut K) -> R) -> R {
        f(&mut self.sh.borrow_mut().k)
    }
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
        for o in [&mut self.dummy, &mut self.border, &mut self.signals] {
            let _ = o.release(&mut self.k);
        }
    }
}
