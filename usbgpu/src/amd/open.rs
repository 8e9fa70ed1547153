//! Opening a booted AMD GPU for tools: real hardware through the bridge, or the Navi31 GPU model
//! behind the bridge emulator (`--transport emu`), with the boot's figures (time, USB transfers)
//! and, for the model, a handle to its errors and shader executor.
use super::boot::{Am, BootOptions};
use super::device::AmdDevice;
use super::error::AmdError;
use crate::counting::{Counting, TransferCounts};
use crate::emu::gpu::{GpuConfig, Navi31Model};
use crate::host::Selector;
use crate::session::{Backend, DynTransport, Session, TransportKind};
use modelrt_rdna3::shader::ShaderExecutor;
use std::path::Path;
use std::time::Instant;

/// The transport of an opened GPU.
pub type Transport = Counting<DynTransport>;

/// A booted GPU ready for bundles.
pub struct OpenedGpu {
    /// The hal device.
    pub device: AmdDevice<Transport>,
    /// The GPU model when emulated (errors it saw, executor).
    pub model: Option<Navi31Model>,
    /// `usb:B-A` or `emu`.
    pub name: String,
    /// Nanoseconds from session open to booted (emulated time on the emulator).
    pub boot_ns: u64,
    /// USB transfers from session open to booted (PCIe bring-up included).
    pub boot_transfers: TransferCounts,
}

/// Open and boot. `executor` replaces the model's shader executor (emulator only).
pub fn open(
    kind: TransportKind,
    selector: Selector,
    fw_dir: &Path,
    executor: Option<Box<dyn ShaderExecutor>>,
) -> Result<OpenedGpu, AmdError> {
    let (session, model) = if kind == TransportKind::Emu {
        let gpu = Navi31Model::new(GpuConfig::default());
        if let Some(x) = executor {
            gpu.set_executor(x);
        }
        (Session::from_emulator(gpu.bridge_emulator()), Some(gpu))
    } else {
        let s = Session::open(kind, selector).map_err(|e| AmdError::Invalid {
            step: "open bridge",
            what: e.to_string(),
        })?;
        (s, None)
    };
    let name = session.name();
    let started = Instant::now();
    let clock: Box<dyn Fn() -> u64 + Send> = match &session.backend {
        Backend::Emu(h) => {
            let h = h.clone();
            Box::new(move || h.clock_ns())
        }
        Backend::Usb(_) => Box::new(move || started.elapsed().as_nanos() as u64),
    };
    let t0 = clock();
    let Session { bridge, .. } = session;
    let am = Am::open(bridge, fw_dir, &BootOptions::default(), |bus| {
        bus.bridge().transport().counts()
    })
    .map_err(|e| with_model_errors(e, model.as_ref()))?;
    let boot_ns = clock() - t0;
    let mut device = AmdDevice::new(am, clock)?;
    if let Some(m) = model.clone() {
        device.set_diagnosis(Box::new(move || {
            let seen = m.take_errors();
            (!seen.is_empty()).then(|| {
                seen.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            })
        }));
    }
    let boot_transfers = device.am.bus.bridge().transport().counts();
    Ok(OpenedGpu {
        device,
        model,
        name,
        boot_ns,
        boot_transfers,
    })
}

/// Append what the GPU model saw (its own diagnosis) to a driver error.
pub fn with_model_errors(e: AmdError, model: Option<&Navi31Model>) -> AmdError {
    let Some(m) = model else { return e };
    let seen = m.take_errors();
    if seen.is_empty() {
        return e;
    }
    let why: Vec<String> = seen.iter().map(|x| x.to_string()).collect();
    AmdError::Device {
        step: "GPU model",
        what: format!("{e} [the GPU model reports: {}]", why.join("; ")),
    }
}
