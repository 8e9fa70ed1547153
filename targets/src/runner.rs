//! Platform assembly: pick the backend a bundle needs on this machine, load the bundle on it and hand
//! back a device-independent [`LoadedModel`]; which device may run which bundle is `choice`.
use anyhow::Context;
use modelrt_core::bundle::Bundle;
use modelrt_core::{Executor, StateInfo, Timing};
use modelrt_hal::device::Device;
use modelrt_hal::target::KernelMeta;

use std::sync::Arc;

use crate::bundle_file::FileMap;
use crate::cpu::{CpuDevice, WeightBinding};
use crate::frame::{copy_frame, cpu_frame, FrameInput, InputPath};

mod choice;

use choice::{devices_for, with_emulated_hint};
pub use choice::{resolve_device, DeviceChoice};

/// A bundle loaded on some device.
pub trait LoadedModel<'b> {
    /// The bundle.
    fn bundle(&self) -> &Bundle<'b>;
    /// Run one inference on raw tensors (bundle input/output order).
    fn run(&mut self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> anyhow::Result<Timing>;
    /// Human-readable device description.
    fn device_name(&self) -> String;
    /// False when the device only models the hardware and computes no outputs.
    fn computes_outputs(&self) -> bool;
    /// The bundle's state buffers (recurrent state that persists across `run`s), in table order.
    fn states(&self) -> Vec<StateInfo<'b>>;
    /// Current bytes of state buffer `i` (an index into [`states`](Self::states)).
    fn read_state(&mut self, i: usize) -> anyhow::Result<Vec<u8>>;
    /// Put every state buffer back to its load-time contents.
    fn reset_state(&mut self) -> anyhow::Result<()>;
    /// Run one frame whose inputs may be borrowed buffers read in place (see [`crate::frame`]);
    /// `paths[i]` reports how input `i` reached the kernels.
    fn run_frame(
        &mut self,
        inputs: &mut [FrameInput<'_>],
        outputs: &mut [&mut [u8]],
        paths: &mut [InputPath],
    ) -> anyhow::Result<Timing>;
    /// USB transfers issued so far on the link to the device (the driver's transfer counters), for
    /// devices behind a USB bridge; `None` for others.
    fn usb_counts(&mut self) -> Option<modelrt_asm24::counting::TransferCounts> {
        None
    }
    /// Where the device keeps the model's buffers, for devices that report it (the CPU); `None`
    /// for others.
    fn memory(&mut self) -> Option<MemoryReport> {
        None
    }
}

/// The CPU backend's memory after load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryReport {
    /// The bundle's arena size (the device's arena mapping).
    pub arena_bytes: u64,
    /// Bytes of the arena resident right now (`mincore`), `None` if the OS query failed.
    pub arena_resident: Option<u64>,
    /// Weights read in place from the mapped bundle file (none when the file was read).
    pub weights: WeightBinding,
}

/// How a backend runs a frame (the CPU binds borrowed inputs in place; others copy).
type FrameFn<D> =
    for<'e, 'b, 'i, 'o, 'p, 'q> fn(
        &'e mut Executor<'b, D>,
        &'i mut [FrameInput<'p>],
        &'o mut [&'q mut [u8]],
        &'o mut [InputPath],
    )
        -> Result<Timing, modelrt_core::ExecError<<D as Device>::Error>>;

/// How a backend reports its memory after load.
type MemoryFn<D> = fn(&mut D, &WeightBinding) -> MemoryReport;

struct Loaded<'b, D: Device> {
    exec: Executor<'b, D>,
    name: String,
    computes: bool,
    frame: FrameFn<D>,
    /// Reads the device's USB transfer counters (devices behind a USB bridge).
    usb: Option<fn(&mut D) -> modelrt_asm24::counting::TransferCounts>,
    /// Reports the device's memory (the CPU), with the weights it binds in place.
    memory: Option<(MemoryFn<D>, WeightBinding)>,
}

impl<'b, D: Device> LoadedModel<'b> for Loaded<'b, D>
where
    D::Error: Send + Sync + 'static,
{
    fn bundle(&self) -> &Bundle<'b> {
        self.exec.bundle()
    }
    fn run(&mut self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> anyhow::Result<Timing> {
        self.exec
            .run(inputs, outputs)
            .map_err(|e| anyhow::anyhow!("{e}"))
    }
    fn device_name(&self) -> String {
        self.name.clone()
    }
    fn computes_outputs(&self) -> bool {
        self.computes
    }
    fn states(&self) -> Vec<StateInfo<'b>> {
        (0..self.exec.state_count())
            .filter_map(|i| self.exec.state(i))
            .collect()
    }
    fn read_state(&mut self, i: usize) -> anyhow::Result<Vec<u8>> {
        let size = self
            .exec
            .state(i)
            .with_context(|| format!("no state buffer {i}"))?
            .size;
        let mut out = vec![0u8; usize::try_from(size)?];
        self.exec
            .read_state(i, &mut out)
            .map_err(|e| anyhow::anyhow!("cannot read state buffer {i}: {e}"))?;
        Ok(out)
    }
    fn reset_state(&mut self) -> anyhow::Result<()> {
        self.exec
            .reset_state()
            .map_err(|e| anyhow::anyhow!("cannot reset state: {e}"))
    }
    fn run_frame(
        &mut self,
        inputs: &mut [FrameInput<'_>],
        outputs: &mut [&mut [u8]],
        paths: &mut [InputPath],
    ) -> anyhow::Result<Timing> {
        (self.frame)(&mut self.exec, inputs, outputs, paths).map_err(|e| anyhow::anyhow!("{e}"))
    }
    fn usb_counts(&mut self) -> Option<modelrt_asm24::counting::TransferCounts> {
        self.usb.map(|f| f(self.exec.device_mut()))
    }
    fn memory(&mut self) -> Option<MemoryReport> {
        let (f, w) = self.memory.as_ref()?;
        Some(f(self.exec.device_mut(), w))
    }
}

fn cpu_memory(dev: &mut CpuDevice, weights: &WeightBinding) -> MemoryReport {
    MemoryReport {
        arena_bytes: dev.arena_size(),
        arena_resident: dev.arena_resident_bytes(),
        weights: weights.clone(),
    }
}

fn boxed<'b, D: Device + 'b>(
    bundle: Bundle<'b>,
    dev: D,
    name: String,
    computes: bool,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>>
where
    D::Error: Send + Sync + 'static,
{
    Ok(Box::new(Loaded::new(
        bundle,
        dev,
        name,
        computes,
        copy_frame::<D>,
    )?))
}

impl<'b, D: Device + 'b> Loaded<'b, D> {
    /// Load `bundle` on `dev`, with no USB counters or memory report (callers that have them set
    /// those fields).
    fn new(
        bundle: Bundle<'b>,
        dev: D,
        name: String,
        computes: bool,
        frame: FrameFn<D>,
    ) -> anyhow::Result<Self>
    where
        D::Error: Send + Sync + 'static,
    {
        let exec =
            Executor::load(bundle, dev).map_err(|e| anyhow::anyhow!("cannot load bundle: {e}"))?;
        Ok(Loaded {
            exec,
            name,
            computes,
            frame,
            usb: None,
            memory: None,
        })
    }
}

/// Options for loading.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    pub device: DeviceChoice,
    /// CPU worker threads (0 = as many as the kernels were split into, capped by the host's cores;
    /// see [`cpu_threads`]).
    pub threads: usize,
}

/// CPU worker threads for `bundle` on this machine: [`cpu_threads_for`] with its core count.
pub fn cpu_threads(bundle: &Bundle<'_>, requested: usize) -> usize {
    cpu_threads_for(
        bundle,
        requested,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    )
}

/// CPU worker threads for `bundle` on a machine with `cores` cores: `requested`, or for 0 as many
/// as its kernels were split into (the largest `core_id` split), capped by `cores` — more would
/// idle, fewer would time-slice.
pub fn cpu_threads_for(bundle: &Bundle<'_>, requested: usize, cores: usize) -> usize {
    if requested != 0 {
        return requested;
    }
    let split = bundle
        .body()
        .kernels
        .iter()
        .filter_map(|k| match k.ok()?.meta {
            KernelMeta::Cpu(m) => Some(m.threads as usize),
            _ => None,
        })
        .max()
        .unwrap_or(1);
    split.min(cores).max(1)
}

/// Load `bundle` on the device `opts` selects (weights are copied into the device's memory).
pub fn load<'b>(
    bundle: Bundle<'b>,
    opts: LoadOptions,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    load_mapped(bundle, None, opts)
}

/// [`load`] of a bundle parsed from the bytes of `map` (a read-only mapping of the bundle file,
/// see [`crate::bundle_file`]): the CPU backend reads the weights the bundle never writes in place
/// from it instead of copying them into the arena (`crate::cpu::weights`). Other backends copy.
pub fn load_mapped<'b>(
    bundle: Bundle<'b>,
    map: Option<&Arc<FileMap>>,
    opts: LoadOptions,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    load_with(bundle, map, opts, None)
}

/// [`load_mapped`] with the AMD firmware directory given on the command line (`--firmware-dir`,
/// resolved by [`crate::amd_device::resolve_firmware_dir`]).
pub fn load_with<'b>(
    bundle: Bundle<'b>,
    map: Option<&Arc<FileMap>>,
    opts: LoadOptions,
    firmware_dir: Option<&std::path::Path>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    let choice = resolve_device(opts.device, &bundle.body().target)?;
    open_on(bundle, map, opts, choice, firmware_dir)
}

/// Open `choice` (already checked against the bundle's target) and load the bundle on it.
fn open_on<'b>(
    bundle: Bundle<'b>,
    map: Option<&Arc<FileMap>>,
    opts: LoadOptions,
    choice: DeviceChoice,
    firmware_dir: Option<&std::path::Path>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    // For the real devices' open errors.
    let emu = devices_for(&bundle.body().target).1;
    match choice {
        DeviceChoice::Dsp | DeviceChoice::DspEmu => {
            let backend = if choice == DeviceChoice::Dsp {
                crate::dsp::model::Backend::Device
            } else {
                crate::dsp::model::Backend::Emulated
            };
            let model = crate::dsp::model::DspModel::new(bundle, backend).map_err(|e| {
                if choice == DeviceChoice::Dsp {
                    with_emulated_hint(e, emu)
                } else {
                    e
                }
            })?;
            Ok(Box::new(model))
        }
        DeviceChoice::Qcom => {
            let (dev, name) = crate::qcom_device::open(crate::qcom_device::DEFAULT_NODE)
                .map_err(|e| with_emulated_hint(e, emu))?;
            boxed(bundle, dev, name, true)
        }
        DeviceChoice::Usb | DeviceChoice::UsbEmu => {
            let emulated = choice == DeviceChoice::UsbEmu;
            let real_hint = |e| {
                if emulated {
                    e
                } else {
                    with_emulated_hint(e, emu)
                }
            };
            if !emulated {
                // An absent bridge is the first thing to report (with the emulated device's name).
                crate::amd_device::require_bridge().map_err(real_hint)?;
            }
            let dir = crate::amd_device::resolve_firmware_dir(firmware_dir)?;
            let (dev, name) = crate::amd_device::open(emulated, &dir).map_err(real_hint)?;
            Ok(Box::new(Loaded {
                usb: Some(crate::amd_device::transfer_counts),
                ..Loaded::new(
                    bundle,
                    dev,
                    name,
                    true,
                    copy_frame::<crate::amd_device::UsbAmdDevice>,
                )?
            }))
        }
        DeviceChoice::QcomEmu => {
            let model =
                modelrt_qcom::emu::kgsl::KgslModel::new(modelrt_qcom::emu::kgsl::ModelConfig {
                    execute_shaders: true,
                    ..Default::default()
                });
            let dev = modelrt_qcom::adreno::AdrenoDevice::open(model, Default::default())
                .context("cannot bring up the KGSL model")?;
            boxed(
                bundle,
                dev,
                "qcom-emu (KGSL model: streams validated, kernels run by the IR3 interpreter)"
                    .into(),
                true,
            )
        }
        _ => {
            let mut dev = CpuDevice::new(cpu_threads(&bundle, opts.threads))
                .context("cannot create the CPU device")?;
            let weights = match map {
                Some(m) => dev
                    .bind_weights(&bundle, m)
                    .context("cannot bind the weights in place")?,
                None => WeightBinding::default(),
            };
            let n = dev.threads();
            let name = format!("cpu ({n} {})", if n == 1 { "thread" } else { "threads" });
            Ok(Box::new(Loaded {
                memory: Some((cpu_memory, weights)),
                ..Loaded::new(bundle, dev, name, true, cpu_frame)?
            }))
        }
    }
}
