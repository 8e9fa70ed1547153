//! Manifest → bundle: turns the exporter's neutral manifest into a `BundleSpec` and writes it with
//! `modelrt_core`'s bundle writer (the only writer). Everything here is a pure function of the
//! manifest, so two compiles of the same model give byte-identical bundles.
use anyhow::{bail, Context, Result};
use modelrt_core::bundle::writer::{write_bundle, BufferSpec, BundleSpec, ReferenceSpec};
use modelrt_core::bundle::{
    ArgRef, BufRef, BufferKind, IndexCheck, KernelDesc, OutputSlice, Producer, Step, TensorDesc,
};
use modelrt_hal::target::{
    CpuArch, DType, Ir3KernelMeta, KernelMeta, ParamDesc, ParamKind, Target,
};

use crate::manifest::{self as m, Manifest};

fn dtype(d: m::DType) -> DType {
    match d {
        m::DType::Float32 => DType::F32,
        m::DType::Float16 => DType::F16,
        m::DType::Bfloat16 => DType::BF16,
        m::DType::Float64 => DType::F64,
        m::DType::Int8 => DType::I8,
        m::DType::Uint8 => DType::U8,
        m::DType::Int16 => DType::I16,
        m::DType::Uint16 => DType::U16,
        m::DType::Int32 => DType::I32,
        m::DType::Uint32 => DType::U32,
        m::DType::Int64 => DType::I64,
        m::DType::Uint64 => DType::U64,
        m::DType::Bool => DType::Bool,
    }
}

fn target<'a>(t: &'a m::Target) -> Result<Target<'a>> {
    Ok(match t {
        m::Target::Cpu { arch, baseline } => {
            let arch = match arch.as_str() {
                "x86_64" => CpuArch::X86_64,
                "aarch64" | "arm64" => CpuArch::Aarch64,
                other => bail!("manifest CPU arch '{other}' is not supported"),
            };
            let features =
                modelrt_cpu::features_for_baseline(arch, baseline).with_context(|| {
                    format!("unknown CPU baseline '{baseline}' for {}", arch.name())
                })?;
            Target::Cpu {
                arch,
                baseline,
                features,
            }
        }
        m::Target::Adreno { chip, image, half } => Target::Adreno {
            chip: *chip,
            image: *image,
            half: *half,
        },
        m::Target::Amd { gfx } => {
            let hex = gfx
                .strip_prefix("gfx")
                .with_context(|| format!("AMD target '{gfx}' is not gfxNNNN"))?;
            Target::Amd {
                gfx: u32::from_str_radix(hex, 16).with_context(|| format!("AMD target '{gfx}'"))?,
            }
        }
        m::Target::Hexagon { version } => Target::Hexagon { version: *version },
    })
}

fn sha256(hex: &str) -> Result<[u8; 32]> {
    let mut out = [0u8; 32];
    if hex.len() != 64 {
        bail!("manifest onnx_sha256 is not 64 hex digits");
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
            .context("manifest onnx_sha256 is not hex")?;
    }
    Ok(out)
}

fn u32_of(v: u64, what: &str) -> Result<u32> {
    u32::try_from(v).with_context(|| format!("{what} {v} does not fit 32 bits"))
}

fn kernel<'a>(man: &'a Manifest, k: &'a m::Kernel) -> Result<KernelDesc<'a>> {
    let mut params = heapless::Vec::new();
    for p in &k.params {
        let kind = match p.kind {
            m::ParamKind::Buffer => ParamKind::Buffer,
            m::ParamKind::CoreId => ParamKind::CoreId,
            m::ParamKind::Var => ParamKind::Var,
            m::ParamKind::Image => ParamKind::Image {
                height: u32_of(
                    p.height.context("image parameter without height")?,
                    "image height",
                )?,
                width: u32_of(
                    p.width.context("image parameter without width")?,
                    "image width",
                )?,
            },
        };
        params
            .push(ParamDesc {
                kind,
                dtype: dtype(p.dtype),
            })
            .map_err(|_| anyhow::anyhow!("kernel {} has more than 64 parameters", k.name))?;
    }
    let meta = match &k.meta {
        m::KernelMeta::Cpu(c) => KernelMeta::Cpu(*c),
        m::KernelMeta::Ir3(i) => KernelMeta::Ir3(Ir3KernelMeta {
            image_size: i.image_size,
            fregs: i.fregs,
            hregs: i.hregs,
            branchstack: i.branchstack,
            pvtmem: i.pvtmem,
            shmem: i.shmem,
            wgid: i.wgid,
            lid: i.lid,
            wgsz: i.wgsz,
            buf_off: i.buf_off,
            imm_off: i.imm_off,
            immediates: man.blob(&i.immediates)?,
            tex_cnt: i.tex_cnt,
            ibo_cnt: i.ibo_cnt,
            tex_to_image: i.tex_to_image.clone(),
        }),
        m::KernelMeta::QcomCl {} => KernelMeta::QcomCl,
        m::KernelMeta::Amd(a) => KernelMeta::Amd(*a),
    };
    let source = match &k.source {
        Some(p) => Some(
            std::str::from_utf8(man.blob(p)?)
                .with_context(|| format!("kernel {} source is not UTF-8", k.name))?,
        ),
        None => None,
    };
    Ok(KernelDesc {
        name: &k.name,
        entry: &k.entry,
        binary: man.blob(&k.binary)?,
        source,
        params,
        meta,
    })
}

fn step(op: &m::OpBody) -> Result<Step> {
    Ok(match op {
        m::OpBody::Kernel {
            kernel,
            args,
            global,
            local,
            threads,
        } => {
            let mut a = heapless::Vec::new();
            for arg in args {
                let r = match *arg {
                    m::Arg::Buffer {
                        buffer,
                        offset,
                        size,
                    } => ArgRef::Buffer {
                        buffer: u32_of(buffer as u64, "buffer id")?,
                        offset,
                        size,
                    },
                    m::Arg::Int { int } => ArgRef::Int(
                        i32::try_from(int).context("kernel int argument does not fit i32")?,
                    ),
                };
                a.push(r)
                    .map_err(|_| anyhow::anyhow!("launch has more than 64 arguments"))?;
            }
            let dims = |v: &[u64; 3], what: &str| -> Result<[u32; 3]> {
                Ok([
                    u32_of(v[0], what)?,
                    u32_of(v[1], what)?,
                    u32_of(v[2], what)?,
                ])
            };
            match threads {
                None => Step::Launch {
                    kernel: u32_of(*kernel as u64, "kernel index")?,
                    args: a,
                    global: dims(global, "global size")?,
                    local: dims(local, "local size")?,
                },
                Some(t) => Step::LaunchThreads {
                    kernel: u32_of(*kernel as u64, "kernel index")?,
                    args: a,
                    global: dims(global, "global size")?,
                    local: dims(local, "local size")?,
                    threads: dims(t, "thread count")?,
                },
            }
        }
        m::OpBody::Copy { dst, src, size } => Step::Copy {
            dst: BufRef {
                buffer: u32_of(dst.buffer as u64, "buffer id")?,
                offset: dst.offset,
            },
            src: BufRef {
                buffer: u32_of(src.buffer as u64, "buffer id")?,
                offset: src.offset,
            },
            size: *size,
        },
    })
}

fn tensor(t: &m::TensorBinding) -> Result<TensorDesc<'_>> {
    let shape: heapless::Vec<u64, 8> = t
        .shape
        .as_slice()
        .try_into()
        .map_err(|_| anyhow::anyhow!("tensor {} has more than 8 dimensions", t.name))?;
    Ok(TensorDesc {
        name: &t.name,
        buffer: u32_of(t.buffer as u64, "buffer id")?,
        offset: t.offset,
        dtype: dtype(t.dtype),
        shape,
    })
}

/// Build bundle bytes from a loaded manifest.
pub fn build(man: &Manifest) -> Result<Vec<u8>> {
    let flags: Vec<String> = man
        .producer
        .flags
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let flags = flags.join(" ");
    let mut buffers = Vec::new();
    for (i, b) in man.buffers.iter().enumerate() {
        if b.id != i {
            bail!(
                "manifest buffer ids are not dense (buffer {i} has id {})",
                b.id
            );
        }
        let kind = match b.kind {
            m::BufferKind::Input => BufferKind::Input,
            m::BufferKind::Output => BufferKind::Output,
            m::BufferKind::Weight => BufferKind::Weight,
            m::BufferKind::State => BufferKind::State,
            m::BufferKind::Scratch => BufferKind::Scratch,
        };
        let init = match &b.blob {
            Some(p) => Some(man.blob(p)?),
            None => None,
        };
        buffers.push(BufferSpec {
            label: &b.label,
            size: b.size,
            dtype: dtype(b.dtype),
            kind,
            init,
        });
    }
    let kernels = man
        .kernels
        .iter()
        .map(|k| kernel(man, k))
        .collect::<Result<Vec<_>>>()?;
    let (mut init, mut run) = (Vec::new(), Vec::new());
    for op in &man.ops {
        match op.phase {
            m::Phase::Init => init.push(step(&op.body)?),
            m::Phase::Run => run.push(step(&op.body)?),
        }
    }
    let inputs = man.inputs.iter().map(tensor).collect::<Result<Vec<_>>>()?;
    let outputs = man.outputs.iter().map(tensor).collect::<Result<Vec<_>>>()?;
    let reference = man
        .reference
        .as_ref()
        .map(|r| reference_spec(man, r))
        .transpose()?;
    let index_checks = man
        .index_checks
        .iter()
        .map(|c| {
            let input = man
                .inputs
                .iter()
                .position(|t| t.name == c.input)
                .ok_or_else(|| {
                    anyhow::anyhow!("index check on '{}', which is not an input", c.input)
                })?;
            Ok(IndexCheck {
                input: u32_of(input as u64, "input index")?,
                period: c.period,
                phase: c.phase,
                min: c.min,
                max: c.max,
                what: &c.what,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let output_slices = man
        .output_slices
        .iter()
        .map(|s| {
            let output = man
                .outputs
                .iter()
                .position(|t| t.name == s.output)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "output slice '{}' of '{}', which is not an output",
                        s.name,
                        s.output
                    )
                })?;
            Ok(OutputSlice {
                output: u32_of(output as u64, "output index")?,
                name: &s.name,
                start: s.start,
                stop: s.stop,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let spec = BundleSpec {
        target: target(&man.target)?,
        producer: Producer {
            tinygrad: &man.producer.tinygrad,
            tinymesa: man.producer.tinymesa.as_deref(),
            source_sha256: sha256(&man.producer.onnx_sha256)?,
            dev: &man.producer.dev,
            flags: &flags,
        },
        buffers,
        kernels,
        init,
        run,
        inputs,
        outputs,
        reference,
        index_checks,
        output_slices,
        checkpoint: man.checkpoint.as_deref().unwrap_or(""),
    };
    write_bundle(&spec).map_err(|e| anyhow::anyhow!("{e}"))
}

/// `r`'s tensors as the bundle would embed them: input and output blobs in the manifest's input and output
/// order (`r` need not be `man.reference`: the compile's pre-write check keeps one the bundle does not embed).
pub fn reference_spec<'m>(man: &'m Manifest, r: &m::Reference) -> Result<ReferenceSpec<'m>> {
    let pick = |names: &[m::TensorBinding],
                blobs: &std::collections::BTreeMap<String, String>|
     -> Result<Vec<&'m [u8]>> {
        names
            .iter()
            .map(|t| {
                let p = blobs
                    .get(&t.name)
                    .with_context(|| format!("reference has no data for '{}'", t.name))?;
                Ok(man.blob(p)?)
            })
            .collect()
    };
    Ok(ReferenceSpec {
        seed: r.seed,
        atol: r.atol as f32,
        rtol: r.rtol as f32,
        inputs: pick(&man.inputs, &r.inputs)?,
        outputs: pick(&man.outputs, &r.outputs)?,
    })
}
