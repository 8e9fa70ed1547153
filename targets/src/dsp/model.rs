//! A hexagon bundle on the FastRPC engine ([`modelrt_hexagon::fastrpc::model_run`]): `--device dsp` over the device
//! nodes (Linux; never run on a real DSP), `--device dsp-emu` over the FastRPC model
//! ([`modelrt_hexagon::emu::device`]) whose executor runs the model library under qemu-hexagon. Both are the same
//! code: load once (session, one ION arena, weights, the model library opened once, the init phase), then one
//! FastRPC invoke per [`LoadedModel::run`] with inputs and outputs moved through the arena's host mapping.
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use modelrt_core::bundle::{ArgRef, BufferKind, Bundle, Step as BStep};
use modelrt_core::{StateInfo, Timing};
use modelrt_hal::target::{ParamKind, Target};
use modelrt_hexagon::emu::device::{FastRpcModel, Qemu};
use modelrt_hexagon::fastrpc::engine::{Kernel, Op, View};
use modelrt_hexagon::fastrpc::model_run::{ModelPlan, ModelRun};
use modelrt_hexagon::fastrpc::session::{Session, SessionConfig};
use modelrt_hexagon::fastrpc::FastRpcIo;

use modelrt_platform::frame::{FrameInput, InputPath};
use modelrt_platform::LoadedModel;

/// The kernel record the exporter appends for the model library (xtask/exporter/mrt/dsp.py `MODEL_LIBRARY`).
pub const MODEL_LIBRARY: &str = "modelrt_schedule";
/// How long the emulated device waits for a reverse call or a hung invoke.
const EMU_WAIT: Duration = Duration::from_secs(120);

fn u32_of(v: u64, what: &str) -> Result<u32> {
    u32::try_from(v).with_context(|| format!("{what} {v} does not fit 32 bits"))
}

/// The engine's ops for bundle steps (launch arguments split into buffer views and 8-byte scalar slots).
pub(crate) fn ops(
    b: &Bundle<'_>,
    steps: impl Iterator<Item = Result<BStep, modelrt_core::bundle::BundleError>>,
) -> Result<Vec<Op>> {
    let body = b.body();
    let mut out = Vec::new();
    for step in steps {
        match step? {
            BStep::Launch { kernel, args, .. } => {
                let k = body.kernels.get(kernel as usize)?;
                let (mut bufs, mut vals) = (Vec::new(), Vec::new());
                for (a, p) in args.iter().zip(k.params.iter()) {
                    match (*a, p.kind) {
                        (
                            ArgRef::Buffer {
                                buffer,
                                offset,
                                size,
                            },
                            ParamKind::Buffer,
                        ) => bufs.push(View {
                            buffer,
                            offset: u32_of(offset, "offset")?,
                            size: u32_of(size, "size")?,
                        }),
                        (ArgRef::Int(v), ParamKind::Var | ParamKind::CoreId) => {
                            vals.push(u64::from(v as u32))
                        }
                        _ => bail!("kernel {}: argument does not match its parameter", k.name),
                    }
                }
                out.push(Op::Launch { kernel, bufs, vals });
            }
            BStep::Copy { dst, src, size } => {
                let size = u32_of(size, "copy size")?;
                out.push(Op::Copy {
                    dst: View {
                        buffer: dst.buffer,
                        offset: u32_of(dst.offset, "offset")?,
                        size,
                    },
                    src: View {
                        buffer: src.buffer,
                        offset: u32_of(src.offset, "offset")?,
                        size,
                    },
                });
            }
        }
    }
    Ok(out)
}

/// The engine's plan for a hexagon bundle: its model library, kernel names by index, buffers, init and run.
pub fn plan(b: &Bundle<'_>) -> Result<ModelPlan> {
    let body = b.body();
    if !matches!(body.target, Target::Hexagon { .. }) {
        bail!(
            "this bundle targets {}, not the Hexagon DSP",
            body.target.family()
        );
    }
    let mut p = ModelPlan::default();
    for k in body.kernels.iter() {
        let k = k?;
        if k.name == MODEL_LIBRARY {
            p.library = Some(Kernel {
                name: k.name.to_string(),
                lib: Arc::from(k.binary),
            });
        }
        p.kernel_names.push(k.name.to_string());
    }
    if p.library.is_none() {
        bail!("this hexagon bundle has no DSP model library ({MODEL_LIBRARY}); recompile it with this modelrt");
    }
    for buf in body.buffers.iter() {
        p.buffers.push(buf?.size);
    }
    p.init = ops(b, body.init.iter())?;
    p.run = ops(b, body.run.iter())?;
    Ok(p)
}

/// The same bundle as tinygrad runs it: one library per kernel (the model library left out), init and run ops
/// in order, for [`modelrt_hexagon::fastrpc::engine::Loaded`] (the per-launch engine; used to count tinygrad's
/// open/invoke/close pattern against the one-invoke step).
pub fn launch_plan(b: &Bundle<'_>) -> Result<modelrt_hexagon::fastrpc::engine::Plan> {
    let body = b.body();
    let mut p = modelrt_hexagon::fastrpc::engine::Plan::default();
    for k in body.kernels.iter() {
        let k = k?;
        p.kernels.push(Kernel {
            name: k.name.to_string(),
            lib: Arc::from(k.binary),
        });
    }
    for buf in body.buffers.iter() {
        p.buffers.push(buf?.size);
    }
    p.ops = ops(b, body.init.iter().chain(body.run.iter()))?;
    Ok(p)
}

/// Which FastRPC device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `/dev/adsprpc-smd` and `/dev/ion` (Linux).
    Device,
    /// The FastRPC model, kernels under qemu-hexagon.
    Emulated,
}

/// A hexagon bundle loaded on a FastRPC session.
pub struct DspModel<'b> {
    bundle: Bundle<'b>,
    run: Option<ModelRun>,
    model: Option<Arc<FastRpcModel>>,
    /// (buffer, offset) of every input and output tensor.
    inputs: Vec<(u32, u64, usize)>,
    outputs: Vec<(u32, u64, usize)>,
}

fn open_device() -> Result<Arc<dyn FastRpcIo>> {
    #[cfg(target_os = "linux")]
    {
        Ok(Arc::new(
            modelrt_hexagon::fastrpc::real::RealFastRpc::open()?
        ))
    }
    #[cfg(not(target_os = "linux"))]
    {
        bail!("the FastRPC device exists only on Linux; use --device dsp-emu")
    }
}

/// Where the device's files are.
#[derive(Clone, Debug)]
pub struct DspOptions {
    /// File-system root holding `dsp/cdsp/fastrpc_shell_3` (a device's `/`).
    pub root: std::path::PathBuf,
    /// Where `testsig-0x<serial>.so` is served from (device only).
    pub testsig_dir: Option<std::path::PathBuf>,
}

impl Default for DspOptions {
    /// `/`, and the test-signature directory from `MODELRT_TESTSIG_DIR` if set.
    fn default() -> Self {
        DspOptions {
            root: "/".into(),
            testsig_dir: std::env::var_os("MODELRT_TESTSIG_DIR").map(Into::into),
        }
    }
}

impl<'b> DspModel<'b> {
    /// [`DspModel::open`] with default options.
    pub fn new(bundle: Bundle<'b>, backend: Backend) -> Result<Self> {
        Self::open(bundle, backend, &DspOptions::default())
    }

    /// Load `bundle` on `backend`: session bring-up, arena, weights, model library, init phase.
    pub fn open(bundle: Bundle<'b>, backend: Backend, opts: &DspOptions) -> Result<Self> {
        let p = plan(&bundle)?;
        for b in bundle.body().buffers.iter() {
            if b?.kind == BufferKind::State {
                bail!("the DSP backends do not support bundles with state buffers yet");
            }
        }
        let (io, model, shell): (Arc<dyn FastRpcIo>, _, _) = match backend {
            Backend::Emulated => {
                modelrt_hexagon::emu::harness::qemu::check_qemu()?;
                let m = Arc::new(FastRpcModel::new(Box::new(Qemu), EMU_WAIT));
                // the model only checks that INIT names an ION buffer holding an ELF
                let mut shell = b"\x7fELF".to_vec();
                shell.resize(4096, 0);
                (m.clone(), Some(m), shell)
            }
            Backend::Device => {
                let shell = modelrt_hexagon::fastrpc::selftest::find_shell(&opts.root)
                    .with_context(|| {
                        format!(
                            "no cDSP shell (fastrpc_shell_3) in {} or {}",
                            opts.root.join("dsp").display(),
                            opts.root.join("vendor/dsp").display()
                        )
                    })?;
                let bytes = std::fs::read(&shell)
                    .with_context(|| format!("reading {}", shell.display()))?;
                (open_device()?, None, bytes)
            }
        };
        let cfg = SessionConfig {
            shell,
            testsig_dir: opts.testsig_dir.clone(),
            listener_timeout: Duration::from_secs(2),
        };
        let session = Session::open(io, &cfg).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut run = ModelRun::load(session, &p).map_err(|e| anyhow::anyhow!("{e}"))?;
        let body = bundle.body();
        for (i, buf) in body.buffers.iter().enumerate() {
            if let Some(init) = bundle.init_bytes(&buf?) {
                run.write(i as u32, 0, init)
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
            }
        }
        run.init().map_err(|e| anyhow::anyhow!("{e}"))?;
        let tensors =
            |t: &modelrt_core::bundle::Table<'b, modelrt_core::bundle::TensorDesc<'b>>| {
                t.iter()
                    .map(|t| {
                        let t = t?;
                        Ok((t.buffer, t.offset, usize::try_from(t.byte_len())?))
                    })
                    .collect::<Result<Vec<_>>>()
            };
        let (inputs, outputs) = (tensors(&body.inputs)?, tensors(&body.outputs)?);
        Ok(DspModel {
            bundle,
            run: Some(run),
            model,
            inputs,
            outputs,
        })
    }

    /// The FastRPC model behind an emulated session (its call counters).
    pub fn fastrpc_model(&self) -> Option<&FastRpcModel> {
        self.model.as_deref()
    }

    /// Launches per step the bundle's schedule holds.
    pub fn launches_per_step(&self) -> u32 {
        self.run.as_ref().map_or(0, ModelRun::launches_per_step)
    }

    /// Close the library, free the arena and close the session.
    pub fn close(mut self) -> Result<()> {
        match self.run.take() {
            Some(r) => r.close().map_err(|e| anyhow::anyhow!("{e}")),
            None => Ok(()),
        }
    }
}

impl<'b> LoadedModel<'b> for DspModel<'b> {
    fn bundle(&self) -> &Bundle<'b> {
        &self.bundle
    }

    fn run(&mut self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<Timing> {
        let t = std::time::Instant::now();
        let Some(run) = self.run.as_mut() else {
            bail!("the DSP model is closed");
        };
        if inputs.len() != self.inputs.len() || outputs.len() != self.outputs.len() {
            bail!(
                "{} inputs / {} outputs given, the bundle has {} / {}",
                inputs.len(),
                outputs.len(),
                self.inputs.len(),
                self.outputs.len()
            );
        }
        for (&(b, off, len), data) in self.inputs.iter().zip(inputs) {
            if data.len() != len {
                bail!("input of {} bytes, the tensor has {len}", data.len());
            }
            run.write(b, off, data)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        let st = run.step().map_err(|e| anyhow::anyhow!("{e}"))?;
        for (&(b, off, len), dst) in self.outputs.iter().zip(outputs.iter_mut()) {
            if dst.len() != len {
                bail!("output buffer of {} bytes, the tensor has {len}", dst.len());
            }
            run.read(b, off, dst).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        Ok(Timing {
            device_ns: st.dsp_us.saturating_mul(1000),
            total_ns: u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX),
            ..Default::default()
        })
    }

    fn device_name(&self) -> String {
        if self.model.is_some() {
            "dsp-emu (FastRPC model; the model library runs under qemu-hexagon, one invoke per step; device time = qemu instructions / 1000 read as µs)".into()
        } else {
            "dsp (Hexagon cDSP over FastRPC; UNVERIFIED on hardware)".into()
        }
    }

    fn computes_outputs(&self) -> bool {
        true
    }

    fn states(&self) -> Vec<StateInfo<'b>> {
        Vec::new()
    }

    fn read_state(&mut self, i: usize) -> Result<Vec<u8>> {
        bail!("state buffer {i} does not exist (DSP bundles have no state here)")
    }

    fn reset_state(&mut self) -> Result<()> {
        Ok(())
    }

    fn run_frame(
        &mut self,
        inputs: &mut [FrameInput<'_>],
        outputs: &mut [&mut [u8]],
        paths: &mut [InputPath],
    ) -> Result<Timing> {
        let ins: Vec<&[u8]> = inputs
            .iter()
            .map(|i| match i {
                FrameInput::Copy(b) => *b,
                FrameInput::Borrow(b) => &**b,
            })
            .collect();
        for p in paths.iter_mut() {
            *p = InputPath::Copied;
        }
        self.run(&ins, outputs)
    }
}
