//! Model subcommands of `modelrt`: `info`, `run`, `verify`, `bench` and `demo`.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use modelrt_core::bundle::{BufferKind, Bundle, Step, TensorDesc};
use modelrt_core::verify::{compare, element};
use modelrt_core::Timing;
use modelrt_hal::target::{cpu_features, KernelMeta, Target};

use modelrt_targets::npy;
use modelrt_targets::runner::{load, DeviceChoice, LoadOptions, LoadedModel};

/// Where and how to run.
#[derive(Args, Clone, Copy, Debug)]
pub struct DeviceArgs {
    /// Backend to run on.
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// CPU worker threads (0 = as many as the kernels were split into, capped by this machine).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

impl DeviceArgs {
    fn options(&self) -> LoadOptions {
        LoadOptions {
            device: self.device,
            threads: self.threads,
        }
    }
}

/// Read a bundle file into memory.
pub fn read_bundle_file(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Parse bundle bytes, naming the file in the error.
pub fn parse_bundle<'a>(bytes: &'a [u8], path: &Path) -> anyhow::Result<Bundle<'a>> {
    Bundle::parse(bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn shape_str(shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", dims.join("x"))
}

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

fn mib(n: u64) -> String {
    format!("{:.2} MiB", n as f64 / (1024.0 * 1024.0))
}

/// `modelrt info`.
pub fn info(path: &Path, verbose: bool) -> anyhow::Result<()> {
    let bytes = read_bundle_file(path)?;
    let b = parse_bundle(&bytes, path)?;
    let h = b.header();
    let body = b.body();
    println!(
        "bundle      {} ({} bytes, format {}.{}, crc32 {:08x}, schema {:016x})",
        path.display(),
        h.total_len,
        h.major,
        h.minor,
        h.body_crc,
        h.schema_hash
    );
    println!("target      {}", target_str(&body.target));
    let p = body.producer;
    println!(
        "producer    tinygrad {}{} dev {}",
        p.tinygrad,
        p.tinymesa
            .map(|m| format!(", tinymesa {m}"))
            .unwrap_or_default(),
        p.dev
    );
    println!(
        "flags       {}",
        if p.flags.is_empty() { "-" } else { p.flags }
    );
    println!("source      sha256 {}", hex(&p.source_sha256));
    println!(
        "arena       {} ({} bytes)",
        mib(body.arena_size),
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
        .map(|(k, (n, sz))| format!("{n} {k} ({})", mib(*sz)))
        .collect();
    println!("buffers     {} — {}", body.buffers.len(), kinds.join(", "));
    println!("weights     {}", mib(b.weights().len() as u64));
    let count = |steps: modelrt_core::bundle::Table<'_, Step>| -> anyhow::Result<(usize, usize)> {
        let mut l = 0;
        let mut c = 0;
        for s in steps.iter() {
            match s? {
                Step::Launch { .. } => l += 1,
                Step::Copy { .. } => c += 1,
            }
        }
        Ok((l, c))
    };
    let (il, ic) = count(body.init)?;
    let (rl, rc) = count(body.run)?;
    println!("schedule    init: {il} launches, {ic} copies; run: {rl} launches, {rc} copies");
    let code: usize = body
        .kernels
        .iter()
        .map(|k| k.map(|k| k.binary.len()))
        .sum::<Result<_, _>>()?;
    println!(
        "kernels     {} ({} of code)",
        body.kernels.len(),
        mib(code as u64)
    );
    match modelrt_targets::inspect::check_kernels(&b) {
        Ok(c) => println!(
            "binaries    all {} kernel binaries decode for {}",
            c.kernels,
            body.target.family()
        ),
        Err(e) => println!("binaries    DOES NOT DECODE: {e}"),
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
            };
            println!(
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
                println!(
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
    match body.reference {
        Some(r) => println!(
            "reference   yes (seed {}, atol {:e}, rtol {:e}) — `modelrt verify` checks it",
            r.seed, r.atol, r.rtol
        ),
        None => println!("reference   none"),
    }
    Ok(())
}

fn alloc_outputs(b: &Bundle<'_>) -> anyhow::Result<Vec<Vec<u8>>> {
    b.body()
        .outputs
        .iter()
        .map(|t| Ok(vec![0u8; t?.byte_len() as usize]))
        .collect()
}

fn run_once(
    model: &mut dyn LoadedModel<'_>,
    inputs: &[Vec<u8>],
    outputs: &mut [Vec<u8>],
) -> anyhow::Result<Timing> {
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    model.run(&ins, &mut outs)
}

fn print_output_summary(b: &Bundle<'_>, outputs: &[Vec<u8>]) -> anyhow::Result<()> {
    for (t, data) in b.body().outputs.iter().zip(outputs) {
        let t = t?;
        let n = t.numel() as usize;
        let vals: Vec<f64> = (0..n).filter_map(|i| element(t.dtype, data, i)).collect();
        let (mut lo, mut hi, mut sum, mut arg) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0);
        for (i, v) in vals.iter().enumerate() {
            if *v > hi {
                hi = *v;
                arg = i;
            }
            lo = lo.min(*v);
            sum += v;
        }
        let head: Vec<String> = vals.iter().take(6).map(|v| format!("{v:.5}")).collect();
        println!(
            "output {} {} {}: min {lo:.5} max {hi:.5} (at {arg}) mean {:.5}  [{}{}]",
            t.name,
            shape_str(&t.shape),
            t.dtype.name(),
            sum / vals.len().max(1) as f64,
            head.join(", "),
            if vals.len() > 6 { ", …" } else { "" }
        );
    }
    Ok(())
}

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// Check outputs against the embedded reference; prints one line per output. Returns whether all pass.
fn check_reference(b: &Bundle<'_>, outputs: &[Vec<u8>]) -> anyhow::Result<bool> {
    let r = b
        .body()
        .reference
        .context("this bundle has no embedded reference (compile it with --reference)")?;
    let mut all = true;
    for ((t, want), got) in b.body().outputs.iter().zip(r.outputs.iter()).zip(outputs) {
        let (t, want) = (t?, want?);
        let c = compare(t.dtype, got, want.data, r.atol as f64, r.rtol as f64);
        all &= c.ok();
        println!(
            "verify {}: {} — max abs err {:.3e}, max rel err {:.3e}, {} of {} outside atol {:e} rtol {:e}",
            t.name,
            if c.ok() { "ok" } else { "FAILED" },
            c.max_abs,
            c.max_rel,
            c.mismatches,
            c.count,
            r.atol,
            r.rtol
        );
    }
    Ok(all)
}

fn reference_inputs(b: &Bundle<'_>) -> anyhow::Result<Vec<Vec<u8>>> {
    let r = b
        .body()
        .reference
        .context("this bundle has no embedded reference (compile it with --reference)")?;
    r.inputs.iter().map(|t| Ok(t?.data.to_vec())).collect()
}

/// `modelrt verify` (and the verification half of `demo`). Errors if verification fails.
pub fn verify_bytes(
    bytes: &[u8],
    path: &Path,
    dev: DeviceArgs,
    summary: bool,
) -> anyhow::Result<()> {
    let b = parse_bundle(bytes, path)?;
    let inputs = reference_inputs(&b)?;
    let mut model = load(b, dev.options())?;
    println!("device      {}", model.device_name());
    let mut outputs = alloc_outputs(model.bundle())?;
    let t = run_once(model.as_mut(), &inputs, &mut outputs)?;
    if !model.computes_outputs() {
        bail!(
            "{}: the command streams were validated, but this device executes no kernels, so the outputs cannot be verified",
            model.device_name()
        );
    }
    if summary {
        print_output_summary(model.bundle(), &outputs)?;
    }
    let ok = check_reference(model.bundle(), &outputs)?;
    // A second, warm run is the representative timing (the first includes page faults).
    let t2 = run_once(model.as_mut(), &inputs, &mut outputs)?;
    println!(
        "timing      first run {}; warm run {} (enqueue {}, device {}, upload {}, download {})",
        ms(t.total_ns),
        ms(t2.total_ns),
        ms(t2.enqueue_ns),
        ms(t2.device_ns),
        ms(t2.upload_ns),
        ms(t2.download_ns)
    );
    if !ok {
        bail!("verification FAILED against the bundle's embedded reference");
    }
    println!("verified    outputs match the embedded reference");
    Ok(())
}

/// `modelrt run`.
pub fn run(
    path: &Path,
    inputs: &[String],
    output_dir: Option<&Path>,
    dev: DeviceArgs,
) -> anyhow::Result<()> {
    let bytes = read_bundle_file(path)?;
    let b = parse_bundle(&bytes, path)?;
    let descs: Vec<TensorDesc<'_>> = b.body().inputs.iter().collect::<Result<_, _>>()?;
    let mut given: BTreeMap<String, PathBuf> = BTreeMap::new();
    for spec in inputs {
        let (name, file) = spec
            .split_once('=')
            .with_context(|| format!("--input '{spec}' is not NAME=FILE.npy"))?;
        if !descs.iter().any(|d| d.name == name) {
            let names: Vec<&str> = descs.iter().map(|d| d.name).collect();
            bail!(
                "unknown input '{name}'; this bundle's inputs are: {}",
                names.join(", ")
            );
        }
        if given
            .insert(name.to_string(), PathBuf::from(file))
            .is_some()
        {
            bail!("input '{name}' given twice");
        }
    }
    let mut data = Vec::new();
    for d in &descs {
        let file = given.get(d.name).with_context(|| {
            format!(
                "missing input '{}' ({} {}); pass --input {}=FILE.npy",
                d.name,
                shape_str(&d.shape),
                d.dtype.name(),
                d.name
            )
        })?;
        let raw = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let arr = npy::parse(&raw).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        if arr.dtype != d.dtype {
            bail!(
                "input '{}': {} has dtype {}, the model expects {}",
                d.name,
                file.display(),
                arr.dtype.name(),
                d.dtype.name()
            );
        }
        if arr.shape.as_slice() != d.shape.as_slice() {
            bail!(
                "input '{}': {} has shape {}, the model expects {}",
                d.name,
                file.display(),
                shape_str(&arr.shape),
                shape_str(&d.shape)
            );
        }
        data.push(arr.data);
    }
    let mut model = load(b, dev.options())?;
    let mut outputs = alloc_outputs(model.bundle())?;
    let t = run_once(model.as_mut(), &data, &mut outputs)?;
    if !model.computes_outputs() {
        println!(
            "note        {} computed no outputs; nothing is written",
            model.device_name()
        );
        println!(
            "timing      {} (enqueue {}, modelled device {})",
            ms(t.total_ns),
            ms(t.enqueue_ns),
            ms(t.device_ns)
        );
        return Ok(());
    }
    print_output_summary(model.bundle(), &outputs)?;
    println!(
        "timing      {} (enqueue {}, device {}) on {}",
        ms(t.total_ns),
        ms(t.enqueue_ns),
        ms(t.device_ns),
        model.device_name()
    );
    if let Some(dir) = output_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for (t, out) in model.bundle().body().outputs.iter().zip(&outputs) {
            let t = t?;
            let file = dir.join(format!("{}.npy", sanitize(t.name)));
            std::fs::write(&file, npy::encode(t.dtype, &t.shape, out))
                .with_context(|| format!("cannot write {}", file.display()))?;
            println!("wrote       {}", file.display());
        }
    }
    Ok(())
}

/// Output names come from the model; keep them to safe file names.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Statistics of a series of nanosecond samples.
fn stats(v: &mut [u64]) -> (u64, u64, u64) {
    v.sort_unstable();
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

/// What `modelrt bench` should produce besides the timing.
#[derive(Clone, Copy, Debug, Default)]
pub struct BenchOutput<'a> {
    /// Print one JSON object (for `cargo xtask bench`) instead of the human summary.
    pub json: bool,
    /// Also write a Chrome trace-event JSON of one step-by-step run to this file.
    pub trace: Option<&'a Path>,
}

/// Peak resident set size of this process (Linux `VmHWM`), if the platform reports it.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Run the bundle once step by step on a second CPU executor and write the Chrome trace to `file`.
fn write_trace(
    bytes: &[u8],
    path: &Path,
    inputs: &[Vec<u8>],
    dev: DeviceArgs,
    file: &Path,
) -> anyhow::Result<usize> {
    use modelrt_core::profile::{record_steps, traced_run, write_chrome_trace};
    use modelrt_targets::cpu::CpuDevice;
    let b = parse_bundle(bytes, path)?;
    if !matches!(b.body().target, Target::Cpu { .. }) || dev.device == DeviceChoice::Qcom {
        bail!("--trace is only supported on the CPU backend");
    }
    let device = if dev.threads == 0 {
        CpuDevice::with_host_threads()
    } else {
        CpuDevice::new(dev.threads)
    }
    .context("cannot create the CPU device")?;
    let name = format!(
        "modelrt cpu ({} threads) {}",
        device.threads(),
        path.display()
    );
    let mut exec = modelrt_core::Executor::load(b.clone(), device)
        .map_err(|e| anyhow::anyhow!("cannot load bundle: {e}"))?;
    let mut queues = Vec::new();
    record_steps(&b, exec.device_mut(), |q| queues.push(q))
        .map_err(|e| anyhow::anyhow!("cannot record step queues: {e}"))?;
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut outputs = alloc_outputs(&b)?;
    let mut slices = Vec::new();
    // The first run warms caches and page tables; the second is the one written.
    for pass in 0..2 {
        slices.clear();
        let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        traced_run(&b, exec.device_mut(), &mut queues, &ins, &mut outs, |s| {
            if pass == 1 {
                slices.push(s)
            }
        })
        .map_err(|e| anyhow::anyhow!("traced run failed: {e}"))?;
    }
    let mut doc = String::new();
    write_chrome_trace(&mut doc, &name, &slices)
        .map_err(|_| anyhow::anyhow!("cannot format the trace"))?;
    std::fs::write(file, doc).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(slices.len())
}

/// `modelrt bench`.
pub fn bench(
    path: &Path,
    iters: usize,
    warmup: usize,
    dev: DeviceArgs,
    out: BenchOutput<'_>,
) -> anyhow::Result<()> {
    if iters == 0 {
        bail!("--iters must be at least 1");
    }
    let bytes = read_bundle_file(path)?;
    let b = parse_bundle(&bytes, path)?;
    let inputs = match reference_inputs(&b) {
        Ok(i) => i,
        Err(_) => b
            .body()
            .inputs
            .iter()
            .map(|t| Ok(vec![0u8; t?.byte_len() as usize]))
            .collect::<anyhow::Result<_>>()?,
    };
    let t_load = std::time::Instant::now();
    let mut model = load(b, dev.options())?;
    let load_ns = t_load.elapsed().as_nanos() as u64;
    let mut outputs = alloc_outputs(model.bundle())?;
    for _ in 0..warmup {
        run_once(model.as_mut(), &inputs, &mut outputs)?;
    }
    let (mut total, mut enq, mut devt) = (
        Vec::with_capacity(iters),
        Vec::with_capacity(iters),
        Vec::with_capacity(iters),
    );
    for _ in 0..iters {
        let t = run_once(model.as_mut(), &inputs, &mut outputs)?;
        total.push(t.total_ns);
        enq.push(t.enqueue_ns);
        devt.push(t.device_ns);
    }
    let device_name = model.device_name();
    let modelled = !model.computes_outputs();
    drop(model);
    // Before the trace run, which loads a second executor.
    let peak_rss = peak_rss_bytes();
    let traced = match out.trace {
        Some(file) => Some((file, write_trace(&bytes, path, &inputs, dev, file)?)),
        None => None,
    };
    if out.json {
        let samples: Vec<String> = total.iter().map(u64::to_string).collect();
        let mut fields = vec![
            format!("\"device\":{}", json_str(&device_name)),
            format!("\"load_ns\":{load_ns}"),
            format!("\"iters\":{iters}"),
            format!("\"warmup\":{warmup}"),
            format!("\"samples_ns\":[{}]", samples.join(",")),
        ];
        for (label, v) in [
            ("", &mut total),
            ("enqueue_", &mut enq),
            ("device_", &mut devt),
        ] {
            let (lo, med, hi) = stats(v);
            fields.push(format!(
                "\"{label}min_ns\":{lo},\"{label}median_ns\":{med},\"{label}max_ns\":{hi}"
            ));
        }
        fields.push(format!(
            "\"peak_rss_bytes\":{}",
            peak_rss.map_or("null".into(), |v| v.to_string())
        ));
        println!("{{{}}}", fields.join(","));
        return Ok(());
    }
    println!("device      {device_name}");
    if modelled {
        println!("note        this device models the hardware: its device times are modelled, not measured");
    }
    println!("load        {}", ms(load_ns));
    for (label, v) in [
        ("step", &mut total),
        ("enqueue", &mut enq),
        ("device", &mut devt),
    ] {
        let (lo, med, hi) = stats(v);
        println!(
            "{label:11} min {}  median {}  max {}  ({iters} iters, {warmup} warm-up)",
            ms(lo),
            ms(med),
            ms(hi)
        );
    }
    if let Some(rss) = peak_rss {
        println!("peak rss    {}", mib(rss));
    }
    if let Some((file, n)) = traced {
        println!(
            "trace       {} ({n} slices; one submit per step, host clock — open in Perfetto)",
            file.display()
        );
    }
    Ok(())
}
