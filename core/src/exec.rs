//! The executor: load a validated bundle onto a device once, then replay its schedule per inference.
//!
//! `load` may allocate (the backend records its queues); `run` performs no heap allocation in this
//! crate and calls only `upload`, `submit` and `download` on the device, which backends implement
//! without allocating (each backend has a test for that).
use core::fmt;

use modelrt_hal::device::{Arg, Device, KernelId, KernelImage, Queue};
use modelrt_hal::target::MAX_PARAMS;

use modelrt_hal::device::SubmitTiming;

use crate::bundle::{ArgRef, BufferKind, Bundle, BundleError, Step, Table, TensorDesc, MAX_IO};
use crate::index_check::{check_inputs, CheckError, IndexViolation};
use crate::log;

/// Timing of one [`Executor::run`], in nanoseconds of the device's host clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Timing {
    /// Copying inputs into device memory.
    pub upload_ns: u64,
    /// Handing the recorded queue to the device.
    pub enqueue_ns: u64,
    /// Device time between the first and last timestamp of the queue.
    pub device_ns: u64,
    /// Copying outputs back.
    pub download_ns: u64,
    /// Wall time of the whole call.
    pub total_ns: u64,
}

/// Largest arena [`Executor::load`] allocates: 64 GiB. Every buffer, and so every input, output and
/// state tensor, lies inside the arena (validation checks that), so this also bounds what a caller
/// allocates per output. Far above any real model (openpilot's need a few MiB) and below what a
/// hostile `arena_size` could otherwise ask a device or host to reserve; a larger arena is refused
/// before the device allocates anything. Not a format rule: the bundle still parses.
pub const MAX_ARENA: u64 = 64 << 30;

/// Why loading or running failed.
#[derive(Debug)]
pub enum ExecError<E> {
    /// The bundle failed a check (should have been caught at parse time).
    Bundle(BundleError),
    /// The device reported an error.
    Device(E),
    /// A backend broke the `load_kernel` id contract.
    KernelId { expected: u32, got: u32 },
    /// Wrong number of inputs or outputs passed to `run`.
    Count {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// An input or output buffer has the wrong byte length.
    Size {
        what: &'static str,
        name_index: usize,
        expected: u64,
        got: u64,
    },
    /// The bundle's arena is larger than [`MAX_ARENA`].
    ArenaTooLarge { bytes: u64, limit: u64 },
    /// A launch with partial work groups (`Step::LaunchThreads`) on a device that cannot run them.
    PartialGroups { kernel: u32 },
    /// An index input holds a value outside the range the graph defines (nothing ran;
    /// [`IndexViolation::describe`] names the input and what it indexes).
    IndexRange(IndexViolation),
    /// A range-checked index input was bound in place ([`InputSource::Bound`]), so it cannot be
    /// checked: such inputs must be passed as bytes.
    IndexUnreadable { input: u32 },
}

impl<E: fmt::Display> fmt::Display for ExecError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::Bundle(e) => write!(f, "{e}"),
            ExecError::Device(e) => write!(f, "device error: {e}"),
            ExecError::KernelId { expected, got } => {
                write!(f, "backend bug: kernel {expected} was loaded as id {got}")
            }
            ExecError::Count {
                what,
                expected,
                got,
            } => {
                write!(f, "expected {expected} {what}, got {got}")
            }
            ExecError::Size {
                what,
                name_index,
                expected,
                got,
            } => write!(
                f,
                "{what} {name_index} has {got} bytes, the bundle expects {expected}"
            ),
            ExecError::ArenaTooLarge { bytes, limit } => write!(
                f,
                "the bundle's arena of {bytes} bytes exceeds the {} GiB limit ({limit} bytes); it was not loaded",
                limit >> 30
            ),
            ExecError::PartialGroups { kernel } => write!(
                f,
                "kernel {kernel} is launched with a partial last work group (a fractional tinygrad global size), which this device does not run"

            ),
            ExecError::IndexRange(v) => write!(f, "{v}; nothing was run"),
            ExecError::IndexUnreadable { input } => write!(
                f,
                "input {input} is range-checked (an index) and must be passed as bytes, not bound in place"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl<E: fmt::Debug + fmt::Display> std::error::Error for ExecError<E> {}

impl<E> From<BundleError> for ExecError<E> {
    fn from(e: BundleError) -> Self {
        ExecError::Bundle(e)
    }
}

/// Where a named input or output lives in the arena.
#[derive(Clone, Copy, Debug)]
struct IoSlot {
    offset: u64,
    len: u64,
}

/// A bundle loaded on a device, ready to run.
///
/// Recurrent state (`BufferKind::State` buffers) is initialised from its captured bytes at load and
/// then belongs to the device: every [`run`](Self::run) reads and advances it, nothing re-initialises
/// it except [`reset_state`](Self::reset_state). [`state`](Self::state) and
/// [`read_state`](Self::read_state) inspect it (see `crate::state`).
pub struct Executor<'b, D: Device> {
    pub(crate) bundle: Bundle<'b>,
    pub(crate) device: D,
    queue: D::Queue,
    inputs: heapless::Vec<IoSlot, MAX_IO>,
    outputs: heapless::Vec<IoSlot, MAX_IO>,
}

/// How one input reaches the device in [`Executor::run_with`].
#[derive(Clone, Copy, Debug)]
pub enum InputSource<'a> {
    /// Copy these bytes into the input's arena range before the submit (what [`Executor::run`] does).
    Copy(&'a [u8]),
    /// Do not touch the arena range: the caller's submit hook (or an earlier backend binding, such
    /// as Adreno's `bind_external`) makes the kernels read the input from elsewhere.
    Bound,
}

/// Where input `i` lives in the arena, for backends that bind inputs without a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputRange {
    /// Arena byte offset of the tensor's first byte.
    pub offset: u64,
    /// Byte length of the tensor.
    pub len: u64,
    /// True when the tensor is its whole buffer (offset 0, same size), so no kernel view of the
    /// buffer reaches past the tensor's bytes.
    pub whole_buffer: bool,
}

fn io_slots(
    bundle: &Bundle<'_>,
    table: Table<'_, TensorDesc<'_>>,
) -> Result<heapless::Vec<IoSlot, MAX_IO>, BundleError> {
    let mut out = heapless::Vec::new();
    for (i, t) in table.iter().enumerate() {
        let t = t?;
        let slot = IoSlot {
            offset: bundle.arena_offset(t.buffer, t.offset)?,
            len: t.byte_len(),
        };
        out.push(slot).map_err(|_| BundleError::Invalid {
            what: "too many inputs or outputs",
            index: i as u32,
        })?;
    }
    Ok(out)
}

/// Append one schedule step to `q`, resolving buffer references to arena offsets (shared with
/// [`crate::profile`], which records one queue per step).
pub(crate) fn record_step<Q: Queue>(
    bundle: &Bundle<'_>,
    q: &mut Q,
    step: &Step,
) -> Result<(), ExecError<Q::Error>> {
    match step {
        Step::Launch {
            kernel,
            args,
            global,
            local,
        }
        | Step::LaunchThreads {
            kernel,
            args,
            global,
            local,
            ..
        } => {
            let mut resolved: heapless::Vec<Arg, MAX_PARAMS> = heapless::Vec::new();
            for a in args.iter() {
                let arg = match *a {
                    ArgRef::Buffer {
                        buffer,
                        offset,
                        size,
                    } => Arg::Buffer {
                        offset: bundle.arena_offset(buffer, offset)?,
                        size,
                    },
                    ArgRef::Int(v) => Arg::Int(v),
                };
                // Cannot overflow: `args` has the same capacity.
                let _ = resolved.push(arg);
            }
            match step {
                Step::LaunchThreads { threads, .. } => {
                    let ran = q
                        .exec_threads(KernelId(*kernel), &resolved, *global, *local, *threads)
                        .map_err(ExecError::Device)?;
                    if ran {
                        Ok(())
                    } else {
                        Err(ExecError::PartialGroups { kernel: *kernel })
                    }
                }
                _ => q
                    .exec(KernelId(*kernel), &resolved, *global, *local)
                    .map_err(ExecError::Device),
            }
        }
        Step::Copy { dst, src, size } => {
            let d = bundle.arena_offset(dst.buffer, dst.offset)?;
            let s = bundle.arena_offset(src.buffer, src.offset)?;
            q.copy(d, s, *size).map_err(ExecError::Device)
        }
    }
}

fn record<D: Device>(
    bundle: &Bundle<'_>,
    device: &mut D,
    steps: Table<'_, Step>,
) -> Result<D::Queue, ExecError<D::Error>> {
    let mut q = device.create_queue().map_err(ExecError::Device)?;
    q.timestamp().map_err(ExecError::Device)?;
    for step in steps.iter() {
        record_step(bundle, &mut q, &step?)?;
    }
    q.timestamp().map_err(ExecError::Device)?;
    q.signal(1).map_err(ExecError::Device)?;
    Ok(q)
}

impl<'b, D: Device> Executor<'b, D> {
    /// Check the target, allocate the arena, upload weights, load kernels, run the init phase once
    /// and record the per-inference queue.
    pub fn load(bundle: Bundle<'b>, device: D) -> Result<Self, ExecError<D::Error>> {
        let body = bundle.body();
        let (kernels, arena) = (body.kernels.len(), body.arena_size);
        let loaded = Self::load_unlogged(bundle, device);
        match &loaded {
            Ok(_) => log::info!(
                "bundle loaded: {=usize} kernels, arena {=u64} bytes",
                kernels,
                arena
            ),
            Err(e) => log::error!("bundle load failed: {}", log::debug(e)),
        }
        loaded
    }

    fn load_unlogged(bundle: Bundle<'b>, mut device: D) -> Result<Self, ExecError<D::Error>> {
        let body = bundle.body();
        device
            .check_target(&body.target)
            .map_err(ExecError::Device)?;
        if body.arena_size > MAX_ARENA {
            return Err(ExecError::ArenaTooLarge {
                bytes: body.arena_size,
                limit: MAX_ARENA,
            });
        }
        device
            .alloc_arena(body.arena_size)
            .map_err(ExecError::Device)?;
        for b in body.buffers.iter() {
            let b = b?;
            if b.kind == BufferKind::State {
                crate::state::restore(&bundle, &mut device, &b)?;
            } else if let Some(init) = bundle.init_bytes(&b) {
                device
                    .upload(b.arena_offset, init)
                    .map_err(ExecError::Device)?;
            }
        }
        for (i, k) in body.kernels.iter().enumerate() {
            let k = k?;
            let image = KernelImage {
                name: k.name,
                entry: k.entry,
                binary: k.binary,
                params: &k.params,
                meta: &k.meta,
            };
            let id = device.load_kernel(&image).map_err(ExecError::Device)?;
            if id.0 as usize != i {
                return Err(ExecError::KernelId {
                    expected: i as u32,
                    got: id.0,
                });
            }
        }
        if !body.init.is_empty() {
            let mut init = record(&bundle, &mut device, body.init)?;
            device.submit(&mut init).map_err(ExecError::Device)?;
        }
        let queue = record(&bundle, &mut device, body.run)?;
        let inputs = io_slots(&bundle, body.inputs)?;
        let outputs = io_slots(&bundle, body.outputs)?;
        Ok(Executor {
            bundle,
            device,
            queue,
            inputs,
            outputs,
        })
    }

    /// The bundle this executor runs.
    pub fn bundle(&self) -> &Bundle<'b> {
        &self.bundle
    }

    /// The device (e.g. for backend-specific bindings such as zero-copy inputs).
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    /// Run one inference (one step of a stateful model): `inputs` and `outputs` are raw
    /// little-endian tensors in the bundle's input and output order, each exactly the declared byte
    /// length. State buffers are read and advanced in place, never re-initialised.
    pub fn run(
        &mut self,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> Result<Timing, ExecError<D::Error>> {
        check_io("inputs", &self.inputs, inputs.iter().map(|b| b.len()))?;
        self.run_checked(
            |i| inputs.get(i).map(|d| InputSource::Copy(d)),
            outputs,
            |d, q| d.submit(q),
        )
    }

    /// [`run`](Self::run) with a say in how inputs arrive: each input is [`InputSource::Copy`]
    /// (uploaded as `run` does) or [`InputSource::Bound`] (left alone), and the recorded queue is
    /// handed to `submit` instead of [`Device::submit`] — the hook a backend's zero-copy binding
    /// uses. `Copy` inputs must have the declared byte length; `Bound` ones are the hook's business.
    pub fn run_with<F>(
        &mut self,
        inputs: &[InputSource<'_>],
        outputs: &mut [&mut [u8]],
        submit: F,
    ) -> Result<Timing, ExecError<D::Error>>
    where
        F: FnOnce(&mut D, &mut D::Queue) -> Result<SubmitTiming, D::Error>,
    {
        if inputs.len() != self.inputs.len() {
            return Err(ExecError::Count {
                what: "inputs",
                expected: self.inputs.len(),
                got: inputs.len(),
            });
        }
        for (i, (slot, src)) in self.inputs.iter().zip(inputs).enumerate() {
            if let InputSource::Copy(d) = src {
                if slot.len != d.len() as u64 {
                    return Err(ExecError::Size {
                        what: "inputs",
                        name_index: i,
                        expected: slot.len,
                        got: d.len() as u64,
                    });
                }
            }
        }
        self.run_checked(|i| inputs.get(i).copied(), outputs, submit)
    }

    /// The device and the recorded per-inference queue, for backend bindings that persist across
    /// runs (e.g. Adreno's `bind_external` of a camera buffer).
    pub fn device_and_queue_mut(&mut self) -> (&mut D, &mut D::Queue) {
        (&mut self.device, &mut self.queue)
    }

    /// Where input `i` lives in the arena (`None` past the last input).
    pub fn input_range(&self, i: usize) -> Option<InputRange> {
        let slot = self.inputs.get(i)?;
        let t = self.bundle.body().inputs.get(i).ok()?;
        let buf = self.bundle.body().buffers.get(t.buffer as usize).ok()?;
        Some(InputRange {
            offset: slot.offset,
            len: slot.len,
            whole_buffer: t.offset == 0 && buf.size == slot.len,
        })
    }

    /// The body of `run`/`run_with` once the inputs are checked.
    fn run_checked<'i, F>(
        &mut self,
        input: impl Fn(usize) -> Option<InputSource<'i>>,
        outputs: &mut [&mut [u8]],
        submit: F,
    ) -> Result<Timing, ExecError<D::Error>>
    where
        F: FnOnce(&mut D, &mut D::Queue) -> Result<SubmitTiming, D::Error>,
    {
        check_io("outputs", &self.outputs, outputs.iter().map(|b| b.len()))?;
        if !self.bundle.index_checks().is_empty() {
            check_inputs(&self.bundle, |i| match input(i) {
                Some(InputSource::Copy(d)) => Some(d),
                _ => None,
            })
            .map_err(|e| match e {
                CheckError::Range(v) => ExecError::IndexRange(v),
                CheckError::Unreadable(input) => ExecError::IndexUnreadable { input },
            })?;
        }
        let t0 = self.device.now_ns();
        for (i, slot) in self.inputs.iter().enumerate() {
            if let Some(InputSource::Copy(data)) = input(i) {
                self.device
                    .upload(slot.offset, data)
                    .map_err(ExecError::Device)?;
            }
        }
        let t1 = self.device.now_ns();
        let sub = submit(&mut self.device, &mut self.queue).map_err(|e| {
            log::error!("submit failed: {}", log::debug(&e));
            ExecError::Device(e)
        })?;
        let t2 = self.device.now_ns();
        for (slot, out) in self.outputs.iter().zip(outputs.iter_mut()) {
            self.device
                .download(slot.offset, out)
                .map_err(ExecError::Device)?;
        }
        let t3 = self.device.now_ns();
        Ok(Timing {
            upload_ns: t1 - t0,
            enqueue_ns: sub.enqueue_ns,
            device_ns: sub.device_ns.min(t2 - t1),
            download_ns: t3 - t2,
            total_ns: t3 - t0,
        })
    }

    /// Byte length and dtype of output `i`.
    pub fn output_desc(&self, i: usize) -> Result<TensorDesc<'b>, BundleError> {
        self.bundle.body().outputs.get(i)
    }

    /// Byte length and dtype of input `i`.
    pub fn input_desc(&self, i: usize) -> Result<TensorDesc<'b>, BundleError> {
        self.bundle.body().inputs.get(i)
    }
}

fn check_io<E>(
    what: &'static str,
    slots: &[IoSlot],
    lens: impl ExactSizeIterator<Item = usize>,
) -> Result<(), ExecError<E>> {
    if lens.len() != slots.len() {
        return Err(ExecError::Count {
            what,
            expected: slots.len(),
            got: lens.len(),
        });
    }
    for (i, (slot, len)) in slots.iter().zip(lens).enumerate() {
        if slot.len != len as u64 {
            return Err(ExecError::Size {
                what,
                name_index: i,
                expected: slot.len,
                got: len as u64,
            });
        }
    }
    Ok(())
}
