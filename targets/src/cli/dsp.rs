//! `modelrt dsp …`: Hexagon cDSP (FastRPC) tools for comma devices. Nothing here has run on real hardware.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Subcommand;
use modelrt_hexagon::bundle::selftest as bundle_selftest;
use modelrt_hexagon::device::{DspOptions, Transport};
use modelrt_hexagon::emu::device::{FastRpcModel, Qemu};
use modelrt_hexagon::fastrpc::selftest::{self, Check};
use modelrt_hexagon::fastrpc::FastRpcIo;

#[derive(Subcommand)]
pub enum DspCmd {
    /// Check the device nodes, the cDSP shell and a test signature, bring a FastRPC session up (and load a
    /// kernel library if given), then run a tiny embedded hexagon bundle through the FastRPC engine and check its
    /// outputs against its embedded reference, with timings. UNVERIFIED: modelrt's FastRPC path has never run on
    /// a real DSP.
    Selftest {
        /// File-system root to probe (a device's "/"; a directory tree for testing).
        #[arg(long, default_value = "/")]
        root: PathBuf,
        /// Where `testsig-0x<serial>.so` is looked for and served from.
        #[arg(long, default_value = ".")]
        testsig_dir: PathBuf,
        /// Use the built-in FastRPC model instead of /dev/adsprpc-smd: every call is validated and the DSP side
        /// runs under qemu-hexagon. The device probe then describes this machine and is informational.
        #[arg(long)]
        emu: bool,
        /// A Hexagon kernel library (.so exporting `entry`) to load and close through the listener.
        #[arg(long)]
        library: Option<PathBuf>,
    },
}

/// What this selftest cannot establish without a comma device.
const UNVERIFIED: [&str; 5] = [
    "the cDSP loader accepts modelrt's libraries (unsigned: a testsig for the device's serial is needed)",
    "the adsprpc ioctl numbers, struct layouts and bring-up order (written from tinygrad's tables)",
    "HAP_mmap maps `offset + size` bytes of a dma-buf at its start (the runner passes that as the length)",
    "a misaligned (not 128-byte) buffer view faults on the DSP (the model refuses it; qemu would not)",
    "DSP timings (the model reports qemu instructions / 1000 as µs)",
];

pub fn run(cmd: DspCmd) -> anyhow::Result<()> {
    let DspCmd::Selftest {
        root,
        testsig_dir,
        emu,
        library,
    } = cmd;
    outln!("NOTE: modelrt's FastRPC runtime has never run on a real Hexagon DSP; results below are not a hardware proof.");
    let probe = selftest::probe(&root, &testsig_dir);
    let mut checks: Vec<Check> = Vec::new();
    let (io, shell): (Arc<dyn FastRpcIo>, Vec<u8>) = if emu {
        outln!(
            "device probe of {} (informational under --emu):",
            root.display()
        );
        for c in &probe {
            outln!(
                "info {}: {} ({})",
                c.name,
                c.detail,
                if c.ok { "present" } else { "absent" }
            );
        }
        outln!("FastRPC: built-in model (no DSP): every call is validated, the DSP side runs under qemu-hexagon");
        let mut shell = b"\x7fELF".to_vec();
        shell.resize(4096, 0);
        let shell = match selftest::find_shell(&root) {
            Some(p) => std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?,
            None => shell,
        };
        let m = FastRpcModel::new(Box::new(Qemu), Duration::from_secs(120));
        (Arc::new(m), shell)
    } else {
        checks.extend(probe);
        let shell = match selftest::find_shell(&root) {
            Some(p) => std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?,
            None => {
                report(&checks);
                bail!("no cDSP shell found under {}, cannot bring a session up: this is not a comma device with a Hexagon DSP (use --emu for the built-in FastRPC model, the DSP side under qemu-hexagon)", root.display());
            }
        };
        (real_device()?, shell)
    };
    let lib = match &library {
        Some(p) => Some(std::fs::read(p).with_context(|| format!("reading {}", p.display()))?),
        None => None,
    };
    let name = library
        .as_ref()
        .and_then(|p| p.file_name())
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    checks.extend(selftest::bring_up(
        io,
        shell,
        Some(testsig_dir.clone()),
        lib.map(|b| (name.as_str(), b)),
    ));
    let backend = if emu {
        Transport::Emulated
    } else {
        Transport::Device
    };
    let opts = DspOptions {
        root,
        testsig_dir: Some(testsig_dir),
    };
    checks.extend(bundle_selftest::run_embedded(backend, &opts));
    report(&checks);
    outln!("UNVERIFIED here (device-only facts):");
    for u in UNVERIFIED {
        outln!("  - {u}");
    }
    let failed = checks.iter().filter(|c| !c.ok).count();
    if failed > 0 {
        bail!("{failed} DSP selftest check(s) failed");
    }
    Ok(())
}

fn report(checks: &[Check]) {
    for c in checks {
        outln!(
            "{} {}: {}",
            if c.ok { "ok  " } else { "FAIL" },
            c.name,
            c.detail
        );
    }
}

#[cfg(target_os = "linux")]
fn real_device() -> anyhow::Result<Arc<dyn FastRpcIo>> {
    Ok(Arc::new(
        modelrt_hexagon::fastrpc::real::RealFastRpc::open()?
    ))
}

#[cfg(not(target_os = "linux"))]
fn real_device() -> anyhow::Result<Arc<dyn FastRpcIo>> {
    bail!("the FastRPC device exists only on Linux; use --emu")
}
