//! Building `qemu_harness` (qcom/hexagon/dsp/qemu_harness.c + dsp_helpers.c, embedded in this crate) with clang-19 and running it under
//! `qemu-hexagon-static` ≥ 8; the build is cached in a directory private to the user (`cache`). stdin is written from a helper thread so large buffers cannot deadlock the pipes.
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::{cache, HexagonError};

const HARNESS_C: &str = include_str!("../../../dsp/qemu_harness.c");
const HELPERS_C: &str = include_str!("../../../dsp/dsp_helpers.c");
/// The emulator (Debian's qemu-user; `qemu-hexagon-static` is the name tinygrad's mock uses too).
pub const QEMU: &str = "qemu-hexagon-static";
/// qemu 7.2 mis-executes some LLVM-19 Hexagon packets (docs/hw/hexagon-dsp.md §6).
pub const MIN_QEMU_MAJOR: u32 = 8;
/// The C compiler for the harness.
pub const CLANG: &str = "clang-19";
const FLAGS: &[&str] = &[
    "--target=hexagon",
    "-mcpu=hexagonv65",
    "-mhvx=v65",
    "-mhvx-length=128b",
    "-O2",
    "-Wall",
    "-Werror",
    "-ffreestanding",
    "-fno-builtin",
    "-nostdlib",
    "-fno-stack-protector",
    "-static",
    "-fuse-ld=lld",
];

fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.iter().flat_map(|p| p.bytes().chain([0])) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The qemu major version, or an error naming what to install.
pub fn check_qemu() -> Result<u32, HexagonError> {
    let out = Command::new(QEMU).arg("--version").output().map_err(|_| {
        HexagonError::Tool(format!(
            "{QEMU} is not installed (need >= {MIN_QEMU_MAJOR}; `cargo xtask setup` installs it)"
        ))
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let major = text
        .lines()
        .next()
        .and_then(|l| l.split("version").nth(1))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.split('.').next())
        .and_then(|v| v.parse::<u32>().ok())
        .ok_or_else(|| HexagonError::Tool(format!("cannot read the version of {QEMU}")))?;
    if major < MIN_QEMU_MAJOR {
        return Err(HexagonError::Tool(format!(
            "{QEMU} {major} is too old: need >= {MIN_QEMU_MAJOR} (7.2 mis-executes LLVM-19 Hexagon code; `cargo xtask setup` installs it from bookworm-backports)"
        )));
    }
    Ok(major)
}

/// Build (once per sources, cached in a directory private to the user: see `cache`) and return
/// the path of `qemu_harness`.
pub fn harness() -> Result<PathBuf, HexagonError> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let uid = cache::effective_uid()?;
            let xdg = std::env::var_os("XDG_RUNTIME_DIR");
            let root = cache::private_root(xdg.as_deref(), &std::env::temp_dir(), uid)?;
            build(&root, uid).map_err(|e| e.to_string())
        })
        .clone()
        .map_err(HexagonError::Tool)
}

/// Build `qemu_harness` into the private directory `root` of user `uid`, or reuse the build there.
fn build(root: &Path, uid: u32) -> Result<PathBuf, HexagonError> {
    let mut key = vec![HARNESS_C, HELPERS_C];
    key.extend_from_slice(FLAGS);
    let exe = root.join(format!("qemu-harness-{:016x}", fnv(&key)));
    if cache::cached(&exe, uid).map_err(HexagonError::Tool)? {
        return Ok(exe);
    }
    let dir = cache::fresh_dir(root, "build").map_err(|e| {
        HexagonError::Tool(format!(
            "cannot build qemu_harness in {}: {e}",
            root.display()
        ))
    })?;
    let built = compile(&dir).and_then(|built| {
        std::fs::rename(&built, &exe).map_err(|e| {
            HexagonError::Tool(format!(
                "cannot build qemu_harness in {}: {e}",
                dir.display()
            ))
        })
    });
    // Best effort: the build directory is private and uniquely named, a leftover harms nothing.
    let _ = std::fs::remove_dir_all(&dir);
    built.map(|()| exe)
}

/// Write the sources into the fresh directory `dir` and compile them; returns the executable.
fn compile(dir: &Path) -> Result<PathBuf, HexagonError> {
    let io = |e: std::io::Error| {
        HexagonError::Tool(format!(
            "cannot build qemu_harness in {}: {e}",
            dir.display()
        ))
    };
    cache::write_new(&dir.join("qemu_harness.c"), HARNESS_C.as_bytes()).map_err(io)?;
    cache::write_new(&dir.join("dsp_helpers.c"), HELPERS_C.as_bytes()).map_err(io)?;
    let exe = dir.join("qemu_harness");
    let out = Command::new(CLANG)
        .args(FLAGS)
        .args(["qemu_harness.c", "dsp_helpers.c", "-o"])
        .arg(&exe)
        .current_dir(dir)
        .output()
        .map_err(|_| HexagonError::Tool(format!("{CLANG} is not installed (apt-get install -y clang-19 lld-19, or `cargo xtask setup`)")))?;
    if !out.status.success() {
        return Err(HexagonError::Tool(format!(
            "{CLANG} failed to build qemu_harness: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(exe)
}

/// Run `qemu_harness` under qemu with `input` on stdin; returns stdout, or the harness's error (exit code + stderr).
pub fn run(input: Vec<u8>) -> Result<Vec<u8>, HexagonError> {
    check_qemu()?;
    let exe = harness()?;
    let mut child = Command::new(QEMU)
        .arg(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| HexagonError::Tool(format!("cannot start {QEMU}: {e}")))?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| HexagonError::Protocol("no stdin pipe".into()))?;
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let mut stdout = Vec::new();
    let mut stderr = String::new();
    let mut out_pipe = child
        .stdout
        .take()
        .ok_or_else(|| HexagonError::Protocol("no stdout pipe".into()))?;
    let mut err_pipe = child
        .stderr
        .take()
        .ok_or_else(|| HexagonError::Protocol("no stderr pipe".into()))?;
    let err_reader = std::thread::spawn(move || {
        let _ = err_pipe.read_to_string(&mut stderr);
        stderr
    });
    out_pipe
        .read_to_end(&mut stdout)
        .map_err(|e| HexagonError::Protocol(format!("reading the harness output: {e}")))?;
    let status = child
        .wait()
        .map_err(|e| HexagonError::Protocol(format!("waiting for {QEMU}: {e}")))?;
    let stderr = err_reader.join().unwrap_or_default();
    // A write error means the harness exited early; its exit status says why.
    let _ = writer.join();
    if !status.success() {
        return Err(HexagonError::Harness {
            code: status.code(),
            message: stderr.trim().to_string(),
        });
    }
    Ok(stdout)
}
