//! AMD glue for the runner (`--device usb|usb-emu`): boot the GPU behind an ASM24 bridge — real
//! hardware, or the Navi31 GPU model behind the bridge emulator whose kernels run on the RDNA3
//! interpreter — and name it. Firmware comes from `$MODELRT_AMD_FIRMWARE_DIR`, else a directory a host
//! tool set ([`set_fallback_firmware_dir`]), else `/lib/firmware/amdgpu`.
use modelrt_usbgpu::amd::boot::firmware::DEFAULT_DIR;
use modelrt_usbgpu::amd::device::AmdDevice;
use modelrt_usbgpu::assembly::{self, Transport};
use modelrt_usbgpu::emu::rdna3::dispatch::Rdna3;
use modelrt_usbgpu::host::Selector;
use modelrt_usbgpu::session::TransportKind;
use std::path::PathBuf;

/// Environment variable overriding the firmware directory.
pub const FIRMWARE_ENV: &str = "MODELRT_AMD_FIRMWARE_DIR";

/// The AMD device type.
pub type UsbAmdDevice = AmdDevice<Transport>;

/// The directory [`set_fallback_firmware_dir`] chose, used when the environment names none.
static FALLBACK_DIR: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// Use `dir` instead of `/lib/firmware/amdgpu` when `$MODELRT_AMD_FIRMWARE_DIR` is unset (a host tool
/// that keeps its own copy, e.g. `cargo xtask firmware`'s `target/amdgpu-firmware`).
pub fn set_fallback_firmware_dir(dir: PathBuf) {
    *FALLBACK_DIR.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir);
}

/// Where the firmware is read from: `$MODELRT_AMD_FIRMWARE_DIR`, else the fallback a host tool set,
/// else `/lib/firmware/amdgpu`.
pub fn firmware_dir() -> PathBuf {
    std::env::var_os(FIRMWARE_ENV)
        .map(PathBuf::from)
        .or_else(|| {
            FALLBACK_DIR
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
        })
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

/// Boot the GPU; `emulated` selects the GPU model. Returns the device and a display name that
/// says what is real and what is modelled.
pub fn open(emulated: bool) -> anyhow::Result<(UsbAmdDevice, String)> {
    let dir = firmware_dir();
    let (kind, exec) = if emulated {
        (
            TransportKind::Emu,
            Some(Box::new(Rdna3::new()) as Box<dyn modelrt_usbgpu::emu::shader::ShaderExecutor>),
        )
    } else {
        (TransportKind::Usb, None)
    };
    let g = assembly::open(kind, Selector::Index(0), &dir, exec).map_err(|e| {
        if emulated {
            anyhow::anyhow!("{e}")
        } else {
            anyhow::anyhow!("{e} (--device usb-emu runs the bundle on the emulated GPU instead)")
        }
    })?;
    let name = if emulated {
        format!(
            "usb-emu (AM driver → bridge emulator → Navi31 GPU model, kernels on the RDNA3 interpreter; booted with {} in {:.0} ms emulated; timings are emulated, not hardware)",
            dir.display(),
            g.boot_ns as f64 / 1e6
        )
    } else {
        format!(
            "usb (AMD GC 11.0.0 via {}; this real-hardware path is untested here)",
            g.name
        )
    };
    Ok((g.device, name))
}

/// The driver's USB transfer counters: every transfer issued on the link since open.
pub fn transfer_counts(d: &mut UsbAmdDevice) -> modelrt_usbgpu::counting::TransferCounts {
    d.am.bus.bridge().transport().counts()
}
