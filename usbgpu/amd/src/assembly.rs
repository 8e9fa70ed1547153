//! Where the AM driver and the device models meet: opening a booted AMD GPU for tools — real
//! hardware through the bridge, or (with the `emu` feature) the Navi31 GPU device model behind the
//! bridge emulator (`--transport emu`) — with the boot's figures (time, USB transfers) and, for the
//! device model, a handle to its errors and shader executor. The driver (`amd/`) itself never
//! imports a device model.
use crate::boot::{Am, BootOptions};
use crate::device::AmdDevice;
#[cfg(feature = "emu")]
use crate::emu::navi31_gpu::{GpuConfig, Navi31Model};
use crate::error::AmdError;
use modelrt_asm24::counting::{Counting, TransferCounts};
use modelrt_asm24::host::Selector;
use modelrt_asm24::session::{Backend, DynTransport, Session, TransportKind};
#[cfg(feature = "emu")]
use modelrt_rdna3::shader::ShaderExecutor;
use std::path::Path;
use std::time::Instant;

/// The transport of an opened GPU.
pub type Transport = Counting<DynTransport>;

/// A booted GPU ready for bundles.
pub struct OpenedGpu {
    /// The hal device.
    pub device: AmdDevice<Transport>,
    /// The GPU device model when emulated (errors it saw, executor).
    #[cfg(feature = "emu")]
    pub model: Option<Navi31Model>,
    /// `usb:B-A` or `emu`.
    pub name: String,
    /// Nanoseconds from session open to booted (emulated time on the emulator).
    pub boot_ns: u64,
    /// USB transfers from session open to booted (PCIe bring-up included).
    pub boot_transfers: TransferCounts,
}

/// Open and boot. `executor` replaces the device model's shader executor (emulator only).
#[cfg(feature = "emu")]
pub fn open(
    kind: TransportKind,
    selector: Selector,
    fw_dir: &Path,
    executor: Option<Box<dyn ShaderExecutor>>,
) -> Result<OpenedGpu, AmdError> {
    if kind != TransportKind::Emu {
        return open_hardware(kind, selector, fw_dir);
    }
    let gpu = Navi31Model::new(GpuConfig::default());
    if let Some(x) = executor {
        gpu.set_executor(x);
    }
    let session = Session::from_emulator(gpu.bridge_emulator());
    let diagnosis = gpu.clone();
    let mut opened = boot(session, fw_dir, |e| with_model_errors(e, Some(&diagnosis)))?;
    let m = gpu.clone();
    opened.device.set_diagnosis(Box::new(move || {
        let seen = m.take_errors();
        (!seen.is_empty()).then(|| {
            seen.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        })
    }));
    opened.model = Some(gpu);
    Ok(opened)
}

/// Open and boot real hardware (`kind` usb or auto; a build without the `emu` feature refuses
/// `emu` with an error).
pub fn open_hardware(
    kind: TransportKind,
    selector: Selector,
    fw_dir: &Path,
) -> Result<OpenedGpu, AmdError> {
    let session = Session::open(kind, selector).map_err(|e| AmdError::Invalid {
        step: "open bridge",
        what: e.to_string(),
    })?;
    boot(session, fw_dir, |e| e)
}

/// Boot the GPU behind `session`; `explain` adds what a device model saw to a boot error.
fn boot(
    session: Session,
    fw_dir: &Path,
    explain: impl FnOnce(AmdError) -> AmdError,
) -> Result<OpenedGpu, AmdError> {
    let name = session.name();
    let started = Instant::now();
    let clock: Box<dyn Fn() -> u64 + Send> = match &session.backend {
        #[cfg(feature = "emu")]
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
    .map_err(explain)?;
    let boot_ns = clock() - t0;
    let mut device = AmdDevice::new(am, clock)?;
    let boot_transfers = device.am.bus.bridge().transport().counts();
    Ok(OpenedGpu {
        device,
        #[cfg(feature = "emu")]
        model: None,
        name,
        boot_ns,
        boot_transfers,
    })
}

/// Append what the GPU device model saw (its own diagnosis) to a driver error.
#[cfg(feature = "emu")]
pub fn with_model_errors(e: AmdError, model: Option<&Navi31Model>) -> AmdError {
    let Some(m) = model else { return e };
    let seen = m.take_errors();
    if seen.is_empty() {
        return e;
    }
    let why: Vec<String> = seen.iter().map(|x| x.to_string()).collect();
    AmdError::Device {
        step: "GPU device model",
        what: format!("{e} [the GPU device model reports: {}]", why.join("; ")),
    }
}
