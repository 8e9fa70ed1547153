//! Adreno glue for the runner (`modelrt run --device qcom`): open the a6xx backend on the KGSL device node and
//! name it. The runner hands the device to `modelrt_core::Executor::load` like the CPU device.
use anyhow::{bail, Context};
use modelrt_qcom::adreno::{AdrenoDevice, AdrenoOptions};

/// The KGSL node comma devices expose.
pub const DEFAULT_NODE: &str = "/dev/kgsl-3d0";

/// The Adreno device type on this platform.
#[cfg(target_os = "linux")]
pub type QcomDevice = AdrenoDevice<modelrt_qcom::kgsl::real::KgslNode>;

/// Open the Adreno backend on `node` with default options; returns the device and a display name.
#[cfg(target_os = "linux")]
pub fn open(node: &str) -> anyhow::Result<(QcomDevice, String)> {
    use modelrt_qcom::kgsl::real::KgslNode;
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
pub fn open(
    node: &str,
) -> anyhow::Result<(AdrenoDevice<modelrt_qcom::emu::kgsl::KgslModel>, String)> {
    bail!("{node}: the Adreno backend needs Linux/Android KGSL")
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
