//! Runs `xtask/exporter/export.py` (ONNX or compile3 pickle -> manifest directory) with the venv python,
//! forwarding its stderr live and turning its "user error" exit code 2 into a clean one-line error.

use anyhow::{anyhow, bail, Context, Result};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use crate::child_wait::wait_or_kill;
use modelrt_hal::target::{TargetName, UnknownTarget};

/// Exit code export.py uses for user errors (bad model, unsupported op, wrong target, unsupported pickle, ...).
pub const USER_ERROR_EXIT: i32 = 2;
/// Exit code export.py uses when it failed on a model for a reason of its own (its one `error:` line names the
/// file holding the traceback).
pub const INTERNAL_ERROR_EXIT: i32 = 3;

/// Why an export failed, so callers (the conformance suite) can tell a clean refusal from a crash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportFailure {
    /// The model or the arguments cannot be compiled; the message says why and what to do.
    #[error("{0}")]
    Refused(String),
    /// The exporter failed on the model (its bug or tinygrad's); the message names the traceback file.
    #[error("{0}")]
    Internal(String),
    /// The exporter died, was killed, timed out, or exited without a one-line error.
    #[error("{0}")]
    Crashed(String),
}
/// Upper bound for one export (large models compile for minutes on 2 cores).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3600);

/// What to export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Compile an ONNX model for `ExportArgs::target`.
    Onnx(PathBuf),
    /// Import an existing openpilot compile3 pickle (plain or `PICKLE_OOB=1`).
    Pickle(PathBuf),
    /// Capture a tinygrad program: `SCRIPT.py:FN`, where `FN()` returns the function to capture, its example inputs
    /// and its initial state (xtask/exporter/mrt/script.py).
    Tinygrad(String),
}

impl Source {
    /// The file the source names (for `Tinygrad`, the script before `:FN`).
    pub fn file(&self) -> PathBuf {
        match self {
            Source::Onnx(p) | Source::Pickle(p) => p.clone(),
            Source::Tinygrad(spec) => {
                PathBuf::from(spec.rsplit_once(':').map_or(spec.as_str(), |x| x.0))
            }
        }
    }
}

/// Arguments for one export. This is the one declaration of the compile options: `cargo xtask compile` flattens it
/// into its arguments (the field docs are its `--help`), and [`ExportArgs::to_argv`] passes them to export.py through
/// [`EXPORT_OPTIONS`], whose flags a test compares with this declaration and with export.py's own parser.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct ExportArgs {
    /// What to export (from `cargo xtask compile`'s MODEL or --tinygrad; `convert`'s pickle).
    #[arg(skip = Source::Onnx(PathBuf::new()))]
    pub source: Source,
    /// The exporter's output directory (a scratch directory under `target/` for `compile`).
    #[arg(skip)]
    pub out: PathBuf,
    /// Pickles: initial contents of inputs the program advances in place (`NAME`, `zeros` or a `.npy` path).
    #[arg(skip)]
    pub state_init: Vec<(String, String)>,
    /// Pickles: openpilot's `*_metadata.pkl` (plain or gzipped) whose output slices go into the bundle.
    #[arg(skip)]
    pub metadata: Option<PathBuf>,
    /// The device the bundle is for: cpu (= this host's arch), cpu-x86_64, cpu-aarch64, adreno-a630 (comma
    /// three GPU; emulated: qcom-emu), amd-gfx1100 (RX 7900 over USB; emulated: usb-emu), amd-gfx1201,
    /// hexagon-v65 (comma three DSP; emulated: dsp-emu). With --tinygrad, ROLE=TARGET (repeatable) compiles
    /// a bundle spanning several devices: each device role of the script on its target, the first role
    /// taking what the script does not place (docs/pipeline.md, "Device roles").
    #[arg(long = "target", value_name = "[ROLE=]TARGET", default_value = "cpu", value_parser = parse_role_target)]
    pub targets: Vec<RoleTarget>,
    /// The target of this export (from `--target`; for a multi-device compile, the role's).
    #[arg(skip)]
    pub target: Option<TargetName>,
    /// For one role of a multi-device compile: (this role, every role in `--target` order).
    #[arg(skip)]
    pub role: Option<(String, Vec<String>)>,
    /// Embed seeded random inputs and the reference's outputs for them (onnxruntime's; tinygrad's own run for
    /// --tinygrad) so `modelrt verify` can check the bundle on any device.
    #[arg(long)]
    pub reference: bool,
    /// Seed of the random inputs the compile captures with, checks with and (with --reference) embeds.
    #[arg(long, default_value = "0")]
    pub seed: Option<u64>,
    /// CPU kernels' thread split (baked in at compile time; default 4).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Only with --image, which implies it (FLOAT16=1: half-precision images). tinygrad 0.14 reads FLOAT16 only
    /// in its IMAGE paths, so on its own it would change no kernel and is refused.
    #[arg(long)]
    pub float16: bool,
    /// adreno-a630 only: openpilot's image/texture layout (IMAGE=1 FLOAT16=1: convolutions read half-precision
    /// images); the bundle is verified at the half-precision tolerance 5e-2.
    #[arg(long)]
    pub image: bool,
    /// Value of the model's dynamic input dimension NAME (repeatable). A bundle has fixed shapes: dynamic
    /// dimensions without --dim are compiled as 1, and the compile prints each one.
    #[arg(long = "dim", value_name = "NAME=VALUE", value_parser = parse_dim)]
    pub dims: Vec<(String, u64)>,
    /// CPU baseline the kernels are built for (clang-19 -O3): cpu-x86_64: x86-64-v3 (default; AVX2, 256-bit
    /// vectors) or x86-64-v4 (AVX-512, 512-bit vectors); cpu-aarch64: cortex-a76 (default) or armv8.2-a; `host`:
    /// the best of these this machine supports (the compile prints which). A host lacking a bundle's CPU features
    /// refuses to load it and names them. See docs/cpu-kernels.md.
    #[arg(long)]
    pub cpu_baseline: Option<String>,
    /// Fix graph input NAME to the value in FILE.npy, folded into the graph before capture (repeatable). Needed for
    /// inputs that set a shape-like parameter (Reshape's shape, Slice's starts, Pad's pads, Resize's scales, ...):
    /// a bundle cannot take those at run time, and compile refuses them without a fixed value.
    #[arg(long = "const", value_name = "NAME=FILE.npy", value_parser = parse_const)]
    pub consts: Vec<(String, PathBuf)>,
    /// compile3's dtypes instead of the model's own: float16 inputs are fed as float32 and float outputs are
    /// returned as float32 (what openpilot's compile3.py does).
    #[arg(long)]
    pub compile3_dtypes: bool,
    /// Compile even where tinygrad is known to compute an op differently from the ONNX reference, and skip the
    /// compile-time cross-check of tinygrad's result with onnxruntime. The bundle may give wrong answers.
    #[arg(long)]
    pub trust_tinygrad: bool,
    /// CPU targets: run tinygrad's kernel search (BEAM=N) on this CPU during the compile and write the chosen
    /// optimisations to a search cache next to the bundle (OUTPUT with extension .beam.json, or --beam-cache-out).
    /// Refused for another architecture's CPU unless --beam-cache gives a cache made on that CPU.
    #[arg(long, value_name = "N")]
    pub beam: Option<u32>,
    /// CPU targets: apply a search cache (from --beam) instead of searching; the same cache gives a
    /// byte-identical bundle. A kernel the cache lacks, or a cache entry the model lacks, is an error.
    #[arg(long, value_name = "FILE")]
    pub beam_cache: Option<PathBuf>,
    /// With --beam: where to write the search cache.
    #[arg(
        long,
        value_name = "FILE",
        requires = "beam",
        conflicts_with = "beam_cache"
    )]
    pub beam_cache_out: Option<PathBuf>,
    /// CPU targets: stride-1 3×3 convolutions as Winograd F(4×4,3×3), weights transformed at compile time: auto
    /// (the exporter's default; x86-64 only) where the measured rule of docs/cpu-kernels.md §6 says it is faster
    /// than the channel-last direct convolution, on for every such conv, off for none. Each rewritten conv is
    /// checked against onnxruntime and keeps the direct form if it misses the bundle's tolerance (the compile
    /// says so).
    #[arg(long, value_parser = ["auto", "on", "off"])]
    pub winograd: Option<String>,
    /// Skip the check that otherwise runs before an adreno-a630, amd-gfx1100 or hexagon-v65 bundle is written:
    /// the bundle executed on that target's model (qcom-emu: the IR3 interpreter; usb-emu: the RDNA3
    /// interpreter behind the emulated bridge; dsp-emu: qemu-hexagon behind the FastRPC model) on seeded
    /// inputs, every output compared with onnxruntime (for --tinygrad: with tinygrad's own run on the host CPU).
    /// Takes minutes on large models; without it the bundle is only checked structurally, and the compile says
    /// the outputs were NOT checked.
    #[arg(long = "no-emu-check", action = clap::ArgAction::SetFalse)]
    pub emu_check: bool,
}

impl ExportArgs {
    /// Default ONNX export for `target` into `out`.
    pub fn onnx(model: impl Into<PathBuf>, target: TargetName, out: impl Into<PathBuf>) -> Self {
        ExportArgs {
            source: Source::Onnx(model.into()),
            targets: vec![RoleTarget { role: None, target }],
            target: Some(target),
            role: None,
            out: out.into(),
            reference: false,
            seed: None,
            threads: None,
            float16: false,
            image: false,
            cpu_baseline: None,
            consts: Vec::new(),
            dims: Vec::new(),
            compile3_dtypes: false,
            trust_tinygrad: false,
            state_init: Vec::new(),
            metadata: None,
            beam: None,
            beam_cache: None,
            beam_cache_out: None,
            winograd: None,
            emu_check: true,
        }
    }

    /// Default conversion of a compile3 pickle into `out` (the pickle names its own target).
    pub fn pickle(pickle: impl Into<PathBuf>, out: impl Into<PathBuf>) -> Self {
        ExportArgs {
            source: Source::Pickle(pickle.into()),
            target: None,
            ..ExportArgs::onnx(PathBuf::new(), TargetName::host_cpu(), out)
        }
    }

    /// The target's name, or `pickle` for a pickle (scratch directories and messages).
    pub fn target_label(&self) -> &'static str {
        self.target.map_or("pickle", TargetName::as_str)
    }

    /// export.py arguments (after the script path): the source, then [`EXPORT_OPTIONS`] (compiles) or
    /// [`PICKLE_OPTIONS`] (pickles), then `--out`.
    pub fn to_argv(&self) -> Vec<String> {
        let (flag, what, options) = match &self.source {
            Source::Onnx(p) => ("--onnx", p.display().to_string(), EXPORT_OPTIONS),
            Source::Tinygrad(spec) => ("--tinygrad", spec.clone(), EXPORT_OPTIONS),
            Source::Pickle(p) => ("--pickle", p.display().to_string(), PICKLE_OPTIONS),
        };
        let mut v = vec![flag.to_string(), what];
        for (flag, value) in options {
            match value(self) {
                Value::Flag(on) => {
                    if on {
                        v.push(flag.to_string());
                    }
                }
                Value::Each(values) => {
                    for x in values {
                        v.extend([flag.to_string(), x]);
                    }
                }
            }
        }
        if let Some((role, roles)) = &self.role {
            v.extend([
                "--role".to_string(),
                role.clone(),
                "--roles".to_string(),
                roles.join(","),
            ]);
        }
        v.extend(["--out".to_string(), self.out.display().to_string()]);
        v
    }
}

/// One `--target`: a target, or `ROLE=TARGET` for one role of a multi-device bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleTarget {
    pub role: Option<String>,
    pub target: TargetName,
}

/// `[ROLE=]TARGET` for `--target`; a role is a Python identifier (the key `build(devices=...)` gets).
pub fn parse_role_target(s: &str) -> Result<RoleTarget, String> {
    match s.split_once('=') {
        None => Ok(RoleTarget {
            role: None,
            target: parse_target(s)?,
        }),
        Some((role, t)) => {
            let ident = role
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && role.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ident {
                return Err(format!(
                    "expected ROLE=TARGET with ROLE a name like warp or model, got '{s}'"
                ));
            }
            Ok(RoleTarget {
                role: Some(role.to_string()),
                target: parse_target(t)?,
            })
        }
    }
}

/// What the `--target` list asks for: `Ok(None)` for one plain target (a single-target bundle), else
/// the roles in order. Mixing plain and named targets, repeating a role or a plain target is refused.
pub fn roles_of(targets: &[RoleTarget]) -> Result<Option<Vec<(String, TargetName)>>> {
    match targets {
        [] => bail!("no --target given"),
        [RoleTarget { role: None, .. }] => Ok(None),
        _ => {
            let mut roles: Vec<(String, TargetName)> = Vec::new();
            for t in targets {
                let Some(r) = &t.role else {
                    bail!("--target is given {} times: name each device role, --target ROLE=TARGET (e.g. --target warp=adreno-a630 --target model=amd-gfx1100)", targets.len());
                };
                if roles.iter().any(|(n, _)| n == r) {
                    bail!("--target names role '{r}' twice");
                }
                roles.push((r.clone(), t.target));
            }
            Ok(Some(roles))
        }
    }
}

/// How one option goes onto export.py's command line.
pub enum Value {
    /// A switch, given when on.
    Flag(bool),
    /// `FLAG VALUE` once per value (an `Option` gives none or one).
    Each(Vec<String>),
}

/// An export.py option and how [`ExportArgs`] fills it in.
pub type ExportOption = (&'static str, fn(&ExportArgs) -> Value);

fn one<T: ToString>(v: &Option<T>) -> Value {
    Value::Each(v.iter().map(T::to_string).collect())
}

fn path(v: &Option<PathBuf>) -> Value {
    Value::Each(v.iter().map(|p| p.display().to_string()).collect())
}

/// The options [`ExportArgs::to_argv`] adds for one role of a multi-device compile (`ExportArgs::role`,
/// set by `crate::compile_multi`, not by a command-line flag of xtask).
pub const ROLE_FLAGS: &[&str] = &["--role", "--roles"];

/// The source options of export.py (exactly one is given).
pub const SOURCE_FLAGS: &[&str] = &["--onnx", "--tinygrad", "--pickle"];

/// The compile options export.py takes for ONNX models and tinygrad programs, in argv order: the one table
/// [`ExportArgs::to_argv`] walks. Tests compare its flags with [`ExportArgs`]'s clap declaration and with export.py's
/// argparse parser (`export.option_names()`).
pub const EXPORT_OPTIONS: &[ExportOption] = &[
    ("--target", |a| one(&a.target)),
    ("--reference", |a| Value::Flag(a.reference)),
    ("--seed", |a| one(&a.seed)),
    ("--threads", |a| one(&a.threads)),
    ("--float16", |a| Value::Flag(a.float16)),
    ("--image", |a| Value::Flag(a.image)),
    ("--cpu-baseline", |a| one(&a.cpu_baseline)),
    ("--const", |a| {
        Value::Each(
            a.consts
                .iter()
                .map(|(name, file)| format!("{name}={}", file.display()))
                .collect(),
        )
    }),
    ("--dim", |a| {
        Value::Each(
            a.dims
                .iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect(),
        )
    }),
    ("--compile3-dtypes", |a| Value::Flag(a.compile3_dtypes)),
    ("--trust-tinygrad", |a| Value::Flag(a.trust_tinygrad)),
    ("--beam", |a| one(&a.beam)),
    ("--beam-cache", |a| path(&a.beam_cache)),
    ("--beam-cache-out", |a| path(&a.beam_cache_out)),
    ("--winograd", |a| one(&a.winograd)),
];

/// The options export.py takes for pickles, in argv order.
pub const PICKLE_OPTIONS: &[ExportOption] = &[
    ("--state-init", |a| {
        Value::Each(
            a.state_init
                .iter()
                .map(|(name, init)| format!("{name}={init}"))
                .collect(),
        )
    }),
    ("--metadata", |a| path(&a.metadata)),
];

/// [`ExportArgs`] options of `cargo xtask compile` that are not export.py's (they steer what xtask does).
pub const XTASK_ONLY_OPTIONS: &[&str] = &["--no-emu-check"];

/// `--target`: a target name, or `cpu` for this host's CPU.
pub fn parse_target(s: &str) -> Result<TargetName, String> {
    match s {
        "cpu" => Ok(TargetName::host_cpu()),
        s => s.parse().map_err(|e: UnknownTarget| format!("{e}, or cpu")),
    }
}

/// `NAME=VALUE` (VALUE >= 1) for `--dim`.
pub fn parse_dim(s: &str) -> Result<(String, u64), String> {
    match s.split_once('=') {
        Some((name, v)) if !name.is_empty() => match v.parse::<u64>() {
            Ok(n) if n >= 1 => Ok((name.to_string(), n)),
            _ => Err(format!(
                "expected NAME=VALUE with VALUE a whole number >= 1, got '{s}'"
            )),
        },
        _ => Err(format!("expected NAME=VALUE, got '{s}'")),
    }
}

/// `NAME=FILE.npy` for `--const`.
pub fn parse_const(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_string(), PathBuf::from(file)))
        }
        _ => Err(format!("expected NAME=FILE.npy, got '{s}'")),
    }
}

/// Path of export.py inside this repository.
pub fn script_path() -> PathBuf {
    crate::exporter_python::exporter_dir().join("export.py")
}

/// Run export.py with `python`; returns the output directory holding manifest.json + blobs/.
pub fn export(python: &Path, args: &ExportArgs) -> Result<PathBuf> {
    export_with(python, &crate::exporter_python::exporter_dir(), args)
}

/// Run `EXPORTER_DIR/export.py` (an installed wheel's copy, or this repository's) with `python`.
pub fn export_with(python: &Path, exporter_dir: &Path, args: &ExportArgs) -> Result<PathBuf> {
    run_script_in(
        python,
        exporter_dir,
        &exporter_dir.join("export.py"),
        args,
        EXPORT_TIMEOUT,
    )
}

#[cfg(test)]
fn run_script(
    python: &Path,
    script: &Path,
    args: &ExportArgs,
    timeout: Duration,
) -> Result<PathBuf> {
    let dir = crate::exporter_python::exporter_dir();
    run_script_in(python, &dir, script, args, timeout)
}

fn run_script_in(
    python: &Path,
    exporter_dir: &Path,
    script: &Path,
    args: &ExportArgs,
    timeout: Duration,
) -> Result<PathBuf> {
    if !script.is_file() {
        bail!("exporter script not found at {}", script.display());
    }
    let mut child = crate::exporter_python::command_in(python, exporter_dir)
        .arg(script)
        .args(args.to_argv())
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!(
                "cannot start the exporter ({} {})",
                python.display(),
                script.display()
            )
        })?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| anyhow!("exporter stderr not captured"))?;
    // forward stderr live from a thread; remember "error: ..." lines (and the last line) for the one-line error
    let (tx, rx) = mpsc::channel::<(bool, String)>();
    let reader = std::thread::spawn(move || {
        let mut err = std::io::stderr();
        for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
            match line.strip_prefix("error: ") {
                Some(msg) => {
                    let _ = tx.send((true, msg.to_string()));
                }
                None => {
                    let _ = writeln!(err, "{line}");
                    if !line.trim().is_empty() {
                        let _ = tx.send((false, line.trim().to_string()));
                    }
                }
            }
        }
    });
    let Some(status) = wait_or_kill(&mut child, timeout)? else {
        // the reader thread is not joined: a grandchild may still hold the pipe open; it ends with the pipe
        return Err(ExportFailure::Crashed(format!(
            "exporter timed out after {} s",
            timeout.as_secs()
        ))
        .into());
    };
    let _ = reader.join();
    let lines: Vec<(bool, String)> = rx.try_iter().collect();
    let last_error = lines
        .iter()
        .rev()
        .find(|(is_err, _)| *is_err)
        .map(|(_, l)| l.clone());
    let last_line = lines.last().map(|(_, l)| l.clone());
    let failure = match status.code() {
        Some(0) => return Ok(args.out.clone()),
        Some(USER_ERROR_EXIT) => ExportFailure::Refused(match (last_error, last_line) {
            (Some(e), _) => e,
            (None, Some(l)) => format!("exporter failed (exit code 2): {l}"),
            (None, None) => "exporter failed with exit code 2 and no message".into(),
        }),
        Some(INTERNAL_ERROR_EXIT) => ExportFailure::Internal(
            last_error.unwrap_or_else(|| "exporter failed (exit code 3) with no message".into()),
        ),
        code => {
            let how = code.map_or_else(
                || "was killed by a signal".to_string(),
                |c| format!("exited with code {c}"),
            );
            ExportFailure::Crashed(match last_error {
                Some(e) => format!("exporter {how}: {e}"),
                None => format!("exporter {how}; see its output above"),
            })
        }
    };
    Err(failure.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_script(tag: &str, body: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!(
            "modelrt-fake-export-{tag}-{}.sh",
            std::process::id()
        ));
        std::fs::write(&p, body).unwrap();
        p
    }

    /// `--target cpu` is this host's CPU; every name parses; anything else is refused naming the valid ones.
    #[test]
    fn target_names_and_cpu_parse() {
        assert_eq!(parse_target("cpu"), Ok(TargetName::host_cpu()));
        for t in TargetName::ALL {
            assert_eq!(parse_target(t.as_str()), Ok(t));
        }
        let e = parse_target("tpu").unwrap_err();
        assert!(e.contains("adreno-a630") && e.ends_with(", or cpu"), "{e}");
    }

    #[test]
    fn targets_name_roles_or_one_device() {
        let t = |s: &str| parse_role_target(s).unwrap();
        assert_eq!(t("adreno-a630").role, None);
        assert_eq!(t("warp=adreno-a630").role.as_deref(), Some("warp"));
        assert_eq!(t("model=amd-gfx1100").target, TargetName::AmdGfx1100);
        for bad in ["=cpu", "1x=cpu", "a-b=cpu", "warp=gpu", "warp="] {
            assert!(parse_role_target(bad).is_err(), "{bad}");
        }
        assert_eq!(roles_of(&[t("cpu")]).unwrap(), None);
        assert_eq!(
            roles_of(&[t("warp=adreno-a630"), t("model=amd-gfx1100")]).unwrap(),
            Some(vec![
                ("warp".to_string(), TargetName::AdrenoA630),
                ("model".to_string(), TargetName::AmdGfx1100)
            ])
        );
        let twice = roles_of(&[t("cpu"), t("adreno-a630")])
            .unwrap_err()
            .to_string();
        assert!(twice.contains("ROLE=TARGET"), "{twice}");
        let mixed = roles_of(&[t("warp=cpu"), t("adreno-a630")])
            .unwrap_err()
            .to_string();
        assert!(mixed.contains("ROLE=TARGET"), "{mixed}");
        let dup = roles_of(&[t("a=cpu"), t("a=adreno-a630")])
            .unwrap_err()
            .to_string();
        assert!(dup.contains("twice"), "{dup}");
    }

    #[test]
    fn a_role_reaches_export_py() {
        let mut a = ExportArgs::onnx("m.onnx", TargetName::AdrenoA630, "o");
        a.source = Source::Tinygrad("s.py:build".into());
        a.role = Some(("warp".into(), vec!["warp".into(), "model".into()]));
        let argv = a.to_argv();
        assert!(
            argv.windows(4)
                .any(|w| w == ["--role", "warp", "--roles", "warp,model"]),
            "{argv:?}"
        );
    }

    #[test]
    fn dim_values_are_names_with_whole_numbers() {
        assert_eq!(parse_dim("N=8"), Ok(("N".to_string(), 8)));
        assert_eq!(parse_dim("batch_size=1"), Ok(("batch_size".to_string(), 1)));
        for bad in ["N", "=8", "N=0", "N=-1", "N=x", "N="] {
            assert!(parse_dim(bad).is_err(), "{bad}");
        }
    }

    /// The argv table has a row for every option [`ExportArgs`] declares to clap (and no other), so an option
    /// added to the declaration reaches export.py (or is listed as xtask's own).
    #[test]
    fn option_table_is_the_clap_declaration() {
        use clap::Args;
        let cmd = ExportArgs::augment_args(clap::Command::new("export"));
        let mut declared: Vec<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long())
            .map(|l| format!("--{l}"))
            .collect();
        declared.sort();
        let mut table: Vec<String> = EXPORT_OPTIONS
            .iter()
            .map(|o| o.0)
            .chain(XTASK_ONLY_OPTIONS.iter().copied())
            .map(String::from)
            .collect();
        table.sort();
        assert_eq!(declared, table);
    }

    #[test]
    fn argv_matches_export_py_cli() {
        let mut a = ExportArgs::onnx("m.onnx", TargetName::CpuX86_64, "out");
        a.reference = true;
        a.seed = Some(3);
        a.threads = Some(2);
        a.cpu_baseline = Some("x86-64-v4".into());
        assert_eq!(
            a.to_argv(),
            [
                "--onnx",
                "m.onnx",
                "--target",
                "cpu-x86_64",
                "--reference",
                "--seed",
                "3",
                "--threads",
                "2",
                "--cpu-baseline",
                "x86-64-v4",
                "--out",
                "out"
            ]
        );
        let w = ExportArgs {
            winograd: Some("off".into()),
            ..ExportArgs::onnx("m.onnx", TargetName::CpuX86_64, "o")
        };
        assert_eq!(
            w.to_argv(),
            [
                "--onnx",
                "m.onnx",
                "--target",
                "cpu-x86_64",
                "--winograd",
                "off",
                "--out",
                "o"
            ]
        );
        let p = ExportArgs::pickle("m.pkl", "o");
        assert_eq!(p.to_argv(), ["--pickle", "m.pkl", "--out", "o"]);
        let st = ExportArgs {
            state_init: vec![("feat_q".into(), "zeros".into())],
            metadata: Some("m_metadata.pkl".into()),
            ..ExportArgs::pickle("m.pkl", "o")
        };
        assert_eq!(
            st.to_argv(),
            [
                "--pickle",
                "m.pkl",
                "--state-init",
                "feat_q=zeros",
                "--metadata",
                "m_metadata.pkl",
                "--out",
                "o"
            ]
        );
        let tg = ExportArgs {
            source: Source::Tinygrad("models/p.py:build".into()),
            ..ExportArgs::onnx("x", TargetName::CpuX86_64, "o")
        };
        assert_eq!(
            tg.to_argv(),
            [
                "--tinygrad",
                "models/p.py:build",
                "--target",
                "cpu-x86_64",
                "--out",
                "o"
            ]
        );
        assert_eq!(tg.source.file(), PathBuf::from("models/p.py"));
        let img = ExportArgs {
            image: true,
            float16: true,
            ..ExportArgs::onnx("m", TargetName::AdrenoA630, "o")
        };
        assert!(
            img.to_argv().contains(&"--image".to_string())
                && img.to_argv().contains(&"--float16".to_string())
        );
        let dims = ExportArgs {
            dims: vec![("N".into(), 8), ("T".into(), 3)],
            ..ExportArgs::onnx("m", TargetName::CpuX86_64, "o")
        };
        let argv = dims.to_argv();
        assert!(
            argv.windows(4)
                .any(|w| w == ["--dim", "N=8", "--dim", "T=3"]),
            "{argv:?}"
        );
    }

    #[test]
    fn exit_code_2_becomes_the_one_line_error() {
        let s = fake_script(
            "e2",
            "echo 'exporter: working' >&2\necho 'error: unsupported target \"tpu\"' >&2\nexit 2\n",
        );
        let e = run_script(
            Path::new("sh"),
            &s,
            &ExportArgs::onnx("m", TargetName::CpuX86_64, "o"),
            Duration::from_secs(20),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "unsupported target \"tpu\"");
        let _ = std::fs::remove_file(s);
    }

    #[test]
    fn other_failures_and_success() {
        let s = fake_script("e1", "echo 'Traceback: boom' >&2\nexit 1\n");
        let e = run_script(
            Path::new("sh"),
            &s,
            &ExportArgs::onnx("m", TargetName::CpuX86_64, "o"),
            Duration::from_secs(20),
        )
        .unwrap_err();
        assert!(e.to_string().contains("exited with code 1"), "{e}");
        let _ = std::fs::remove_file(s);
        let s = fake_script("ok", "exit 0\n");
        let out = run_script(
            Path::new("sh"),
            &s,
            &ExportArgs::onnx("m", TargetName::CpuX86_64, "outdir"),
            Duration::from_secs(20),
        )
        .unwrap();
        assert_eq!(out, PathBuf::from("outdir"));
        let _ = std::fs::remove_file(s);
    }

    #[test]
    fn exit_2_without_error_line_reports_last_line_and_missing_script_is_clear() {
        let s = fake_script("e2b", "echo 'python: cannot open file' >&2\nexit 2\n");
        let a = ExportArgs::onnx("m", TargetName::CpuX86_64, "o");
        let e = run_script(Path::new("sh"), &s, &a, Duration::from_secs(20)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "exporter failed (exit code 2): python: cannot open file"
        );
        let _ = std::fs::remove_file(s);
        let missing = Path::new("/nonexistent/export.py");
        let e = run_script(Path::new("sh"), missing, &a, Duration::from_secs(20)).unwrap_err();
        assert!(e.to_string().contains("exporter script not found"), "{e}");
    }

    #[test]
    fn hung_exporter_is_killed() {
        let s = fake_script("hang", "sleep 30\n");
        let e = run_script(
            Path::new("sh"),
            &s,
            &ExportArgs::onnx("m", TargetName::CpuX86_64, "o"),
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(e.to_string().contains("timed out"));
        let _ = std::fs::remove_file(s);
    }
}
