//! `modelrt bench --zero-copy`: per-input frame buffers that the model reads in place. Each buffer is
//! 64-byte aligned storage owned here, standing in for the camera buffer a device would hand over;
//! filling it with the next frame happens outside the timed run, as the camera's write would.
use modelrt_core::Timing;
use modelrt_cpu::borrow::BORROW_ALIGN;
use modelrt_targets::frame::{FrameInput, InputPath};
use modelrt_targets::runner::LoadedModel;

/// One aligned buffer per bundle input.
pub(super) struct FrameBuffers {
    storage: Vec<Vec<u8>>,
    lens: Vec<usize>,
    /// How each input reached the kernels in the last frame.
    pub paths: Vec<InputPath>,
}

/// Offset of the first `BORROW_ALIGN`-aligned byte of `v`.
fn skip(v: &[u8]) -> usize {
    let a = BORROW_ALIGN as usize;
    (a - v.as_ptr() as usize % a) % a
}

impl FrameBuffers {
    /// Buffers of the given byte lengths.
    pub fn new(lens: &[usize]) -> Self {
        FrameBuffers {
            storage: lens
                .iter()
                .map(|n| vec![0u8; n + BORROW_ALIGN as usize])
                .collect(),
            lens: lens.to_vec(),
            paths: vec![InputPath::Copied; lens.len()],
        }
    }

    /// Run one frame: copy `frame` into the buffers (untimed, the camera's write), then run the model
    /// with every buffer borrowed.
    pub fn run(
        &mut self,
        model: &mut dyn LoadedModel<'_>,
        frame: &[&[u8]],
        outputs: &mut [Vec<u8>],
    ) -> anyhow::Result<Timing> {
        let mut inputs: Vec<FrameInput<'_>> = Vec::with_capacity(frame.len());
        for ((s, n), data) in self.storage.iter_mut().zip(&self.lens).zip(frame) {
            let at = skip(s);
            let buf = &mut s[at..at + n];
            buf.copy_from_slice(data);
            inputs.push(FrameInput::Borrow(buf));
        }
        let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        model.run_frame(&mut inputs, &mut outs, &mut self.paths)
    }

    /// One phrase per input: `zero-copy` or why it was copied.
    pub fn describe(&self) -> Vec<String> {
        self.paths
            .iter()
            .map(|p| match p {
                InputPath::ZeroCopy => "zero-copy".to_string(),
                InputPath::Copied => "copied".to_string(),
                InputPath::CopiedInstead(why) => format!("copied ({why})"),
            })
            .collect()
    }
}
