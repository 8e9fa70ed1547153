//! Per-frame inputs that may be read in place: a caller passes each input as bytes to copy or as a
//! borrowed buffer (e.g. a camera frame the runtime did not allocate) that the backend binds without
//! a copy where it can, and learns which way each input went.
//!
//! - CPU (`modelrt_cpu::frame::cpu_frame`): a borrowed buffer stands in for the input's arena range for
//!   this one submit when `CpuDevice::check_borrow` accepts it (alignment, size, views; see
//!   `modelrt_cpu::borrow`); otherwise it is copied and [`InputPath::CopiedInstead`] gives the reason.
//! - Adreno: camera buffers are GPU-mapped once and bound across frames with
//!   `modelrt_qcom::platform::bind_input`; per-frame host buffers are copied ([`copy_frame`]).
//! - Every other backend copies ([`copy_frame`]).
use modelrt_core::bundle::MAX_IO;
use modelrt_core::{ExecError, Executor, InputSource, Timing};
use modelrt_hal::device::Device;

/// One input of a frame.
#[derive(Debug)]
pub enum FrameInput<'a> {
    /// Copy these bytes into the arena (what `LoadedModel::run` does).
    Copy(&'a [u8]),
    /// Read this buffer in place if the backend can; otherwise it is copied. Borrowed mutably for
    /// the frame because a compiled kernel cannot be proven not to write its arguments (no
    /// exporter writes inputs).
    Borrow(&'a mut [u8]),
}

/// How an input of a frame reached the kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputPath {
    /// Copied into the arena, as asked.
    Copied,
    /// Read in place, without a copy.
    ZeroCopy,
    /// Asked to be read in place but copied, for this reason.
    CopiedInstead(&'static str),
}

/// Check the input count and the `paths` slot count against the bundle (for backends' frame functions).
pub fn check_count<E>(
    exec: &Executor<'_, impl Device>,
    inputs: usize,
    paths: usize,
) -> Result<(), ExecError<E>> {
    let expected = exec.bundle().body().inputs.len();
    if inputs != expected || paths < inputs || inputs > MAX_IO {
        return Err(ExecError::Count {
            what: "frame inputs (and path slots)",
            expected,
            got: inputs,
        });
    }
    Ok(())
}

/// Run one frame copying every input (backends that bind host memory only through their own API).
pub fn copy_frame<D: Device>(
    exec: &mut Executor<'_, D>,
    inputs: &mut [FrameInput<'_>],
    outputs: &mut [&mut [u8]],
    paths: &mut [InputPath],
) -> Result<Timing, ExecError<D::Error>> {
    check_count(exec, inputs.len(), paths.len())?;
    let mut srcs = [InputSource::Bound; MAX_IO];
    for ((src, input), path) in srcs.iter_mut().zip(inputs.iter()).zip(paths.iter_mut()) {
        (*src, *path) = match input {
            FrameInput::Copy(d) => (InputSource::Copy(d), InputPath::Copied),
            FrameInput::Borrow(d) => (
                InputSource::Copy(d),
                InputPath::CopiedInstead(
                    "this backend binds host buffers only through its own API (Adreno: qcom_device::bind_input)",
                ),
            ),
        };
    }
    exec.run_with(&srcs[..inputs.len()], outputs, |d, q| d.submit(q))
}
