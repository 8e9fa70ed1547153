//! The compile-time check on an executing device model: before `cargo xtask compile` writes a bundle for a
//! target that has one (adreno-a630: the KGSL model's IR3 interpreter; amd-gfx1100: the AM driver over the
//! bridge emulator and the RDNA3 interpreter; hexagon-v65: the FastRPC model running the bundle's model
//! library under qemu-hexagon), it runs the bundle there on seeded inputs and compares every output with
//! onnxruntime's for the same inputs (a `--tinygrad` program: with tinygrad's own unjitted run of its first
//! seeded step), within the bundle's tolerances raised to each output's dtype floor (`core/src/verify.rs`). tinygrad compiles the GPU targets
//! offline (a NULL device computes nothing), and the DSP libraries a bundle ships are not the ones its
//! capture ran, so without this the exporter could only check the shipped program structurally
//! (docs/hw/tinygrad-export.md §11.2).
//!
//! What it proves is bounded by the models: the interpreters follow the ISA as documented
//! (docs/hw/adreno-kgsl-pm4.md §16, docs/hw/rdna3-isa.md), not the silicon; timing, caches and SFU
//! precision stay hardware-only.
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use modelrt_core::bundle::writer::ReferenceSpec;
use modelrt_core::bundle::{Bundle, RefTensor, Table};
use modelrt_core::verify::{compare_reference, reference_tolerance};
use modelrt_hal::target::TargetName;
use modelrt_targets::runner::{load, DeviceChoice, LoadOptions};

/// The executing model a compile for `target` is checked on, with its CLI name; `None` for targets
/// without one (the host CPU checks against tinygrad itself during capture; gfx1201 has no model). The
/// runtime's registry decides which emulated device runs a target (`modelrt_targets::runner::emulated_device`).
pub fn device_for(target: TargetName) -> Option<(DeviceChoice, &'static str)> {
    modelrt_targets::runner::emulated_device(&target.representative()).map(|d| (d, d.name()))
}

/// What the check measured.
#[derive(Debug, Clone, PartialEq)]
pub struct EmuCheck {
    /// The `--device` name of the model it ran on.
    pub device: &'static str,
    /// Largest absolute and relative error over all outputs.
    pub max_abs: f64,
    pub max_rel: f64,
    /// Wall-clock seconds of the emulated step (load excluded).
    pub seconds: f64,
}

/// Run `bundle` on `device` on `reference`'s inputs and compare with its outputs (bundle input/output
/// order, as [`crate::bundle_build::reference_spec`] gives them). An output outside the reference's
/// tolerances (raised to its dtype's floor, `core/src/verify.rs`) is an error naming it and the worst element.
pub fn check(
    bundle: &[u8],
    reference: &ReferenceSpec<'_>,
    device: (DeviceChoice, &'static str),
) -> Result<EmuCheck> {
    check_against(bundle, reference, device, "onnxruntime")
}

/// [`check`] with the reference's origin named in its messages (`against`: "onnxruntime", or
/// "tinygrad's own run" for a `--tinygrad` program).
pub fn check_against(
    bundle: &[u8],
    reference: &ReferenceSpec<'_>,
    device: (DeviceChoice, &'static str),
    against: &str,
) -> Result<EmuCheck> {
    let b = Bundle::parse(bundle).map_err(|e| anyhow!("the built bundle does not parse: {e}"))?;
    check_loaded(b, reference, LoadOptions::on(device.0), device.1, against)
}

/// [`check_against`] of a multi-device bundle on one device per role (`roles`, in role order), `name`
/// naming them in messages.
pub fn check_roles(
    bundle: &[u8],
    reference: &ReferenceSpec<'_>,
    roles: &[DeviceChoice],
    name: &'static str,
    against: &str,
) -> Result<EmuCheck> {
    let b = Bundle::parse(bundle).map_err(|e| anyhow!("the built bundle does not parse: {e}"))?;
    let opts = LoadOptions {
        device: roles.first().copied().unwrap_or_default(),
        roles: roles.to_vec(),
        ..LoadOptions::default()
    };
    check_loaded(b, reference, opts, name, against)
}

fn check_loaded(
    b: Bundle<'_>,
    reference: &ReferenceSpec<'_>,
    opts: LoadOptions,
    device_name: &'static str,
    against: &str,
) -> Result<EmuCheck> {
    let want = &reference.outputs;
    let outs: Vec<(String, modelrt_hal::target::DType)> = b
        .body()
        .outputs
        .iter()
        .map(|t| t.map(|t| (t.name.to_string(), t.dtype)))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow!("outputs: {e}"))?;
    if reference.inputs.len() != b.body().inputs.len() || want.len() != outs.len() {
        bail!("internal: the reference does not match the bundle's inputs and outputs");
    }
    let (atol, rtol) = (reference.atol as f64, reference.rtol as f64);
    if std::iter::once(opts.device)
        .chain(opts.roles.iter().copied())
        .any(|d| d.name() == "usb-emu")
    {
        amd_firmware()?;
    }
    let mut model = load(
        b,
        opts,
    )
    .with_context(|| {
        format!(
            "the bundle does not load on {} for the pre-write check (--no-emu-check writes it unchecked)",
            device_name
        )
    })?;
    if !model.computes_outputs() {
        bail!("internal: {} computes no outputs", model.device_name());
    }
    let mut got: Vec<Vec<u8>> = want.iter().map(|w| vec![0u8; w.len()]).collect();
    let mut refs: Vec<&mut [u8]> = got.iter_mut().map(Vec::as_mut_slice).collect();
    let t = Instant::now();
    model.run(&reference.inputs, &mut refs).with_context(|| {
        format!(
            "the bundle failed on {} in the pre-write check; no bundle written",
            device_name
        )
    })?;
    let seconds = t.elapsed().as_secs_f64();
    let (mut max_abs, mut max_rel) = (0f64, 0f64);
    for (((name, dt), g), w) in outs.iter().zip(&got).zip(want) {
        let c = compare_reference(*dt, g, w, atol, rtol);
        if !c.ok() {
            // printed at the recorded f32 precision (1e-4, not 9.999999747378752e-5)
            let (atol, rtol) = reference_tolerance(*dt, atol, rtol);
            let (atol, rtol) = (atol as f32, rtol as f32);
            bail!(
                "the compiled program gives wrong outputs on {}: output '{name}' has {} of {} elements outside atol {atol:e} rtol {rtol:e} of {against} (max abs err {:.3e}, worst at element {}); no bundle written — report it with the model, or pass --no-emu-check to write it anyway",
                device_name,
                c.mismatches,
                c.count,
                c.max_abs,
                c.worst_index
            );
        }
        max_abs = max_abs.max(c.max_abs);
        max_rel = max_rel.max(c.max_rel);
    }
    Ok(EmuCheck {
        device: device_name,
        max_abs,
        max_rel,
        seconds,
    })
}

/// The usb-emu model boots the GPU with the real Navi31 firmware: `$MODELRT_AMD_FIRMWARE_DIR`, the
/// system's `/lib/firmware/amdgpu`, else the copy `cargo xtask firmware` unpacks into `target/`.
pub fn amd_firmware() -> Result<()> {
    use modelrt_amd::platform::{firmware_dir, set_fallback_firmware_dir};
    const PROBE: &str = "psp_13_0_0_sos.bin";
    if firmware_dir().join(PROBE).exists() {
        return Ok(());
    }
    let ours = crate::firmware::firmware_dir();
    if std::env::var_os(modelrt_amd::platform::FIRMWARE_ENV).is_none() && ours.join(PROBE).exists()
    {
        set_fallback_firmware_dir(ours);
        return Ok(());
    }
    bail!(
        "the usb-emu check needs the Navi31 firmware ({PROBE} is not in {}): run `cargo xtask firmware`, or pass --no-emu-check to write the bundle unchecked",
        firmware_dir().display()
    )
}

/// [`check`] of a bundle against the reference it embeds (compiled with `--reference`).
pub fn check_embedded(bundle: &[u8], device: (DeviceChoice, &'static str)) -> Result<EmuCheck> {
    let b = Bundle::parse(bundle).map_err(|e| anyhow!("the bundle does not parse: {e}"))?;
    let r = b.body().reference.context("the bundle has no reference")?;
    fn data<'a>(t: Table<'a, RefTensor<'a>>) -> Result<Vec<&'a [u8]>> {
        t.iter()
            .map(|t| t.map(|t| t.data))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow!("reference: {e}"))
    }
    let spec = ReferenceSpec {
        seed: r.seed,
        atol: r.atol,
        rtol: r.rtol,
        inputs: data(r.inputs)?,
        outputs: data(r.outputs)?,
    };
    check(bundle, &spec, device)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The targets with an executing model and its `--device` name, as the runtime maps them.
    #[test]
    fn each_target_is_checked_on_its_emulated_device() {
        let got: Vec<(TargetName, &str)> = TargetName::ALL
            .into_iter()
            .filter_map(|t| device_for(t).map(|(d, name)| (t, d, name)))
            .inspect(|(_, d, name)| assert_eq!(d.name(), *name))
            .map(|(t, _, name)| (t, name))
            .collect();
        assert_eq!(
            got,
            [
                (TargetName::AdrenoA630, "qcom-emu"),
                (TargetName::AmdGfx1100, "usb-emu"),
                (TargetName::HexagonV65, "dsp-emu"),
            ]
        );
    }
}
