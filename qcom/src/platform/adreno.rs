//! Adreno glue for the platform (`modelrt run --device qcom`): open the a6xx backend on the KGSL device node and
//! name it. The registration hands the device to `modelrt_core::Executor::load` like every other device. State buffers live
//! in the arena's GPU object like every other buffer, so they persist across submits on the device.
//!
//! Zero-copy camera frames: [`bind_input`] points an input of a loaded bundle at an [`ExternalBuffer`] (a frame
//! imported once with `AdrenoDevice::import_user_memory`) for every following run, which then passes
//! `InputSource::Bound` for it to `Executor::run_with`; [`unbind_input`] restores the arena input.
use crate::adreno::{AdrenoDevice, AdrenoOptions, ExternalBuffer};
use crate::kgsl::KgslIo;
use anyhow::{bail, Context};
use modelrt_core::bundle::Step;
use modelrt_core::Executor;

/// The KGSL node comma devices expose.
pub const DEFAULT_NODE: &str = "/dev/kgsl-3d0";

/// The Adreno device type on this platform.
#[cfg(target_os = "linux")]
pub type QcomDevice = AdrenoDevice<crate::kgsl::real::KgslNode>;

/// Open the Adreno backend on `node` with default options; returns the device and a display name.
#[cfg(target_os = "linux")]
pub fn open(node: &str) -> anyhow::Result<(QcomDevice, String)> {
    use crate::kgsl::real::KgslNode;
    if !std::path::Path::new(node).exists() {
        bail!("{node} does not exist: no Adreno GPU (KGSL) on this machine");
    }
    let k = KgslNode::open(node)?;
    let dev = AdrenoDevice::open(k, AdrenoOptions::default())
        .with_context(|| format!("cannot bring up the Adreno GPU on {node}"))?;
    let name = format!("qcom (Adreno a{} via {node})", dev.gpu());
    Ok((dev, name))
}

/// Open the Adreno backend (unavailable off Linux).
#[cfg(not(target_os = "linux"))]
pub fn open(node: &str) -> anyhow::Result<(AdrenoDevice<crate::emu::kgsl::KgslModel>, String)> {
    bail!("{node}: the Adreno backend needs Linux/Android KGSL")
}

/// Arena range of input `i`, checked for binding an external buffer of `len` bytes in its place.
fn bindable_range<K: KgslIo>(
    exec: &Executor<'_, AdrenoDevice<K>>,
    i: usize,
    len: u64,
) -> anyhow::Result<(u64, u64)> {
    let r = exec
        .input_range(i)
        .with_context(|| format!("the bundle has no input {i}"))?;
    if len != r.len {
        bail!("input {i} has {} bytes, the external buffer {len}", r.len);
    }
    if !r.whole_buffer {
        bail!("input {i} shares its buffer with other data; it cannot be bound in place");
    }
    let body = exec.bundle().body();
    let buffer = body.inputs.get(i)?.buffer;
    for step in body.run.iter() {
        if let Step::Copy { src, .. } = step? {
            if src.buffer == buffer {
                // Adreno copies run on the host over the arena, so they would read the stale arena input.
                bail!("the bundle copies input {i} on the host; it cannot be bound in place");
            }
        }
    }
    Ok((r.offset, r.len))
}

/// Point input `i` of `exec` at `buf` for every following run (zero copy); returns how many launch arguments
/// now read `buf`. Runs must pass `InputSource::Bound` for this input until [`unbind_input`].
pub fn bind_input<K: KgslIo>(
    exec: &mut Executor<'_, AdrenoDevice<K>>,
    i: usize,
    buf: &ExternalBuffer,
) -> anyhow::Result<usize> {
    let (offset, _) = bindable_range(exec, i, buf.len())?;
    let (dev, queue) = exec.device_and_queue_mut();
    Ok(dev.bind_external(queue, offset, buf)?)
}

/// Undo [`bind_input`]: input `i` is read from the arena again (runs upload it as usual).
pub fn unbind_input<K: KgslIo>(
    exec: &mut Executor<'_, AdrenoDevice<K>>,
    i: usize,
) -> anyhow::Result<usize> {
    let r = exec
        .input_range(i)
        .with_context(|| format!("the bundle has no input {i}"))?;
    let (dev, queue) = exec.device_and_queue_mut();
    Ok(dev.unbind_external(queue, r.offset, r.len)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_node_is_a_clear_error() {
        let e = open("/nonexistent/kgsl-3d0").err().expect("must fail");
        assert!(e.to_string().contains("/nonexistent/kgsl-3d0"), "{e}");
    }
}
