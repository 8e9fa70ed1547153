//! The two transports of one device: `--device dsp` opens the FastRPC device nodes (`/dev/adsprpc-smd`, `/dev/ion`;
//! Linux, never run on a real DSP) with the device's cDSP shell; `--device dsp-emu` opens the FastRPC model
//! (`crate::emu::device`, feature `emu`) whose executor runs the model library under qemu-hexagon. Everything
//! above the [`FastRpcIo`] surface — the session, [`HexagonDevice`] — is the same code.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{DspError, HexagonDevice};
use crate::fastrpc::session::{Session, SessionConfig};
use crate::fastrpc::FastRpcIo;

/// Which FastRPC surface the device talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// `/dev/adsprpc-smd` and `/dev/ion` (Linux).
    Device,
    /// The FastRPC model, the DSP side under qemu-hexagon.
    Emulated,
}

impl Transport {
    /// What `modelrt` reports as the device.
    pub fn device_name(self) -> &'static str {
        match self {
            Transport::Emulated => "dsp-emu (FastRPC model; the model library runs under qemu-hexagon, one invoke per step; device time = qemu instructions / 1000 read as µs)",
            Transport::Device => "dsp (Hexagon cDSP over FastRPC; UNVERIFIED on hardware)",
        }
    }
}

/// Where the device's files are.
#[derive(Clone, Debug)]
pub struct DspOptions {
    /// File-system root holding `dsp/cdsp/fastrpc_shell_3` (a device's `/`).
    pub root: PathBuf,
    /// Where `testsig-0x<serial>.so` is served from (device only).
    pub testsig_dir: Option<PathBuf>,
}

impl Default for DspOptions {
    /// `/`, and the test-signature directory from `MODELRT_TESTSIG_DIR` if set.
    fn default() -> Self {
        DspOptions {
            root: "/".into(),
            testsig_dir: std::env::var_os("MODELRT_TESTSIG_DIR").map(Into::into),
        }
    }
}

/// How long the emulated device waits for a reverse call or a hung invoke.
#[cfg(feature = "emu")]
const EMU_WAIT: Duration = Duration::from_secs(120);

/// The FastRPC model behind an emulated device (its call counters), `None` on the device nodes.
#[cfg(feature = "emu")]
pub type Model = Option<Arc<crate::emu::device::FastRpcModel>>;
/// Without the `emu` feature there is no model.
#[cfg(not(feature = "emu"))]
pub type Model = Option<std::convert::Infallible>;

/// A transport's FastRPC surface, its model (if emulated) and the shell to boot.
type Surface = (Arc<dyn FastRpcIo>, Model, Vec<u8>);

#[cfg(feature = "emu")]
fn emulated() -> Result<Surface, DspError> {
    use crate::emu::device::{FastRpcModel, Qemu};
    crate::emu::harness::qemu::check_qemu().map_err(|e| DspError::Other(e.to_string()))?;
    let m = Arc::new(FastRpcModel::new(Box::new(Qemu), EMU_WAIT));
    // the model only checks that INIT names an ION buffer holding an ELF
    let mut shell = b"\x7fELF".to_vec();
    shell.resize(4096, 0);
    Ok((m.clone(), Some(m), shell))
}

#[cfg(not(feature = "emu"))]
fn emulated() -> Result<Surface, DspError> {
    Err(DspError::Other(
        "this build has no FastRPC model (modelrt-hexagon feature `emu`)".into(),
    ))
}

fn device_nodes() -> Result<Arc<dyn FastRpcIo>, DspError> {
    #[cfg(target_os = "linux")]
    {
        Ok(Arc::new(crate::fastrpc::real::RealFastRpc::open()?))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(DspError::Other(
            "the FastRPC device exists only on Linux; use --device dsp-emu".into(),
        ))
    }
}

/// Open `transport` and bring a session up on it: the Hexagon device, and the FastRPC model when emulated.
pub fn open(transport: Transport, opts: &DspOptions) -> Result<(HexagonDevice, Model), DspError> {
    let (io, model, shell) = match transport {
        Transport::Emulated => emulated()?,
        Transport::Device => {
            let shell = crate::fastrpc::selftest::find_shell(&opts.root).ok_or_else(|| {
                DspError::Other(format!(
                    "no cDSP shell (fastrpc_shell_3) in {} or {}",
                    opts.root.join("dsp").display(),
                    opts.root.join("vendor/dsp").display()
                ))
            })?;
            let bytes = std::fs::read(&shell)
                .map_err(|e| DspError::Other(format!("reading {}: {e}", shell.display())))?;
            (device_nodes()?, None, bytes)
        }
    };
    let cfg = SessionConfig {
        shell,
        testsig_dir: opts.testsig_dir.clone(),
        listener_timeout: Duration::from_secs(2),
    };
    Ok((HexagonDevice::new(Session::open(io, &cfg)?), model))
}
