//! The AMD devices as the platform registry lists them (feature `platform`): [`USB`] and [`USB_EMU`]: boot the GPU behind an ASM24 bridge — real
//! hardware, or the Navi31 GPU model behind the bridge emulator whose kernels run on the RDNA3
//! interpreter — and name it. Every `modelrt` command finds the firmware the same way
//! ([`resolve_firmware_dir`]): `--firmware-dir`, else `$MODELRT_AMD_FIRMWARE_DIR`, else a directory a
//! host tool set ([`set_fallback_firmware_dir`]), else `/lib/firmware/amdgpu`.
use crate::assembly::{self, Transport};
use crate::boot::firmware::DEFAULT_DIR;
use crate::device::AmdDevice;
use crate::error::AmdError;
use modelrt_asm24::host::Selector;
use modelrt_asm24::session::TransportKind;
use modelrt_core::bundle::Bundle;
use modelrt_hal::target::Target;
use modelrt_platform::device::{always, serves_all};
use modelrt_platform::{DeviceSpec, Loaded, LoadedModel, OpenRequest, UsbCounts};
use modelrt_rdna3::Rdna3;
use std::path::{Path, PathBuf};

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

/// A file every Navi31 firmware directory holds (the PSP secure OS, docs/hw/amd-firmware.md §1).
pub const PROBE: &str = "psp_13_0_0_sos.bin";

/// Where `cargo xtask firmware` puts its copy, relative to the checkout.
const XTASK_COPY: &str = "target/amdgpu-firmware";

/// The firmware directory: the first of `flag` (`--firmware-dir`), `$MODELRT_AMD_FIRMWARE_DIR`, the
/// fallback a host tool set, `/lib/firmware/amdgpu` that is given, required to hold [`PROBE`]. The
/// error lists every place tried and, when `cargo xtask firmware`'s copy exists in the current
/// directory or this build's checkout, names it.
pub fn resolve_firmware_dir(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    resolve_firmware_dir_for(flag, Some(CLI_OPTION))
}

/// How the command line names the firmware directory ([`AmdOptions::option_name`]).
pub const CLI_OPTION: &str = "--firmware-dir";

/// [`resolve_firmware_dir`] for a caller that names the directory `option` (`--firmware-dir`,
/// Python's `firmware_dir=`; `None`: an API with only the environment variable, like C's): errors
/// name that option, not the command line's.
pub fn resolve_firmware_dir_for(
    flag: Option<&Path>,
    option: Option<&str>,
) -> anyhow::Result<PathBuf> {
    let option_label = option.unwrap_or("the firmware directory");
    let fallback = FALLBACK_DIR
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let chain = [
        (option_label, flag.map(Path::to_path_buf)),
        (
            "$MODELRT_AMD_FIRMWARE_DIR",
            std::env::var_os(FIRMWARE_ENV).map(PathBuf::from),
        ),
        ("the host tool's copy", fallback),
        ("the system directory", Some(PathBuf::from(DEFAULT_DIR))),
    ];
    let mut tried = Vec::new();
    for (what, dir) in chain {
        let Some(dir) = dir else {
            match what {
                "$MODELRT_AMD_FIRMWARE_DIR" => tried.push(format!("{what} (not set)")),
                _ if what == option_label && option.is_some() => {
                    tried.push(format!("{what} (not given)"))
                }
                _ => {}
            }
            continue;
        };
        if dir.join(PROBE).is_file() {
            return Ok(dir);
        }
        // `--firmware-dir /x`, Python's `firmware_dir="/x"`.
        let place = match what.strip_suffix('=') {
            Some(_) => format!("{what}{:?}", dir.display().to_string()),
            None => format!("{what} {}", dir.display()),
        };
        if dir.is_dir() {
            tried.push(format!("{place} (no {PROBE})"));
        } else {
            tried.push(format!("{place} (no such directory)"));
        }
        break;
    }
    // `cargo xtask firmware`'s copy: in the current directory, else in this build's checkout.
    // This crate sits at usbgpu/amd/ in the checkout.
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(|p| p.join(XTASK_COPY));
    let copy = std::iter::once(PathBuf::from(XTASK_COPY))
        .chain(checkout)
        .find(|d| d.join(PROBE).is_file());
    // How this caller points at a directory: its own option, else the environment variable.
    let point = |dir: &str| match option {
        Some(CLI_OPTION) => format!("pass {CLI_OPTION} {dir}"),
        Some(o) => format!("pass {o}{dir:?}"),
        None => format!("set {FIRMWARE_ENV}={dir}"),
    };
    let hint = match copy {
        Some(d) => format!(
            "a copy from `cargo xtask firmware` is in {}: {}",
            d.display(),
            point(&d.display().to_string())
        ),
        None => {
            let either = match option {
                Some(_) => format!("{} or set {FIRMWARE_ENV}", point("DIR")),
                None => point("DIR"),
            };
            format!(
                "{either} to a directory holding it; \
`cargo xtask firmware` (in the modelrt checkout) fetches a copy into target/amdgpu-firmware, \
or install Debian's firmware-amd-graphics"
            )
        }
    };
    anyhow::bail!(
        "no AMD Navi31 firmware found; tried {}; {hint}",
        tried.join(", ")
    )
}

/// Fail unless an ASM24 bridge is attached (`--device usb`).
pub fn require_bridge() -> anyhow::Result<()> {
    let found = modelrt_asm24::session::list(TransportKind::Usb)
        .map_err(|e| anyhow::anyhow!("cannot list USB devices: {e}"))?;
    if found.is_empty() {
        anyhow::bail!(NO_BRIDGE);
    }
    Ok(())
}

/// The error for `--device usb` without a bridge (the runner adds which emulated device runs the
/// bundle instead).
const NO_BRIDGE: &str =
    "no ASM24 bridge found on USB (looked for add1:0001 and 3801:0001 with custom firmware)";

/// Boot the GPU with the firmware in `dir`; `emulated` selects the GPU model. Returns the device
/// and a display name that says what is real and what is modelled.
pub fn open(emulated: bool, dir: &Path) -> anyhow::Result<(UsbAmdDevice, String)> {
    let (kind, exec) = if emulated {
        (
            TransportKind::Emu,
            Some(Box::new(Rdna3::new()) as Box<dyn modelrt_rdna3::shader::ShaderExecutor>),
        )
    } else {
        (TransportKind::Usb, None)
    };
    let g = assembly::open(kind, Selector::Index(0), dir, exec).map_err(|e| match e {
        // The session's message names `--transport emu`, a `modelrt usb` option.
        AmdError::Invalid {
            step: "open bridge",
            ..
        } => anyhow::anyhow!(NO_BRIDGE),
        e => anyhow::anyhow!("{e}"),
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
pub fn transfer_counts(d: &mut UsbAmdDevice) -> modelrt_asm24::counting::TransferCounts {
    d.am.bus.bridge().transport().counts()
}

/// [`transfer_counts`] as the platform's summary.
fn usb_counts(d: &mut UsbAmdDevice) -> UsbCounts {
    let c = transfer_counts(d);
    UsbCounts {
        control: c.control(),
        bulk: c.bulk(),
        bytes_out: c.control_bytes_out + c.bulk_bytes_out,
        bytes_in: c.control_bytes_in + c.bulk_bytes_in,
    }
}

/// The AMD devices' load option (`DeviceOptions::set`): the firmware directory given on the command
/// line or through an API (`--firmware-dir`, `firmware_dir=`); unset, [`resolve_firmware_dir`] looks
/// in the environment and the default places.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AmdOptions {
    pub firmware_dir: Option<PathBuf>,
    /// How the caller names `firmware_dir` in its errors: [`CLI_OPTION`], Python's
    /// `firmware_dir=`; `None` (the default): a caller with no such option, whose errors point to
    /// the environment variable (the C API).
    pub option_name: Option<&'static str>,
}

/// The AMD devices' load-progress option: called as `(bytes sent, total bytes)` while the bundle's
/// weights stream into VRAM through the copy-in pipeline (a CLI draws a progress bar from it).
#[derive(Clone)]
pub struct AmdLoadProgress(pub std::sync::Arc<dyn Fn(u64, u64) + Send + Sync>);

/// Bytes a load of `bundle` uploads (weights and initial states).
pub fn load_bytes(bundle: &Bundle<'_>) -> u64 {
    bundle
        .body()
        .buffers
        .iter()
        .filter_map(|b| b.ok())
        .filter_map(|b| bundle.init_bytes(&b).map(|i| i.len() as u64))
        .sum()
}

/// An AMD GPU behind an ASM24 bridge.
pub static USB: DeviceSpec = DeviceSpec {
    name: "usb",
    help: "An AMD GPU (gfx1100) behind an ASM24 USB bridge, booted by the AM driver (untested on hardware here)",
    family: Some("amd"),
    emulated: None,
    hidden: false,
    serves: serves_all,
    available: || require_bridge().is_ok(),
    open: open_real,
};

/// The AM driver against the bridge emulator's Navi31 GPU model.
pub static USB_EMU: DeviceSpec = DeviceSpec {
    name: "usb-emu",
    help: "The AM driver against the bridge emulator's Navi31 GPU model; kernels run on the RDNA3 interpreter, so outputs are computed (timings are emulated)",
    family: Some("amd"),
    emulated: Some("the emulated GPU's and link's"),
    hidden: false,
    // The Navi31 GPU model is a gfx1100: other AMD targets have no emulated device.
    serves: |t| matches!(t, Target::Amd { gfx: 0x1100 }),
    available: always,
    open: open_emulated,
};

fn open_real<'b>(
    bundle: Bundle<'b>,
    req: &OpenRequest<'_>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    // An absent bridge is the first thing to report (the registry adds the emulated device's name).
    require_bridge()?;
    open_on(bundle, req, false)
}

fn open_emulated<'b>(
    bundle: Bundle<'b>,
    req: &OpenRequest<'_>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    open_on(bundle, req, true)
}

fn open_on<'b>(
    bundle: Bundle<'b>,
    req: &OpenRequest<'_>,
    emulated: bool,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    let opts = req.options.get::<AmdOptions>();
    let flag = opts.and_then(|o| o.firmware_dir.as_deref());
    let dir = resolve_firmware_dir_for(flag, opts.and_then(|o| o.option_name))?;
    let (mut dev, name) = open(emulated, &dir)?;
    // The weights stream through the copy-in pipeline (docs/hw/amd-driver.md §6.1).
    let total = load_bytes(&bundle);
    let progress = req.options.get::<AmdLoadProgress>().map(|p| {
        let p = p.0.clone();
        Box::new(move |sent: u64| p(sent.min(total), total)) as Box<dyn FnMut(u64) + Send>
    });
    dev.stream_loads(progress);
    Ok(Loaded::new(bundle, dev, name, true)?
        .with_usb_counts(usb_counts)
        .boxed())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The firmware errors name the caller's own option.
    #[test]
    fn firmware_errors_name_the_callers_option_and_a_missing_directory() {
        let missing = Path::new("/no-such-firmware-dir");
        let cli = resolve_firmware_dir(Some(missing)).unwrap_err().to_string();
        assert!(
            cli.contains("--firmware-dir /no-such-firmware-dir (no such directory)"),
            "{cli}"
        );
        assert!(cli.contains("pass --firmware-dir "), "{cli}");
        let py = resolve_firmware_dir_for(Some(missing), Some("firmware_dir="))
            .unwrap_err()
            .to_string();
        assert!(
            py.contains("firmware_dir=\"/no-such-firmware-dir\" (no such directory)"),
            "{py}"
        );
        assert!(py.contains("pass firmware_dir=\""), "{py}");
        assert!(!py.contains("--firmware-dir"), "{py}");
        let c = resolve_firmware_dir_for(Some(missing), None)
            .unwrap_err()
            .to_string();
        assert!(c.contains(&format!("set {FIRMWARE_ENV}=")), "{c}");
        assert!(!c.contains("--firmware-dir") && !c.contains("pass "), "{c}");
        // A directory without the firmware is not "no such directory".
        let empty = std::env::temp_dir();
        let e = resolve_firmware_dir(Some(&empty)).unwrap_err().to_string();
        assert!(e.contains(&format!("(no {PROBE})")), "{e}");
    }
}
