//! Platform assembly: pick the backend a bundle needs on this machine, load the bundle on it and hand
//! back a device-independent [`LoadedModel`].
use anyhow::{bail, Context};
use modelrt_core::bundle::Bundle;
use modelrt_core::{Executor, Timing};
use modelrt_hal::device::Device;
use modelrt_hal::target::{KernelMeta, Target};

use crate::cpu::CpuDevice;

/// Which backend to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceChoice {
    /// The backend the bundle's target calls for.
    Auto,
    /// Host CPU (tinygrad CLANG kernels).
    Cpu,
    /// Qualcomm Adreno through KGSL (comma devices).
    Qcom,
    /// The KGSL model: validates every command stream an Adreno bundle submits and executes its
    /// kernels with the IR3 interpreter, so outputs are computed (for development without a comma device).
    QcomEmu,
}

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
}

struct Loaded<'b, D: Device> {
    exec: Executor<'b, D>,
    name: String,
    computes: bool,
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
    let exec =
        Executor::load(bundle, dev).map_err(|e| anyhow::anyhow!("cannot load bundle: {e}"))?;
    Ok(Box::new(Loaded {
        exec,
        name,
        computes,
    }))
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

/// Load `bundle` on the device `opts` selects.
pub fn load<'b>(
    bundle: Bundle<'b>,
    opts: LoadOptions,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    let target = bundle.body().target;
    let choice = match (opts.device, target) {
        (DeviceChoice::Auto, Target::Cpu { .. }) => DeviceChoice::Cpu,
        (DeviceChoice::Auto, Target::Adreno { .. }) => DeviceChoice::Qcom,
        (DeviceChoice::Auto, other) => bail!(
            "this modelrt has no runtime backend for {} bundles yet (the bundle is valid; it cannot run here)",
            other.family()
        ),
        (c, _) => c,
    };
    match choice {
        DeviceChoice::Qcom => {
            let (dev, name) = crate::qcom_device::open(crate::qcom_device::DEFAULT_NODE)?;
            boxed(bundle, dev, name, true)
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
            let dev = CpuDevice::new(cpu_threads(&bundle, opts.threads))
                .context("cannot create the CPU device")?;
            let name = format!("cpu ({} threads)", dev.threads());
            boxed(bundle, dev, name, true)
        }
    }
}
