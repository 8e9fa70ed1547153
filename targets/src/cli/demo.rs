//! `modelrt demo`: run the embedded default bundle — an openpilot-vision-shaped conv net (input `img`
//! 1x12x128x256) compiled by `cargo xtask demo` from `xtask/models/vision.onnx` for this binary's
//! architecture — and verify it against the onnxruntime outputs embedded in it.
use std::path::Path;

use super::model::{verify_bytes, DeviceArgs};

#[cfg(target_arch = "x86_64")]
static DEMO: &[u8] = include_bytes!("../../assets/demo-x86_64.mrt");
#[cfg(target_arch = "aarch64")]
static DEMO: &[u8] = include_bytes!("../../assets/demo-aarch64.mrt");

/// Run and verify the embedded bundle.
pub fn run(dev: &DeviceArgs) -> anyhow::Result<()> {
    outln!(
        "modelrt demo: openpilot-vision-like conv net (embedded bundle, {} bytes)",
        DEMO.len()
    );
    verify_bytes(DEMO, Path::new("<embedded demo>"), dev, true)
}
