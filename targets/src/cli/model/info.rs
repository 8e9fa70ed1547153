//! `modelrt info`: describe a bundle — header, target, producer, arena, buffers, schedule, kernels,
//! inputs/outputs, output slices and checkpoint (format 2.4), state buffers, reference — and check that every kernel binary decodes for the bundle's target
//! (a bundle whose kernels do not decode is an error).
use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;
use modelrt_core::bundle::{BufferKind, Step, TensorDesc};
use modelrt_hal::target::{cpu_features, KernelMeta, Target};

use modelrt_core::StateInfo;

use crate::cli::units;

use super::steps::state_line;
use super::{open_bundle_file, parse_bundle, shape_str};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn target_str(t: &Target<'_>) -> String {
    match t {
        Target::Cpu {
            arch,
            baseline,
            features,
        } => {
            let names: Vec<&str> = cpu_features::NAMES
                .iter()
                .filter(|(bit, _)| features & bit != 0)
                .map(|(_, n)| *n)
                .collect();
            format!(
                "cpu {} (baseline {baseline}; requires {})",
                arch.name(),
                if names.is_empty() {
                    "-".into()
                } else {
                    names.join(",")
                }
            )
        }
        Target::Adreno { chip, image, half } => {
            format!(
                "adreno a{chip} (IMAGE={} FLOAT16={})",
                *image as u8, *half as u8
            )
        }
        Target::Amd { gfx } => format!("amd gfx{gfx:x}"),
        Target::Hexagon { version } => format!("hexagon v{version}"),
    }
}

/// `ed25519 SHA256:…` and whether the signature matches the bytes for the key in the block (that says
/// nothing of trust: only `--trusted-keys` on a loading command does), or `unsigned`.
fn signer_str(b: &modelrt_core::bundle::Bundle<'_>) -> String {
    use modelrt_targets::runner::TrustStore;
    match b.signature() {
        None => "unsigned".into(),
        Some(sig) => {
            let fp = modelrt_platform::trust::fingerprint(sig.key);
            let store = TrustStore::new(vec![*sig.key]);
            let state = if store.check(b.bytes()).is_ok() {
                "signature matches the bytes; not checked against any trust store"
            } else {
                "the signature does NOT match the bytes: changed after signing"
            };
            format!("ed25519 {fp} ({state})")
        }
    }
}

/// One step of a multi-device bundle's transfer plan, with tensor and host buffer names.
fn plan_str(
    b: &modelrt_core::bundle::Bundle<'_>,
    x: modelrt_core::bundle::Xfer,
) -> anyhow::Result<String> {
    use modelrt_core::bundle::Xfer;
    let role = |r: u32| -> anyhow::Result<(String, modelrt_core::bundle::Bundle<'_>)> {
        let (role, part) = b.part(r as usize)?;
        Ok((role.name.to_string(), part))
    };
    let host = |h: u32| -> anyhow::Result<String> {
        Ok(b.body().buffers.get(h as usize)?.label.to_string())
    };
    Ok(match x {
        Xfer::Load {
            role: r,
            input,
            host: h,
        } => {
            let (name, part) = role(r)?;
            let t = part.body().inputs.get(input as usize)?;
            format!(
                "load  {} → {name}.{} ({})",
                host(h)?,
                t.name,
                units::size(t.byte_len())
            )
        }
        Xfer::Run { role: r } => format!("run   {}", role(r)?.0),
        Xfer::Store {
            role: r,
            output,
            host: h,
        } => {
            let (name, part) = role(r)?;
            let t = part.body().outputs.get(output as usize)?;
            format!(
                "store {name}.{} → {} ({})",
                t.name,
                host(h)?,
                units::size(t.byte_len())
            )
        }
    })
}

/// `modelrt info`: describe the bundle; an error (exit 1) after the description when its kernel
/// binaries do not decode for its target.
pub fn info(path: &Path, verbose: bool) -> anyhow::Result<()> {
    let file = open_bundle_file(path, true)?;
    let b = parse_bundle(file.bytes(), path)?;
    let h = b.header();
    let body = b.body();
    outln!(
        "bundle      {} ({} bytes, format {}.{}, crc32 {:08x}, schema {:016x})",
        path.display(),
        h.total_len,
        h.major,
        h.minor,
        h.body_crc,
        h.schema_hash
    );
    outln!("target      {}", target_str(&body.target));
    if let Some(m) = b.multi() {
        // A bundle spanning several devices (format 2.3): its roles, their parts and the transfer plan.
        for i in 0..m.roles.len() {
            let (role, part) = b.part(i)?;
            let pb = part.body();
            outln!(
                "role        {}: {} ({} kernels, {} run steps, part of {})",
                role.name,
                target_str(&role.target),
                pb.kernels.len(),
                pb.run.len(),
                units::size(role.part.1)
            );
        }
        for x in m.plan.iter() {
            outln!("plan        {}", plan_str(&b, x?)?);
        }
    }
    let p = body.producer;
    outln!(
        "producer    tinygrad {}{} dev {}",
        p.tinygrad,
        p.tinymesa
            .map(|m| format!(", tinymesa {m}"))
            .unwrap_or_default(),
        p.dev
    );
    outln!(
        "flags       {}",
        if p.flags.is_empty() { "-" } else { p.flags }
    );
    outln!("source      sha256 {}", hex(&p.source_sha256));
    outln!("signer      {}", signer_str(&b));
    outln!(
        "arena       {} ({} bytes)",
        units::size(body.arena_size),
        body.arena_size
    );
    let mut by_kind: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    for buf in body.buffers.iter() {
        let buf = buf?;
        let k = match buf.kind {
            BufferKind::Weight => "weight",
            BufferKind::State => "state",
            BufferKind::Input => "input",
            BufferKind::Output => "output",
            BufferKind::Scratch => "scratch",
        };
        let e = by_kind.entry(k).or_default();
        e.0 += 1;
        e.1 += buf.size;
    }
    let kinds: Vec<String> = by_kind
        .iter()
        .map(|(k, (n, sz))| format!("{n} {k} ({})", units::size(*sz)))
        .collect();
    outln!("buffers     {} — {}", body.buffers.len(), kinds.join(", "));
    outln!("weights     {}", units::size(b.weights().len() as u64));
    let count = |steps: modelrt_core::bundle::Table<'_, Step>| -> anyhow::Result<(usize, usize)> {
        let mut l = 0;
        let mut c = 0;
        for s in steps.iter() {
            match s? {
                Step::Launch { .. } | Step::LaunchThreads { .. } => l += 1,
                Step::Copy { .. } => c += 1,
            }
        }
        Ok((l, c))
    };
    let (il, ic) = count(body.init)?;
    let (rl, rc) = count(body.run)?;
    let (launches, copies) = (
        |n: usize| units::plural_of(n as u64, "launch", "launches"),
        |n: usize| units::plural_of(n as u64, "copy", "copies"),
    );
    outln!(
        "schedule    init: {}, {}; run: {}, {}",
        launches(il),
        copies(ic),
        launches(rl),
        copies(rc)
    );
    let code: usize = body
        .kernels
        .iter()
        .map(|k| k.map(|k| k.binary.len()))
        .sum::<Result<_, _>>()?;
    outln!(
        "kernels     {} ({} of code)",
        body.kernels.len(),
        units::size(code as u64)
    );
    let mut decode_error = None;
    match modelrt_targets::inspect::check_kernels(&b) {
        Ok(c) => outln!(
            "binaries    {} for {}",
            match c.kernels {
                0 => "no kernel binaries to decode".to_string(),
                1 => "the 1 kernel binary decodes".to_string(),
                n => format!("all {n} kernel binaries decode"),
            },
            body.target.family()
        ),
        Err(e) => {
            outln!("binaries    DOES NOT DECODE: {e}");
            decode_error = Some(e);
        }
    }
    if verbose {
        for (i, k) in body.kernels.iter().enumerate() {
            let k = k?;
            let meta = match &k.meta {
                KernelMeta::Cpu(m) => format!("threads {}", m.threads),
                KernelMeta::Ir3(m) => format!(
                    "isa {} B, fregs {}, hregs {}, tex {}, ibo {}",
                    m.image_size, m.fregs, m.hregs, m.tex_cnt, m.ibo_cnt
                ),
                KernelMeta::Amd(m) => format!(
                    "kernarg {} B, lds {} B, wave{}",
                    m.kernarg_size, m.group_segment_fixed_size, m.wavefront_size
                ),
                KernelMeta::QcomCl => "Qualcomm CL container".to_string(),
            };
            outln!(
                "  [{i:3}] {:40} {:7} B  {} params  {meta}",
                k.name,
                k.binary.len(),
                k.params.len()
            );
        }
    }
    let io =
        |label: &str, t: modelrt_core::bundle::Table<'_, TensorDesc<'_>>| -> anyhow::Result<()> {
            for d in t.iter() {
                let d = d?;
                outln!(
                    "{label:11} {} {} {}",
                    d.name,
                    shape_str(&d.shape),
                    d.dtype.name()
                );
            }
            Ok(())
        };
    io("input", body.inputs)?;
    io("output", body.outputs)?;
    for c in b.index_checks().iter() {
        let c = c?;
        let name = body.inputs.get(c.input as usize)?.name;
        let every = if c.period == 1 {
            String::new()
        } else {
            format!(" (elements {} mod {})", c.phase, c.period)
        };
        outln!(
            "index check input {name}{every} in {}..={} — {}; run refuses other values",
            c.min,
            c.max,
            c.what
        );
    }
    if let Some(c) = b.checkpoint() {
        outln!("checkpoint  {c}");
    }
    for s in b.output_slices().iter() {
        let s = s?;
        let out = body.outputs.get(s.output as usize)?;
        outln!(
            "slice       {}: {}[..., {}:{}]",
            s.name,
            out.name,
            s.start,
            s.stop
        );
    }
    let states = body
        .buffers
        .iter()
        .enumerate()
        .filter(|(_, d)| matches!(d, Ok(d) if d.kind == BufferKind::State));
    for (index, (buffer, d)) in states.enumerate() {
        let d = d?;
        let s = StateInfo {
            index,
            buffer: buffer as u32,
            label: d.label,
            dtype: d.dtype,
            size: d.size,
        };
        outln!("state       {} — persists across runs", state_line(&s));
    }
    match body.reference {
        Some(r) => outln!(
            "reference   yes (seed {}, atol {}, rtol {}) — `modelrt verify` checks it",
            r.seed,
            units::tolerance(r.atol),
            units::tolerance(r.rtol)
        ),
        None => outln!("reference   none"),
    }
    if let Some(e) = decode_error {
        bail!(
            "{}: kernel binaries do not decode for {}: {e}",
            path.display(),
            body.target.family()
        );
    }
    Ok(())
}
