//! The independent reference: a kernel's own OpenCL C source compiled for the host by clang's OpenCL C mode
//! and run over the same NDRange by `ref_driver.c` (work group after work group, work item after work item).
//! Nothing of modelrt is involved: clang compiles the source, the driver supplies `get_global_id` & co.
use std::path::{Path, PathBuf};
use std::process::Command;

/// A buffer parameter of a kernel, from its OpenCL C signature (`__global uchar* data0_131072`).
pub struct Param {
    /// Element type as written (`uchar`, `float`).
    pub ty: String,
    pub bytes: usize,
}

/// The buffer parameters of `src`'s kernel, in signature order.
pub fn params(src: &str) -> Result<Vec<Param>, String> {
    let open = src.find('(').ok_or("no parameter list")?;
    let close = src[open..].find(')').ok_or("unterminated parameter list")? + open;
    src[open + 1..close]
        .split(',')
        .map(|p| {
            let p = p.trim();
            let rest = p
                .strip_prefix("__global ")
                .ok_or(format!("parameter `{p}` is not a __global buffer"))?;
            let (ty, name) = rest
                .split_once('*')
                .ok_or(format!("parameter `{p}` is not a pointer"))?;
            let ty = ty.trim().to_string();
            let elems: usize = name
                .trim()
                .rsplit_once('_')
                .and_then(|(_, n)| n.parse().ok())
                .ok_or(format!("parameter `{p}`: no element count in its name"))?;
            let size = match ty.as_str() {
                "uchar" | "char" => 1,
                "float" | "int" | "uint" => 4,
                t => return Err(format!("parameter `{p}`: element type {t} not handled")),
            };
            Ok(Param {
                ty,
                bytes: elems * size,
            })
        })
        .collect()
}

/// clang-19 (or `$MODELRT_CLANG`), if it runs.
pub fn clang() -> Option<PathBuf> {
    let c = std::env::var_os("MODELRT_CLANG")
        .map(PathBuf::from)
        .unwrap_or_else(|| "clang-19".into());
    Command::new(&c)
        .arg("--version")
        .output()
        .ok()?
        .status
        .success()
        .then_some(c)
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Compile kernel `name` (OpenCL C at `cl`, `nargs` buffers) with the driver into an executable in `dir`.
pub fn build(
    clang: &Path,
    dir: &Path,
    cl: &Path,
    name: &str,
    nargs: usize,
) -> Result<PathBuf, String> {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/qcom_cl/ref_driver.c");
    let (k, d, exe) = (
        dir.join(format!("{name}.o")),
        dir.join(format!("{name}-driver.o")),
        dir.join(name),
    );
    // OpenCL C for the host: the default header declares the built-ins; x86-64 without FMA keeps `a*b+c`
    // as a rounded product and a rounded sum, as the interpreter's unfused `mad.f32` (§16.4).
    run(Command::new(clang)
        .args([
            "-x",
            "cl",
            "-cl-std=CL2.0",
            "-Xclang",
            "-finclude-default-header",
            "-O1",
            "-mno-fma",
            "-c",
        ])
        .arg(cl)
        .arg("-o")
        .arg(&k))?;
    run(Command::new(clang)
        .args([
            "-O1",
            "-c",
            &format!("-DKERNEL={name}"),
            &format!("-DNARGS={nargs}"),
        ])
        .arg(&driver)
        .arg("-o")
        .arg(&d))?;
    run(Command::new(clang)
        .arg(&d)
        .arg(&k)
        .arg("-lm")
        .arg("-o")
        .arg(&exe))?;
    Ok(exe)
}

/// Run the reference executable over `groups` × `local` on `bufs` (updated in place).
pub fn execute(
    exe: &Path,
    dir: &Path,
    groups: [u32; 3],
    local: [u32; 3],
    bufs: &mut [Vec<u8>],
) -> Result<(), String> {
    let files: Vec<PathBuf> = (0..bufs.len())
        .map(|i| dir.join(format!("buf{i}.bin")))
        .collect();
    for (f, b) in files.iter().zip(bufs.iter()) {
        std::fs::write(f, b).map_err(|e| format!("{f:?}: {e}"))?;
    }
    let mut cmd = Command::new(exe);
    cmd.args(groups.iter().chain(local.iter()).map(|v| v.to_string()))
        .args(&files);
    run(&mut cmd)?;
    for (f, b) in files.iter().zip(bufs.iter_mut()) {
        *b = std::fs::read(f).map_err(|e| format!("{f:?}: {e}"))?;
    }
    Ok(())
}
