//! Frames on the CPU ([`cpu_frame`]): a borrowed input stands in for its arena range for one submit when
//! [`CpuDevice::check_borrow`] accepts it (alignment, size, views; see [`crate::borrow`]); otherwise it
//! is copied and `InputPath::CopiedInstead` gives the reason.
use modelrt_core::bundle::MAX_IO;
use modelrt_core::{ExecError, Executor, InputSource, Timing};
use modelrt_platform::frame::{check_count, FrameInput, InputPath};

use crate::{Borrowed, CpuDevice, CpuError};

/// Run one frame on the CPU backend, reading each acceptable borrowed input in place.
pub fn cpu_frame(
    exec: &mut Executor<'_, CpuDevice>,
    inputs: &mut [FrameInput<'_>],
    outputs: &mut [&mut [u8]],
    paths: &mut [InputPath],
) -> Result<Timing, ExecError<CpuError>> {
    check_count(exec, inputs.len(), paths.len())?;
    let mut ranges = [None; MAX_IO];
    for (i, r) in ranges.iter_mut().enumerate().take(inputs.len()) {
        *r = exec.input_range(i);
    }
    // Index inputs the bundle range-checks are read by that check before the submit: copy them.
    let mut checked = [false; MAX_IO];
    for c in exec.bundle().index_checks().iter().flatten() {
        if let Some(f) = checked.get_mut(c.input as usize) {
            *f = true;
        }
    }
    let n = inputs.len();
    let mut srcs = [InputSource::Bound; MAX_IO];
    // A fixed array, the first `lent` entries used: a frame allocates nothing.
    let mut borrowed: [Borrowed<'_>; MAX_IO] = std::array::from_fn(|_| Borrowed {
        arena_offset: 0,
        data: &mut [],
    });
    let mut lent = 0;
    let (dev, queue) = exec.device_and_queue_mut();
    for (i, input) in inputs.iter_mut().enumerate() {
        let (src, path) = match input {
            FrameInput::Copy(d) => (InputSource::Copy(d), InputPath::Copied),
            FrameInput::Borrow(d) => {
                let Some(range) = ranges[i] else {
                    return Err(ExecError::Count {
                        what: "inputs",
                        expected: i,
                        got: i + 1,
                    });
                };
                if range.len != d.len() as u64 {
                    return Err(ExecError::Size {
                        what: "inputs",
                        name_index: i,
                        expected: range.len,
                        got: d.len() as u64,
                    });
                }
                let verdict = if checked[i] {
                    Err("the input is an index the bundle range-checks before running")
                } else if range.whole_buffer {
                    dev.check_borrow(queue, range.offset, d)
                        .map_err(|r| r.reason())
                } else {
                    Err("the input shares its buffer with other data")
                };
                match verdict {
                    Ok(()) => {
                        borrowed[lent] = Borrowed {
                            arena_offset: range.offset,
                            data: d,
                        };
                        lent += 1;
                        (InputSource::Bound, InputPath::ZeroCopy)
                    }
                    Err(why) => (InputSource::Copy(d), InputPath::CopiedInstead(why)),
                }
            }
        };
        srcs[i] = src;
        paths[i] = path;
    }
    exec.run_with(&srcs[..n], outputs, |d, q| {
        d.submit_borrowed(q, &mut borrowed[..lent])
    })
}
