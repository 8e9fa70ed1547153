//! Per-step profiling of a loaded bundle and Chrome trace-event output (loads in Perfetto and
//! chrome://tracing).
//!
//! [`record_steps`] records, at load time, one queue per step of the bundle's run schedule (on the
//! device the [`crate::Executor`] already loaded the kernels on). [`traced_run`] then performs one
//! inference by uploading the inputs, submitting those queues one at a time and downloading the
//! outputs, timing each with [`Device::now_ns`] and reporting one [`Slice`] per upload, launch,
//! copy and download.
//!
//! The times are host wall-clock around each submit: honest for a synchronous device (the CPU
//! backend runs a submit to completion before returning); on an asynchronous device they would
//! include the per-submit round trip and are not kernel times. Submitting step by step also adds one
//! submit overhead per step compared with the single recorded queue of [`crate::Executor::run`].
//! Nothing here allocates: queues go to a caller-provided sink, slices to a callback, and the trace is
//! written to any [`core::fmt::Write`].
use core::fmt::{self, Write};

use modelrt_hal::device::Device;

use crate::bundle::{Bundle, BundleError, Step, TensorDesc};
use crate::exec::{record_step, ExecError};

/// Which timeline a slice belongs to (one "thread" per queue in the trace).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// Host ↔ arena copies of inputs and outputs.
    Transfer,
    /// The run queue's launches and arena copies.
    Queue,
}

impl Lane {
    fn tid(self) -> u32 {
        match self {
            Lane::Transfer => 1,
            Lane::Queue => 2,
        }
    }
}

/// What a slice measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SliceKind<'b> {
    /// Input `name` copied host → arena.
    Upload { name: &'b str },
    /// Output `name` copied arena → host.
    Download { name: &'b str },
    /// Schedule step `step` launched kernel `kernel` (index into the bundle's kernel table).
    Launch {
        step: u32,
        kernel: u32,
        name: &'b str,
        global: [u32; 3],
        local: [u32; 3],
    },
    /// Schedule step `step` copied inside the arena.
    Copy { step: u32 },
}

/// One timed operation of a traced run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice<'b> {
    pub kind: SliceKind<'b>,
    pub lane: Lane,
    /// Bytes moved (copies) or bytes of buffer arguments (launches).
    pub bytes: u64,
    /// Start, in the device's host clock.
    pub start_ns: u64,
    pub dur_ns: u64,
}

impl Slice<'_> {
    fn name(&self) -> &str {
        match &self.kind {
            SliceKind::Upload { name } | SliceKind::Download { name } => name,
            SliceKind::Launch { name, .. } => name,
            SliceKind::Copy { .. } => "copy",
        }
    }

    fn category(&self) -> &'static str {
        match self.kind {
            SliceKind::Upload { .. } => "upload",
            SliceKind::Download { .. } => "download",
            SliceKind::Launch { .. } => "launch",
            SliceKind::Copy { .. } => "copy",
        }
    }
}

/// Record one queue per step of the run schedule and hand each to `push`, in schedule order.
/// Returns the number of queues. The kernels must already be loaded on `device` (by
/// [`crate::Executor::load`]).
pub fn record_steps<D: Device>(
    bundle: &Bundle<'_>,
    device: &mut D,
    mut push: impl FnMut(D::Queue),
) -> Result<usize, ExecError<D::Error>> {
    let mut n = 0;
    for step in bundle.body().run.iter() {
        let mut q = device.create_queue().map_err(ExecError::Device)?;
        record_step(bundle, &mut q, &step?)?;
        push(q);
        n += 1;
    }
    Ok(n)
}

fn arena_offset(bundle: &Bundle<'_>, t: &TensorDesc<'_>) -> Result<u64, BundleError> {
    bundle.arena_offset(t.buffer, t.offset)
}

fn check_len<E>(
    what: &'static str,
    i: usize,
    t: &TensorDesc<'_>,
    got: usize,
) -> Result<(), ExecError<E>> {
    if t.byte_len() != got as u64 {
        return Err(ExecError::Size {
            what,
            name_index: i,
            expected: t.byte_len(),
            got: got as u64,
        });
    }
    Ok(())
}

/// Run `op` on `device`, timed with [`Device::now_ns`], and describe it as a [`Slice`] of `kind` on
/// `lane` that moved `bytes`.
fn timed<'b, D: Device, T>(
    device: &mut D,
    kind: SliceKind<'b>,
    lane: Lane,
    bytes: u64,
    op: impl FnOnce(&mut D) -> Result<T, D::Error>,
) -> Result<Slice<'b>, ExecError<D::Error>> {
    let start_ns = device.now_ns();
    op(device).map_err(ExecError::Device)?;
    let dur_ns = device.now_ns().saturating_sub(start_ns);
    Ok(Slice {
        kind,
        lane,
        bytes,
        start_ns,
        dur_ns,
    })
}

/// One inference, step by step: upload `inputs`, submit each of `queues` (from [`record_steps`] on
/// the same bundle and device) in order, download `outputs`; `emit` receives one [`Slice`] per
/// operation, in order.
pub fn traced_run<'b, D: Device>(
    bundle: &Bundle<'b>,
    device: &mut D,
    queues: &mut [D::Queue],
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
    mut emit: impl FnMut(Slice<'b>),
) -> Result<(), ExecError<D::Error>> {
    let body = bundle.body();
    let count = |what, expected: usize, got: usize| ExecError::Count {
        what,
        expected,
        got,
    };
    if inputs.len() != body.inputs.len() {
        return Err(count("inputs", body.inputs.len(), inputs.len()));
    }
    if outputs.len() != body.outputs.len() {
        return Err(count("outputs", body.outputs.len(), outputs.len()));
    }
    if queues.len() != body.run.len() {
        return Err(count("step queues", body.run.len(), queues.len()));
    }
    for (i, (t, data)) in body.inputs.iter().zip(inputs).enumerate() {
        check_len("inputs", i, &t?, data.len())?;
    }
    for (i, (t, out)) in body.outputs.iter().zip(outputs.iter()).enumerate() {
        check_len("outputs", i, &t?, out.len())?;
    }
    for (t, data) in body.inputs.iter().zip(inputs) {
        let t = t?;
        let offset = arena_offset(bundle, &t)?;
        let kind = SliceKind::Upload { name: t.name };
        let bytes = data.len() as u64;
        emit(timed(device, kind, Lane::Transfer, bytes, |d| {
            d.upload(offset, data)
        })?);
    }
    for (i, (step, q)) in body.run.iter().zip(queues.iter_mut()).enumerate() {
        let step_index = i as u32;
        let (kind, bytes) = match step? {
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
                let name = body.kernels.get(kernel as usize)?.name;
                let bytes = args
                    .iter()
                    .map(|a| match a {
                        crate::bundle::ArgRef::Buffer { size, .. } => *size,
                        crate::bundle::ArgRef::Int(_) => 0,
                    })
                    .sum();
                (
                    SliceKind::Launch {
                        step: step_index,
                        kernel,
                        name,
                        global,
                        local,
                    },
                    bytes,
                )
            }
            Step::Copy { size, .. } => (SliceKind::Copy { step: step_index }, size),
        };
        emit(timed(device, kind, Lane::Queue, bytes, |d| d.submit(q))?);
    }
    for (t, out) in body.outputs.iter().zip(outputs.iter_mut()) {
        let t = t?;
        let offset = arena_offset(bundle, &t)?;
        let kind = SliceKind::Download { name: t.name };
        let bytes = out.len() as u64;
        emit(timed(device, kind, Lane::Transfer, bytes, |d| {
            d.download(offset, out)
        })?);
    }
    Ok(())
}

/// A JSON string literal body (without quotes), escaped.
struct JsonStr<'a>(&'a str);

impl fmt::Display for JsonStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// Nanoseconds as the trace format's microseconds, exactly (`1234` → `1.234`).
struct Micros(u64);

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

/// Write a Chrome trace-event JSON document: process `process` with one thread per [`Lane`] and one
/// complete ("X") event per slice, timestamps relative to the earliest slice.
pub fn write_chrome_trace<'s, 'b: 's, W: Write>(
    w: &mut W,
    process: &str,
    slices: impl IntoIterator<Item = &'s Slice<'b>> + Clone,
) -> fmt::Result {
    let t0 = slices
        .clone()
        .into_iter()
        .map(|s| s.start_ns)
        .min()
        .unwrap_or(0);
    w.write_str("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
    write!(w, "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{{\"name\":\"{}\"}}}}", JsonStr(process))?;
    for (lane, name) in [
        (Lane::Transfer, "host transfers"),
        (Lane::Queue, "run queue (one submit per step)"),
    ] {
        write!(w, ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{},\"args\":{{\"name\":\"{name}\"}}}}", lane.tid())?;
    }
    for s in slices {
        write!(
            w,
            ",\n{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"bytes\":{}",
            JsonStr(s.name()),
            s.category(),
            s.lane.tid(),
            Micros(s.start_ns - t0),
            Micros(s.dur_ns),
            s.bytes
        )?;
        match &s.kind {
            SliceKind::Launch {
                step,
                kernel,
                global,
                local,
                ..
            } => write!(
                w,
                ",\"step\":{step},\"kernel\":{kernel},\"global\":[{},{},{}],\"local\":[{},{},{}]",
                global[0], global[1], global[2], local[0], local[1], local[2]
            )?,
            SliceKind::Copy { step } => write!(w, ",\"step\":{step}")?,
            SliceKind::Upload { .. } | SliceKind::Download { .. } => {}
        }
        w.write_str("}}")?;
    }
    w.write_str("\n]}\n")
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::String;

    use super::*;

    fn slice(
        kind: SliceKind<'static>,
        lane: Lane,
        start_ns: u64,
        dur_ns: u64,
        bytes: u64,
    ) -> Slice<'static> {
        Slice {
            kind,
            lane,
            bytes,
            start_ns,
            dur_ns,
        }
    }

    #[test]
    fn micros_are_exact_decimal() {
        assert_eq!(std::format!("{}", Micros(0)), "0.000");
        assert_eq!(std::format!("{}", Micros(1234)), "1.234");
        assert_eq!(std::format!("{}", Micros(5_000_007)), "5000.007");
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(
            std::format!("{}", JsonStr("a\"b\\c\n\u{1}")),
            "a\\\"b\\\\c\\n\\u0001"
        );
    }

    #[test]
    fn trace_has_one_complete_event_per_slice_relative_to_the_first() {
        let slices = [
            slice(
                SliceKind::Upload { name: "x" },
                Lane::Transfer,
                1_000,
                500,
                16,
            ),
            slice(
                SliceKind::Launch {
                    step: 0,
                    kernel: 3,
                    name: "r_4_4",
                    global: [4, 1, 1],
                    local: [1, 1, 1],
                },
                Lane::Queue,
                2_000,
                1_250,
                64,
            ),
            slice(SliceKind::Copy { step: 1 }, Lane::Queue, 3_500, 10, 8),
            slice(
                SliceKind::Download { name: "y" },
                Lane::Transfer,
                4_000,
                20,
                4,
            ),
        ];
        let mut s = String::new();
        write_chrome_trace(&mut s, "modelrt \"cpu\"", &slices).unwrap();
        assert!(s.contains("\"args\":{\"name\":\"modelrt \\\"cpu\\\"\"}"));
        assert_eq!(s.matches("\"ph\":\"X\"").count(), 4);
        assert_eq!(s.matches("\"ph\":\"M\"").count(), 3);
        assert!(s.contains(
            "{\"name\":\"r_4_4\",\"cat\":\"launch\",\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":1.000,\"dur\":1.250,\"args\":{\"bytes\":64,\"step\":0,\"kernel\":3,\"global\":[4,1,1],\"local\":[1,1,1]}}"
        ));
        assert!(s.contains("\"name\":\"x\",\"cat\":\"upload\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0.000,\"dur\":0.500"));
        assert!(s.contains(
            "\"name\":\"copy\",\"cat\":\"copy\",\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":2.500"
        ));
        assert!(s.contains("\"name\":\"y\",\"cat\":\"download\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":3.000,\"dur\":0.020"));
        assert!(s.ends_with("\n]}\n"));
    }
}
