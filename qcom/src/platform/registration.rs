//! [`QCOM`] and [`QCOM_EMU`]: the same [`AdrenoDevice`] over the KGSL device node or the KGSL model.
use anyhow::Context;
use modelrt_core::bundle::Bundle;
use modelrt_platform::device::{always, serves_all};
use modelrt_platform::{DeviceSpec, Loaded, LoadedModel, OpenRequest};

use crate::adreno::AdrenoDevice;
use crate::emu::kgsl::{KgslModel, ModelConfig};

/// Qualcomm Adreno through KGSL.
pub static QCOM: DeviceSpec = DeviceSpec {
    name: "qcom",
    help: "Qualcomm Adreno through KGSL (comma devices)",
    family: Some("adreno"),
    emulated: None,
    hidden: false,
    serves: serves_all,
    available: || std::path::Path::new(super::DEFAULT_NODE).exists(),
    open: open_kgsl,
};

/// The KGSL model.
pub static QCOM_EMU: DeviceSpec = DeviceSpec {
    name: "qcom-emu",
    help: "The KGSL model: validates every command stream an Adreno bundle submits and executes its kernels with the IR3 interpreter, so outputs are computed (for development without a comma device)",
    family: Some("adreno"),
    emulated: Some("the KGSL model's (kernels on the IR3 interpreter)"),
    hidden: false,
    serves: serves_all,
    available: always,
    open: open_model,
};

fn open_kgsl<'b>(
    bundle: Bundle<'b>,
    _: &OpenRequest<'_>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    let (dev, name) = super::open(super::DEFAULT_NODE)?;
    Ok(Loaded::new(bundle, dev, name, true)?.boxed())
}

fn open_model<'b>(
    bundle: Bundle<'b>,
    _: &OpenRequest<'_>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    let model = KgslModel::new(ModelConfig {
        execute_shaders: true,
        ..Default::default()
    });
    let dev =
        AdrenoDevice::open(model, Default::default()).context("cannot bring up the KGSL model")?;
    let name = "qcom-emu (KGSL model: streams validated, kernels run by the IR3 interpreter)";
    Ok(Loaded::new(bundle, dev, name.into(), true)?.boxed())
}
