//! `--device dsp-emu`: a hexagon bundle as a [`LoadedModel`] whose every `run` computes real outputs under
//! qemu-hexagon ([`crate::dsp_emu`]). Execution only: the FastRPC protocol model (ION, `adsprpc`, listener) is not
//! built yet, and the reported device time is qemu's instruction count read as nanoseconds at a pretend 1 GHz.
use anyhow::bail;
use modelrt_core::bundle::{BufferKind, Bundle};
use modelrt_core::{StateInfo, Timing};
use modelrt_hal::target::Target;

use crate::frame::{FrameInput, InputPath};
use crate::runner::LoadedModel;

/// A hexagon bundle run under qemu-hexagon.
pub struct DspEmuModel<'b> {
    bundle: Bundle<'b>,
}

impl<'b> DspEmuModel<'b> {
    /// Accept a hexagon bundle without state buffers (recurrent state is not supported on this path yet).
    pub fn new(bundle: Bundle<'b>) -> anyhow::Result<Self> {
        if !matches!(bundle.body().target, Target::Hexagon { .. }) {
            bail!(
                "--device dsp-emu runs Hexagon bundles; this one targets {}",
                bundle.body().target.family()
            );
        }
        for b in bundle.body().buffers.iter() {
            if b?.kind == BufferKind::State {
                bail!("--device dsp-emu does not support bundles with state buffers yet");
            }
        }
        modelrt_qcom::emu::hexagon::qemu::check_qemu()?;
        Ok(DspEmuModel { bundle })
    }
}

impl<'b> LoadedModel<'b> for DspEmuModel<'b> {
    fn bundle(&self) -> &Bundle<'b> {
        &self.bundle
    }

    fn run(&mut self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> anyhow::Result<Timing> {
        let t = std::time::Instant::now();
        let r = crate::dsp_emu::run_bundle(&self.bundle, inputs)?;
        if outputs.len() != r.outputs.len() {
            bail!(
                "{} output buffers given, the bundle has {}",
                outputs.len(),
                r.outputs.len()
            );
        }
        for (dst, src) in outputs.iter_mut().zip(&r.outputs) {
            if dst.len() != src.len() {
                bail!(
                    "output buffer of {} bytes, the tensor has {}",
                    dst.len(),
                    src.len()
                );
            }
            dst.copy_from_slice(src);
        }
        let total_ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Ok(Timing {
            device_ns: r.steps.iter().map(|s| u64::from(s.instructions)).sum(),
            total_ns,
            ..Default::default()
        })
    }

    fn device_name(&self) -> String {
        "dsp-emu (kernels executed under qemu-hexagon; FastRPC not modelled yet; device time = qemu instructions at a pretend 1 GHz)".into()
    }

    fn computes_outputs(&self) -> bool {
        true
    }

    fn states(&self) -> Vec<StateInfo<'b>> {
        Vec::new()
    }

    fn read_state(&mut self, i: usize) -> anyhow::Result<Vec<u8>> {
        bail!("state buffer {i} does not exist (dsp-emu bundles have no state)")
    }

    fn reset_state(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    fn run_frame(
        &mut self,
        inputs: &mut [FrameInput<'_>],
        outputs: &mut [&mut [u8]],
        paths: &mut [InputPath],
    ) -> anyhow::Result<Timing> {
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
