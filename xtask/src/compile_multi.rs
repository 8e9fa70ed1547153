//! `cargo xtask compile --tinygrad SCRIPT.py:FN --target ROLE=TARGET ...`: a bundle spanning several
//! devices (format 2.3, `modelrt_core::bundle::multi`).
//!
//! Each role is compiled on its own, like a single-target `--tinygrad` compile (its own exporter run,
//! its own pre-write check on its target's device model), by the exporter's role view of the script
//! (`xtask/exporter/mrt/roles.py`): the script's tensors on that role's device become the part, the
//! values it moves onto that role's device with `.to(...)` become the part's inputs `x:K`, the values it
//! moves off become outputs `x:K`. The container then plans the transfers by name
//! (`writer_multi::plan_by_name`: `x:K` is stored from the role that computes it into a host buffer and
//! loaded into the role that reads it), takes its reference from the parts' (the script's first seeded
//! step; the crossing values are tinygrad's CPU run of the whole program), and — before anything is
//! written — runs the whole split bundle on every role's device model against that reference.
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use modelrt_core::bundle::writer::ReferenceSpec;
use modelrt_core::bundle::writer_multi::{plan_by_name, write_multi};
use modelrt_core::bundle::{Bundle, Producer};
use modelrt_hal::target::TargetName;
use modelrt_targets::runner::DeviceChoice;

use crate::compile::{compile, CompileReport};
use crate::emu_check::{self, EmuCheck};
use crate::exporter::{ExportArgs, Source};

/// Prefix of the tensors that cross devices (`x:0`, `x:1`, ... in the order the script moves them).
pub const CROSS_PREFIX: &str = "x:";

/// What a multi-device compile produced.
#[derive(Debug)]
pub struct MultiReport {
    pub out: PathBuf,
    pub bytes: usize,
    /// Per role: name, target and its part's compile.
    pub roles: Vec<(String, TargetName, CompileReport)>,
    /// The whole bundle's check on the device models, when it ran.
    pub check: Option<EmuCheck>,
    pub seconds: f64,
}

/// The device a role's part runs on in the pre-write check: its target's device model, else (the host
/// CPU) the device `auto` picks.
fn check_device(target: TargetName) -> DeviceChoice {
    emu_check::device_for(target).map_or(DeviceChoice::Auto, |d| d.0)
}

/// Compile `args.source` (a `--tinygrad` program) for `roles` into one bundle at `out`.
pub fn compile_multi(
    python: &Path,
    args: ExportArgs,
    roles: &[(String, TargetName)],
    out: &Path,
    key: Option<&crate::signing::SigningKey>,
) -> Result<MultiReport> {
    let start = Instant::now();
    if !matches!(args.source, Source::Tinygrad(_)) {
        bail!("--target ROLE=TARGET compiles --tinygrad programs (an ONNX model has no device roles): give one --target");
    }
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let dir = crate::setup::workspace_root()
        .join("target")
        .join("modelrt-export")
        .join(format!("{stem}-roles"));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let names: Vec<String> = roles.iter().map(|(n, _)| n.clone()).collect();
    let mut reports = Vec::new();
    let mut parts: Vec<Vec<u8>> = Vec::new();
    for (role, target) in roles {
        let mut a = args.clone();
        a.target = Some(*target);
        a.role = Some((role.clone(), names.clone()));
        a.reference = true; // the container's reference is assembled from the parts'
        let part = dir.join(format!("{stem}-{role}.mrt"));
        eprintln!("role {role}: compiling its part for {}", target.as_str());
        let r = compile(python, a, &part).with_context(|| format!("role {role}"))?;
        if let Some(c) = &r.emu_check {
            eprintln!(
                "role {role}: part checked on {} (max abs err {:.3e})",
                c.device, c.max_abs
            );
        }
        parts
            .push(std::fs::read(&part).with_context(|| format!("cannot read {}", part.display()))?);
        reports.push((role.clone(), *target, r));
    }
    let parsed: Vec<Bundle<'_>> = parts
        .iter()
        .map(|p| Bundle::parse(p).map_err(|e| anyhow::anyhow!("a part does not parse: {e}")))
        .collect::<Result<_>>()?;
    let mut outputs: Vec<&str> = Vec::new();
    for p in &parsed {
        for t in p.body().outputs.iter() {
            let t = t?;
            if !t.name.starts_with(CROSS_PREFIX) {
                outputs.push(t.name);
            }
        }
    }
    let dev: Vec<String> = roles
        .iter()
        .zip(&parsed)
        .map(|((n, _), p)| format!("{n}={}", p.body().producer.dev))
        .collect();
    let dev = dev.join(" ");
    let first = parsed[0].body().producer;
    // The first part's flags, naming every role instead of the first part's own.
    let flags: std::collections::BTreeSet<String> = first
        .flags
        .split(' ')
        .filter(|f| !f.is_empty() && !f.starts_with("ROLE="))
        .map(String::from)
        .chain([format!("ROLES={}", names.join(","))])
        .collect();
    let flags = flags.into_iter().collect::<Vec<_>>().join(" ");
    let producer = Producer {
        dev: &dev,
        flags: &flags,
        ..first
    };
    let role_bytes: Vec<(&str, &[u8])> = names
        .iter()
        .map(String::as_str)
        .zip(parts.iter().map(Vec::as_slice))
        .collect();
    let mut spec = plan_by_name(producer, &role_bytes, &outputs)
        .map_err(|e| anyhow::anyhow!("cannot plan the cross-device copies: {e}"))?;
    let reference = container_reference(&parsed, &spec)?;
    spec.reference = Some(reference.clone());
    let with_ref = write_multi(&spec).map_err(|e| anyhow::anyhow!("{e}"))?;
    let check = if args.emu_check {
        let devices: Vec<DeviceChoice> = roles.iter().map(|(_, t)| check_device(*t)).collect();
        let label: Vec<&str> = devices.iter().map(|d| d.name()).collect();
        eprintln!(
            "checking the split bundle on {} before writing it (one step of every role; --no-emu-check skips)",
            label.join(",")
        );
        let c = emu_check::check_roles(
            &with_ref,
            &reference,
            &devices,
            "the device models of every role",
            "tinygrad's own run",
        )?;
        eprintln!(
            "checked on {}: outputs match tinygrad's own run (max abs err {:.3e}) in {:.1} s",
            label.join(","),
            c.max_abs,
            c.seconds
        );
        Some(c)
    } else {
        None
    };
    let bytes = if args.reference {
        with_ref
    } else {
        spec.reference = None;
        write_multi(&spec).map_err(|e| anyhow::anyhow!("{e}"))?
    };
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    // Signed in memory before the one atomic write: the output is never an unsigned bundle.
    let written = crate::signing::write_bundle(out, &bytes, key)?;
    let crossings = spec
        .hosts
        .iter()
        .filter(|h| h.label.starts_with("cross:"))
        .count();
    println!(
        "wrote {} ({} bytes; {} roles: {}; {} cross-device copies per frame) in {:.1} s",
        out.display(),
        written,
        roles.len(),
        roles
            .iter()
            .zip(&reports)
            .map(|((n, t), (_, _, r))| format!("{n}={} ({} kernels)", t.as_str(), r.kernels))
            .collect::<Vec<_>>()
            .join(", "),
        crossings,
        start.elapsed().as_secs_f64()
    );
    Ok(MultiReport {
        out: out.to_path_buf(),
        bytes: written,
        roles: reports,
        check,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// The container's reference: each input's bytes from the part that loads it, each output's from the
/// part that computes it (every part embeds the script's first seeded step for its own tensors).
fn container_reference<'a>(
    parsed: &[Bundle<'a>],
    spec: &modelrt_core::bundle::writer_multi::MultiSpec<'_>,
) -> Result<ReferenceSpec<'a>> {
    let find = |name: &str, input: bool| -> Result<&'a [u8]> {
        for p in parsed {
            let r = p.body().reference.context("a part has no reference")?;
            let (table, refs) = if input {
                (p.body().inputs, r.inputs)
            } else {
                (p.body().outputs, r.outputs)
            };
            for (t, d) in table.iter().zip(refs.iter()) {
                if t?.name == name {
                    return Ok(d?.data);
                }
            }
        }
        bail!("no part has reference data for '{name}'")
    };
    let mut r = ReferenceSpec {
        seed: 0,
        atol: 0.0,
        rtol: 0.0,
        inputs: Vec::new(),
        outputs: Vec::new(),
    };
    for p in parsed {
        let pr = p.body().reference.context("a part has no reference")?;
        r.atol = r.atol.max(pr.atol);
        r.rtol = r.rtol.max(pr.rtol);
    }
    for &h in &spec.inputs {
        r.inputs
            .push(find(spec.hosts[h as usize].tensor.name, true)?);
    }
    for &h in &spec.outputs {
        r.outputs
            .push(find(spec.hosts[h as usize].tensor.name, false)?);
    }
    Ok(r)
}
