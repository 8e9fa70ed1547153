//! `modelrt dsp …`: Hexagon cDSP (FastRPC) tools for comma devices. Nothing here has run on real hardware.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Subcommand;
use modelrt_qcom::dsp::selftest::{self, Check};
use modelrt_qcom::dsp::FastRpcIo;
use modelrt_qcom::emu::fastrpc::{FastRpcModel, Refuse};

#[derive(Subcommand)]
pub enum DspCmd {
    /// Check the device nodes, the cDSP shell and a test signature, then bring a FastRPC session up (and load
    /// a kernel library if given). UNVERIFIED: modelrt's FastRPC path has never run on a real DSP.
    Selftest {
        /// File-system root to probe (a device's "/"; a directory tree for testing).
        #[arg(long, default_value = "/")]
        root: PathBuf,
        /// Where `testsig-0x<serial>.so` is looked for and served from.
        #[arg(long, default_value = ".")]
        testsig_dir: PathBuf,
        /// Use the built-in FastRPC model instead of /dev/adsprpc-smd (validates the traffic; runs no kernels).
        #[arg(long)]
        emu: bool,
        /// A Hexagon kernel library (.so exporting `entry`) to load and close through the listener.
        #[arg(long)]
        library: Option<PathBuf>,
    },
}

pub fn run(cmd: DspCmd) -> anyhow::Result<()> {
    let DspCmd::Selftest {
        root,
        testsig_dir,
        emu,
        library,
    } = cmd;
    println!("NOTE: modelrt's FastRPC runtime has never run on a real Hexagon DSP; results below are not a hardware proof.");
    let mut checks = selftest::probe(&root, &testsig_dir);
    let io: Arc<dyn FastRpcIo> = if emu {
        println!(
            "FastRPC: built-in model (no DSP): every call is validated, kernels are not executed"
        );
        Arc::new(FastRpcModel::new(Box::new(Refuse), Duration::from_secs(2)))
    } else {
        real_device()?
    };
    let shell = match selftest::find_shell(&root) {
        Some(p) => std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?,
        None => {
            report(&checks);
            bail!("no cDSP shell found, cannot bring a session up");
        }
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
        Some(testsig_dir),
        lib.map(|b| (name.as_str(), b)),
    ));
    report(&checks);
    let failed = checks.iter().filter(|c| !c.ok).count();
    if failed > 0 {
        bail!("{failed} DSP selftest check(s) failed");
    }
    Ok(())
}

fn report(checks: &[Check]) {
    for c in checks {
        println!(
            "{} {}: {}",
            if c.ok { "ok  " } else { "FAIL" },
            c.name,
            c.detail
        );
    }
}

#[cfg(target_os = "linux")]
fn real_device() -> anyhow::Result<Arc<dyn FastRpcIo>> {
    Ok(Arc::new(modelrt_qcom::dsp::real::RealFastRpc::open()?))
}

#[cfg(not(target_os = "linux"))]
fn real_device() -> anyhow::Result<Arc<dyn FastRpcIo>> {
    bail!("the FastRPC device exists only on Linux; use --emu")
}
