//! `modelrt dsp selftest`: what a person with a comma device can check without a bundle — the device nodes, the
//! cDSP shell, a test signature for this SoC — and a session bring-up (plus, given a kernel library, one load and
//! close through the listener). Runs against the real device or the FastRPC model; says which.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::session::{Session, SessionConfig};
use super::FastRpcIo;

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    pub detail: String,
}

fn check(name: &'static str, ok: bool, detail: impl Into<String>) -> Check {
    Check {
        name,
        ok,
        detail: detail.into(),
    }
}

/// Where the shell may live, relative to the file-system root.
pub const SHELL_PATHS: [&str; 2] = [
    "dsp/cdsp/fastrpc_shell_3",
    "vendor/dsp/cdsp/fastrpc_shell_3",
];

/// The shell's path under `root`, if any.
pub fn find_shell(root: &Path) -> Option<PathBuf> {
    SHELL_PATHS
        .iter()
        .map(|p| root.join(p))
        .find(|p| p.is_file())
}

/// File-system checks under `root` ("/" on a device); test signatures are looked for in `testsig_dir`.
pub fn probe(root: &Path, testsig_dir: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    for (name, node) in [("ION node", "dev/ion"), ("FastRPC node", "dev/adsprpc-smd")] {
        let p = root.join(node);
        out.push(check(name, p.exists(), p.display().to_string()));
    }
    let upstream = root.join("dev/fastrpc-cdsp");
    if upstream.exists() {
        out.push(check(
            "upstream fastrpc node",
            true,
            format!(
                "{} exists (upstream driver; modelrt speaks the adsprpc ABI only)",
                upstream.display()
            ),
        ));
    }
    out.push(match find_shell(root) {
        Some(p) => {
            let elf = std::fs::read(&p).is_ok_and(|b| b.starts_with(b"\x7fELF"));
            check(
                "cDSP shell",
                elf,
                format!(
                    "{} ({})",
                    p.display(),
                    if elf { "ELF" } else { "not a readable ELF" }
                ),
            )
        }
        None => check(
            "cDSP shell",
            false,
            format!("none of {SHELL_PATHS:?} under {}", root.display()),
        ),
    });
    let sigs: Vec<String> = std::fs::read_dir(testsig_dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("testsig-") && n.ends_with(".so"))
                .collect()
        })
        .unwrap_or_default();
    let serial = std::fs::read_to_string(root.join("sys/devices/soc0/serial_number"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    out.push(match (serial, sigs.is_empty()) {
        (_, true) => check(
            "test signature",
            false,
            format!(
                "no testsig-*.so in {} (unsigned libraries will not load)",
                testsig_dir.display()
            ),
        ),
        (Some(s), false) => {
            let want = format!("testsig-0x{s:08x}.so");
            check(
                "test signature",
                sigs.contains(&want),
                format!("want {want}, found {sigs:?}"),
            )
        }
        (None, false) => check(
            "test signature",
            true,
            format!("found {sigs:?} (SoC serial unreadable, not matched)"),
        ),
    });
    out
}

/// Bring a session up on `io` and (optionally) load and close `lib`; timings in the details.
pub fn bring_up(
    io: Arc<dyn FastRpcIo>,
    shell: Vec<u8>,
    testsig_dir: Option<PathBuf>,
    lib: Option<(&str, Vec<u8>)>,
) -> Vec<Check> {
    let cfg = SessionConfig {
        shell,
        testsig_dir,
        listener_timeout: Duration::from_secs(2),
    };
    let t = Instant::now();
    let s = match Session::open(io, &cfg) {
        Ok(s) => s,
        Err(e) => return vec![check("session bring-up", false, e.to_string())],
    };
    let mut out = vec![check(
        "session bring-up",
        true,
        format!("{:.2} ms", t.elapsed().as_secs_f64() * 1e3),
    )];
    if let Some((name, bytes)) = lib {
        let t = Instant::now();
        match s
            .open_lib(name, bytes.into())
            .and_then(|h| s.close_lib(name, h))
        {
            Ok(()) => out.push(check(
                "library load+close",
                true,
                format!("{name}: {:.2} ms", t.elapsed().as_secs_f64() * 1e3),
            )),
            Err(e) => out.push(check("library load+close", false, e.to_string())),
        }
    }
    out.push(match s.close() {
        Ok(()) => check("session close", true, "listener stopped"),
        Err(e) => check("session close", false, e.to_string()),
    });
    out
}
