//! Hexagon DSP target (issue 14, foundation): `hexagon-v65` bundles computed under qemu-hexagon by modelrt's own
//! harness (qcom/dsp/hexrun.c via `modelrt_targets::dsp_emu`), checked against independent references:
//! - the helper library against the host's own integer division and `f32::trunc`, and binary16 conversion against
//!   an exact-arithmetic decoding of all 65,536 halves;
//! - the false vector alignment of tinygrad 0.14's DSP codegen: a kernel with tinygrad's over-aligned 128-byte
//!   vector loads computes wrong bytes, the exporter's lowered alignment computes the right ones;
//! - a small QDQ uint8 MobileNetV2-shaped net: bit-identical to tinygrad's own CPU result for the same graph, within
//!   quantisation tolerance of onnxruntime, and every kernel launch byte-identical to what tinygrad's own mock
//!   (MOCKDSP) computed for the same launch;
//! - a float32 small net within 1e-5 of onnxruntime; two compiles of a QDQ depthwise 3×3 over 576 channels at 7×7
//!   give identical bundle bytes, and its output equals tinygrad's CPU result (and equals the committed bundle
//!   `modelrt dsp selftest` embeds);
//! - the FastRPC path (`--device dsp-emu`: the engine on the FastRPC model, the bundle's model library under qemu):
//!   one invoke per step against tinygrad's three per launch, counted by the model, with identical outputs; faults
//!   on that path give clear errors without hanging; the selftest's embedded bundle passes on the model.
//!
//! Needs the exporter's Python, clang-19 and qemu-hexagon-static >= 8 (`cargo xtask setup`); a missing one is a
//! visible skip, and a failure under CI.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use modelrt_core::bundle::Bundle;
use modelrt_qcom::dsp::engine::{Loaded, Pattern};
use modelrt_qcom::dsp::model_run::ModelRun;
use modelrt_qcom::dsp::session::{Session, SessionConfig};
use modelrt_qcom::emu::fastrpc::{FastRpcModel, Fault, Qemu};
use modelrt_qcom::emu::hexagon::{self, BufArg, Helper, Schedule, Step};
use modelrt_targets::dsp_model::{self, Backend, DspModel, MODEL_LIBRARY};
use modelrt_targets::runner::LoadedModel;
use modelrt_tests::{python, reference, root, skip};
use xtask::exporter::ExportArgs;

/// Python, clang-19 and qemu >= 8, or a reported skip.
fn tools() -> Option<PathBuf> {
    let py = python()?;
    let qemu = hexagon::qemu::check_qemu().and_then(|_| hexagon::qemu::harness());
    skip::require(
        qemu.err().map_or(Some(()), |e| {
            eprintln!("{e}");
            None
        }),
        "qemu-hexagon-static >= 8 and clang-19 (cargo xtask setup)",
    )?;
    Some(py)
}

fn dir() -> PathBuf {
    let d = root().join("target/e2e/hexagon");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn models(py: &Path) -> &'static (PathBuf, PathBuf) {
    static M: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    M.get_or_init(|| {
        let out = dir().join("small");
        let ok = Command::new(py)
            .arg(root().join("xtask/exporter/tools/dsp_models.py"))
            .args(["--out"])
            .arg(&out)
            .args(["--res", "64"])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tools/dsp_models.py failed");
        (out.join("qdq.onnx"), out.join("float.onnx"))
    })
}

/// Export `onnx` for hexagon-v65 with `env` (fixture recording, test switches) and build the bundle bytes.
fn compile(py: &Path, onnx: &Path, tag: &str, env: &[(&str, &Path)], quantised: bool) -> Vec<u8> {
    let out = dir().join(format!("export-{tag}"));
    let mut args = ExportArgs::onnx(onnx, "hexagon-v65", &out);
    args.reference = true;
    let mut cmd = Command::new(py);
    cmd.arg(xtask::exporter::script_path()).args(args.to_argv());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let st = cmd.status().unwrap();
    assert!(st.success(), "exporter failed on {}", onnx.display());
    let man = xtask::manifest::Manifest::load(&out).unwrap();
    // no --trust-tinygrad: a QDQ graph is cross-checked with onnxruntime in quantisation steps, and the bundle says so
    assert_eq!(
        man.producer.flags.contains_key("ORT_TOLERANCE"),
        quantised,
        "quantised cross-check flag of {}",
        onnx.display()
    );
    assert!(!man.producer.flags.contains_key("TRUST_TINYGRAD"));
    xtask::bundle_build::build(&man).unwrap()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// tinygrad's own result for `onnx` on the host CPU (`DEV=CPU`), for the input bytes `x` of shape `shape`.
fn tinygrad_cpu(py: &Path, onnx: &Path, x: &[u8], shape: &[usize]) -> Vec<u8> {
    let d = onnx.parent().unwrap(); // one model per directory: parallel tests never share these files
    let (inp, outp) = (d.join("tg_in.bin"), d.join("tg_out.bin"));
    std::fs::write(&inp, x).unwrap();
    let script = "import sys, numpy as np\nfrom tinygrad import Tensor\nfrom tinygrad.nn.onnx import OnnxRunner\n\
                  x = np.fromfile(sys.argv[2], np.float32).reshape([int(s) for s in sys.argv[4].split(',')])\n\
                  out = list(OnnxRunner(sys.argv[1])({'input': Tensor(x)}).values())[0]\n\
                  out.numpy().astype(np.float32).tofile(sys.argv[3])\n";
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    let st = Command::new(py)
        .args(["-c", script])
        .arg(onnx)
        .arg(&inp)
        .arg(&outp)
        .arg(dims.join(","))
        .env("DEV", "CPU")
        .status()
        .unwrap();
    assert!(st.success(), "tinygrad CPU run failed");
    std::fs::read(&outp).unwrap()
}

fn run(bundle: &[u8], inputs: &[Vec<u8>]) -> modelrt_targets::dsp_emu::DspRun {
    let b = Bundle::parse(bundle).expect("hexagon bundle parses and validates");
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    modelrt_targets::dsp_emu::run_bundle(&b, &ins).expect("bundle runs under qemu-hexagon")
}

#[test]
fn helper_library_matches_host_arithmetic() {
    if tools().is_none() {
        return;
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let pairs: Vec<(u64, u64)> = (0..20_000)
        .map(|i| {
            let (a, mut b) = (rnd(), rnd());
            // small and extreme divisors too
            b = match i % 4 {
                0 => b % 64,
                1 => b >> (b % 64),
                _ => b,
            };
            (a, if b == 0 { 1 } else { b })
        })
        .collect();
    let run = |f| hexagon::run_helper(f, &pairs).unwrap();
    for (f, want) in [
        (
            Helper::UDivSi3,
            &(|a: u32, b: u32| u64::from(a / b)) as &dyn Fn(u32, u32) -> u64,
        ),
        (Helper::UModSi3, &|a, b| u64::from(a % b)),
        (Helper::DivSi3, &|a, b| {
            u64::from((a as i32).wrapping_div(b as i32) as u32)
        }),
        (Helper::ModSi3, &|a, b| {
            u64::from((a as i32).wrapping_rem(b as i32) as u32)
        }),
    ] {
        for (p, g) in pairs.iter().zip(&run(f)) {
            let (a, b) = (p.0 as u32, p.1 as u32);
            if b != 0 {
                assert_eq!(*g, want(a, b), "{f:?}({a}, {b})");
            }
        }
    }
    for (f, want) in [
        (
            Helper::UDivDi3,
            &(|a: u64, b: u64| a / b) as &dyn Fn(u64, u64) -> u64,
        ),
        (Helper::UModDi3, &|a, b| a % b),
        (Helper::DivDi3, &|a, b| {
            (a as i64).wrapping_div(b as i64) as u64
        }),
        (Helper::ModDi3, &|a, b| {
            (a as i64).wrapping_rem(b as i64) as u64
        }),
    ] {
        for (p, g) in pairs.iter().zip(&run(f)) {
            assert_eq!(*g, want(p.0, p.1), "{f:?}({}, {})", p.0, p.1);
        }
    }
    // truncf: random bit patterns (NaN, inf, subnormals included) against f32::trunc
    let floats: Vec<(u64, u64)> = pairs.iter().map(|p| (p.0 & 0xffff_ffff, 0)).collect();
    for (p, g) in floats
        .iter()
        .zip(&hexagon::run_helper(Helper::TruncF, &floats).unwrap())
    {
        let (x, want) = (
            f32::from_bits(p.0 as u32),
            f32::from_bits(p.0 as u32).trunc(),
        );
        let got = f32::from_bits(*g as u32);
        assert!(
            got.to_bits() == want.to_bits() || (x.is_nan() && got.is_nan()),
            "truncf({x:e}) = {got:e}"
        );
    }
}

/// The value of binary16 bits `h`, decoded from the format's definition with exact f64 arithmetic.
fn half_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (i32::from((h >> 10) & 0x1f), f64::from(h & 0x3ff));
    match e {
        0 => sign * m * 2f64.powi(-24),
        31 if m == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

#[test]
fn half_conversions_match_the_binary16_definition() {
    if tools().is_none() {
        return;
    }
    let all: Vec<(u64, u64)> = (0..=0xffffu64).map(|h| (h, 0)).collect();
    let ext = hexagon::run_helper(Helper::ExtendHfSf2, &all).unwrap();
    for (h, g) in (0..=0xffffu16).zip(&ext) {
        let (got, want) = (f64::from(f32::from_bits(*g as u32)), half_value(h));
        assert!(
            got == want || (want.is_nan() && got.is_nan()),
            "half {h:#06x}: {got} != {want}"
        );
    }
    // float -> half, round to nearest even: nearest finite half by exhaustive search over the sorted positives
    let mut pos: Vec<(f64, u16)> = (0..0x7c00u16).map(|h| (half_value(h), h)).collect();
    pos.sort_by(|a, b| a.0.total_cmp(&b.0));
    let nearest = |x: f32| -> u16 {
        let (s, a) = (
            if x.is_sign_negative() { 0x8000 } else { 0 },
            f64::from(x.abs()),
        );
        if x.is_nan() {
            return 0x7e00;
        }
        // the halfway point above the largest finite half (65504 + 16) rounds to infinity
        if a >= 65520.0 {
            return s | 0x7c00;
        }
        let i = pos.partition_point(|p| p.0 < a);
        let hi = pos[i.min(pos.len() - 1)];
        let lo = pos[i.saturating_sub(1)];
        let (dl, dh) = (a - lo.0, hi.0 - a);
        s | if dl < dh || (dl == dh && lo.1.is_multiple_of(2)) {
            lo.1
        } else {
            hi.1
        }
    };
    let mut x: u32 = 0x1234_5678;
    let mut floats: Vec<(u64, u64)> = (0..40_000)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (u64::from(x), 0)
        })
        .collect();
    // exact ties and values around the half range
    floats.extend((0..20_000u32).map(|i| (u64::from(0x3300_0000 + i * 0x1000), 0)));
    let got = hexagon::run_helper(Helper::TruncSfHf2, &floats).unwrap();
    for (p, g) in floats.iter().zip(&got) {
        let f = f32::from_bits(p.0 as u32);
        let want = nearest(f);
        if f.is_nan() {
            assert_eq!(*g as u16 & 0x7c00, 0x7c00, "NaN {:#x}", p.0);
            assert_ne!(*g as u16 & 0x3ff, 0, "NaN {:#x}", p.0);
        } else {
            assert_eq!(*g as u16, want, "{f:e} ({:#010x})", p.0);
        }
    }
}

/// tinygrad 0.14's DSP pattern: 128-byte vector loads at offsets `stride·i` (196 here, not known to the compiler),
/// through a vector type declared `aligned(128)`.
const ALIGN_KERNEL: &str = r#"
typedef unsigned char uchar128 __attribute__((aligned(128),ext_vector_type(128)));
typedef union { struct { void *pv; unsigned int len; } buf; struct { int fd; unsigned int offset; } dma; } remote_arg;
void *HAP_mmap(void *addr, int len, int prot, int flags, int fd, long offset);
int HAP_munmap(void *addr, int len);
int HAP_power_set(void *, void *);
unsigned long long HAP_perf_get_time_us(void);
__attribute__((noinline)) void k(unsigned char *restrict __attribute__((align_value(128))) out,
                                 unsigned char *restrict __attribute__((align_value(128))) in, int stride) {
  for (int i = 0; i < 8; i++) {
    uchar128 v = *((uchar128 *)(in + i * stride));
    *((uchar128 *)(out + i * 128)) = v + (uchar128)1;
  }
}
int entry(unsigned long long h, unsigned int sc, remote_arg *pra) {
  if ((sc >> 24) != 2) return 0;
  int *sz = (int *)pra[0].buf.pv, *off = (int *)pra[1].buf.pv;
  unsigned char *o = (unsigned char *)HAP_mmap(0, sz[0], 3, 0, pra[3].dma.fd, 0) + off[0];
  unsigned char *i = (unsigned char *)HAP_mmap(0, sz[2], 3, 0, pra[4].dma.fd, 0) + off[1];
  unsigned long long t = HAP_perf_get_time_us();
  k(o, i, *(int *)((char *)pra[0].buf.pv + 16));
  *(unsigned long long *)pra[2].buf.pv = HAP_perf_get_time_us() - t;
  return 0;
}
"#;

#[test]
fn false_vector_alignment_is_lowered_by_the_exporter() {
    let Some(py) = tools() else { return };
    let d = dir().join("align");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("k.c"), ALIGN_KERNEL).unwrap();
    // compile the kernel as tinygrad renders it and after the exporter's fix, with the exporter's own compile path
    let script = "import sys, os\nfrom mrt import dsp as mrt_dsp\nmrt_dsp.prepare(sys.argv[1])\n\
                  src = open(os.path.join(sys.argv[1], 'k.c')).read()\n\
                  open(os.path.join(sys.argv[1], 'raw.so'), 'wb').write(mrt_dsp.compile_device(src, 'raw'))\n\
                  fixed = mrt_dsp.lower_vector_alignment(src, 1)\nassert 'aligned(1),ext_vector_type(128)' in fixed\n\
                  open(os.path.join(sys.argv[1], 'fixed.so'), 'wb').write(mrt_dsp.compile_device(fixed, 'fixed'))\n";
    let st = xtask::exporter_python::command(&py)
        .args(["-c", script])
        .arg(&d)
        .status()
        .unwrap();
    assert!(st.success());
    let input: Vec<u8> = (0..8 * 196 + 128)
        .map(|i| (i * 7 + i / 256) as u8)
        .collect();
    let want: Vec<u8> = (0..1024)
        .map(|j| input[(j / 128) * 196 + j % 128].wrapping_add(1))
        .collect();
    let compute = |lib: &[u8]| -> Vec<u8> {
        let s = Schedule {
            libs: vec![lib],
            buffers: vec![vec![0; 1024], input.clone()],
            steps: vec![Step::Launch {
                lib: 0,
                bufs: vec![
                    BufArg {
                        buffer: 0,
                        offset: 0,
                        size: 1024,
                    },
                    BufArg {
                        buffer: 1,
                        offset: 0,
                        size: input.len() as u32,
                    },
                ],
                vals: vec![196],
            }],
            outputs: vec![0],
        };
        hexagon::run(&s).unwrap().outputs.remove(0)
    };
    let raw = compute(&std::fs::read(d.join("raw.so")).unwrap());
    let fixed = compute(&std::fs::read(d.join("fixed.so")).unwrap());
    assert_eq!(fixed, want, "lowered alignment computes the right bytes");
    let wrong = raw.iter().zip(&want).filter(|(a, b)| a != b).count();
    assert!(
        wrong > 0,
        "tinygrad's over-aligned typedef was expected to read wrong bytes"
    );
}

/// The small QDQ model: bundle + the mock's per-launch fixture.
fn small_qdq(py: &Path) -> &'static (Vec<u8>, PathBuf) {
    static B: OnceLock<(Vec<u8>, PathBuf)> = OnceLock::new();
    B.get_or_init(|| {
        let fixture = dir().join("fixture-qdq");
        let _ = std::fs::remove_dir_all(&fixture);
        let bytes = compile(
            py,
            &models(py).0,
            "qdq",
            &[("MODELRT_DSP_FIXTURE", &fixture)],
            true,
        );
        (bytes, fixture)
    })
}

#[test]
fn small_qdq_mobilenet_is_bit_identical_to_tinygrad_cpu() {
    let Some(py) = tools() else { return };
    let (bundle, _) = small_qdq(&py);
    let b = Bundle::parse(bundle).unwrap();
    assert!(matches!(
        b.body().target,
        modelrt_hal::target::Target::Hexagon { version: 65 }
    ));
    let (ins, ort, _, _) = reference(bundle);
    let r = run(bundle, &ins);
    let got = f32s(&r.outputs[0]);
    let cpu = f32s(&tinygrad_cpu(&py, &models(&py).0, &ins[0], &[1, 3, 64, 64]));
    assert_eq!(
        got, cpu,
        "DSP under qemu vs tinygrad DEV=CPU: must be bit-identical"
    );
    // onnxruntime requantises with round-half-even, tinygrad with round-half-up: a few quantisation steps apart
    let ort = f32s(&ort[0]);
    let peak = ort.iter().fold(0f32, |m, v| m.max(v.abs()));
    let err = max_abs(&got, &ort);
    assert!(
        err <= 0.1 * peak,
        "vs onnxruntime: max abs {err} with |logit| up to {peak}"
    );
    // the same through the runner `modelrt run/verify --device dsp-emu` uses
    let mut m = modelrt_targets::runner::load(
        Bundle::parse(bundle).unwrap(),
        modelrt_targets::runner::LoadOptions {
            device: modelrt_targets::runner::DeviceChoice::DspEmu,
            threads: 0,
        },
    )
    .expect("dsp-emu loads a hexagon bundle");
    let mut out = vec![0u8; got.len() * 4];
    m.run(&[ins[0].as_slice()], &mut [out.as_mut_slice()])
        .unwrap();
    assert_eq!(f32s(&out), cpu, "dsp-emu runner output");
    let insns: u64 = r.steps.iter().map(|s| u64::from(s.instructions)).sum();
    eprintln!(
        "small QDQ: {} steps, {insns} instructions, qemu {:.2} s, vs ORT max abs {err:.4} (peak {peak:.3})",
        r.steps.len(),
        r.qemu_seconds
    );
}

#[test]
fn small_qdq_every_launch_equals_tinygrads_mock() {
    let Some(py) = tools() else { return };
    let (bundle, fixture) = small_qdq(&py);
    let b = Bundle::parse(bundle).unwrap();
    let index = std::fs::read_to_string(fixture.join("index.txt")).unwrap();
    let launches: Vec<Vec<&str>> = index.lines().map(|l| l.split(' ').collect()).collect();
    assert!(
        launches.len() >= 10,
        "fixture holds {} launches",
        launches.len()
    );
    let list = |f: &str| -> Vec<i64> {
        if f == "-" {
            return vec![];
        }
        f.split(',').map(|v| v.parse().unwrap()).collect()
    };
    let mut checked = 0;
    for l in &launches {
        let name = l[0];
        let kernels: Vec<_> = b
            .body()
            .kernels
            .iter()
            .map(Result::unwrap)
            .filter(|k| k.name == name)
            .collect();
        assert_eq!(kernels.len(), 1, "kernel {name} in the bundle");
        let sizes: Vec<usize> = list(l[2]).iter().map(|&s| s as usize).collect();
        let data = std::fs::read(fixture.join(l[1])).unwrap();
        let total: usize = sizes.iter().sum();
        assert_eq!(data.len(), 2 * total);
        let (before, after) = data.split_at(total);
        let mut bufs = Vec::new();
        let mut at = 0;
        for s in &sizes {
            bufs.push(before[at..at + s].to_vec());
            at += s;
        }
        let s = Schedule {
            libs: vec![kernels[0].binary],
            steps: vec![Step::Launch {
                lib: 0,
                bufs: sizes
                    .iter()
                    .enumerate()
                    .map(|(i, &s)| BufArg {
                        buffer: i as u32,
                        offset: 0,
                        size: s as u32,
                    })
                    .collect(),
                vals: list(l[3])
                    .iter()
                    .map(|&v| u64::from(v as i32 as u32))
                    .collect(),
            }],
            outputs: (0..sizes.len() as u32).collect(),
            buffers: bufs,
        };
        let got: Vec<u8> = hexagon::run(&s).unwrap().outputs.concat();
        assert!(
            got == after,
            "launch of {name}: device library under hexrun != tinygrad's mock"
        );
        checked += 1;
    }
    eprintln!("{checked} launches byte-identical to tinygrad's mock");
}

#[test]
fn small_qdq_kernels_have_no_over_aligned_vectors() {
    let Some(py) = tools() else { return };
    let (bundle, _) = small_qdq(&py);
    let b = Bundle::parse(bundle).unwrap();
    // what `modelrt info` checks: Hexagon ET_DYN, `entry` defined, only HAP_* imports
    let report = modelrt_targets::inspect::check_kernels(&b).unwrap();
    assert_eq!(report.kernels, b.body().kernels.len());
    for k in b.body().kernels.iter() {
        let k = k.unwrap();
        if k.name == MODEL_LIBRARY {
            // every kernel linked with the schedule runner: no source of its own, checked as a binary above
            assert!(
                k.source.is_none() && k.params.is_empty(),
                "model library record"
            );
            continue;
        }
        let src = k.source.expect("device source is stored");
        assert!(
            src.contains("int entry("),
            "{}: FastRPC entry wrapper",
            k.name
        );
        for line in src.lines().filter(|l| l.contains("ext_vector_type")) {
            // element types are 1, 2 or 4 bytes: a larger alignment is tinygrad's false whole-vector alignment
            assert!(
                ["aligned(1)", "aligned(2)", "aligned(4)"]
                    .iter()
                    .any(|a| line.contains(a)),
                "{}: {line}",
                k.name
            );
        }
        assert_eq!(&k.binary[..4], b"\x7fELF");
        assert_eq!(
            u16::from_le_bytes([k.binary[18], k.binary[19]]),
            164,
            "e_machine Hexagon"
        );
    }
}

#[test]
fn float_small_net_matches_onnxruntime() {
    let Some(py) = tools() else { return };
    let bundle = compile(&py, &models(&py).1, "float", &[], false);
    let (ins, ort, _, _) = reference(&bundle);
    let r = run(&bundle, &ins);
    let err = max_abs(&f32s(&r.outputs[0]), &f32s(&ort[0]));
    assert!(err <= 1e-5, "float32 vs onnxruntime: max abs {err}");
    // The check `cargo xtask compile` runs before writing a hexagon bundle: the FastRPC model, one invoke.
    let dev = xtask::emu_check::device_for("hexagon-v65").unwrap();
    let c = xtask::emu_check::check_embedded(&bundle, dev).unwrap();
    assert_eq!(c.device, "dsp-emu");
    assert!(c.max_abs <= 1e-5, "compile check: max abs {:e}", c.max_abs);
}

#[test]
fn two_compiles_give_identical_bundles() {
    let Some(py) = tools() else { return };
    // the depthwise 3x3 over 576 channels at 7x7 (MobileNetV2's last stage shape): small, so cheap to compile twice
    let out = dir().join("dw");
    let ok = Command::new(&py)
        .arg(root().join("xtask/exporter/tools/dsp_models.py"))
        .arg("--out")
        .arg(&out)
        .arg("--dwtrap")
        .status()
        .unwrap()
        .success();
    assert!(ok, "tools/dsp_models.py --dwtrap failed");
    let onnx = out.join("qdq.onnx");
    let one = compile(&py, &onnx, "dw-1", &[], true);
    let two = compile(&py, &onnx, "dw-2", &[], true);
    assert!(one == two, "bundle bytes differ between two compiles");
    let b = Bundle::parse(&one).unwrap();
    assert!(b
        .body()
        .kernels
        .iter()
        .any(|k| k.unwrap().name.starts_with("r_576_7_7_3_3")));
    // and it computes what tinygrad computes on the CPU
    let (ins, _, _, _) = reference(&one);
    let got = run(&one, &ins);
    let cpu = tinygrad_cpu(&py, &onnx, &ins[0], &[1, 576, 7, 7]);
    assert!(
        got.outputs[0] == cpu,
        "depthwise 576x7x7 under qemu != tinygrad DEV=CPU"
    );
    // this bundle is `modelrt dsp selftest`'s embedded one: the committed copy must be what the exporter builds
    let asset = root().join("targets/assets/dsp-selftest.mrt");
    if std::env::var("MODELRT_UPDATE_DSP_SELFTEST").is_ok_and(|v| v == "1") {
        std::fs::write(&asset, &one).unwrap();
    }
    assert!(
        std::fs::read(&asset).unwrap() == one,
        "{} is out of date: run `MODELRT_UPDATE_DSP_SELFTEST=1 cargo test -p modelrt-tests --test hexagon_dsp two_compiles` and rebuild modelrt",
        asset.display()
    );
    assert!(
        modelrt_targets::dsp_selftest::SELFTEST_BUNDLE == one.as_slice(),
        "the modelrt build embeds a stale selftest bundle"
    );
}

/// `modelrt dsp selftest --emu`'s model run: the embedded bundle through the FastRPC engine on the model (the
/// DSP side under qemu) matches its embedded reference, at one FastRPC invoke per step, and closes cleanly.
#[test]
fn dsp_selftest_embedded_bundle_passes_on_the_model() {
    if tools().is_none() {
        return;
    }
    let checks =
        modelrt_targets::dsp_selftest::run_embedded(Backend::Emulated, &Default::default());
    for c in &checks {
        eprintln!(
            "{} {}: {}",
            if c.ok { "ok" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    let names: Vec<&str> = checks.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "embedded bundle load",
            "embedded bundle output",
            "embedded bundle timing",
            "embedded bundle close"
        ]
    );
    assert!(checks.iter().all(|c| c.ok), "every stage passes");
    assert!(
        checks[2].detail.contains("FastRPC invokes per step [1, 1]"),
        "{}",
        checks[2].detail
    );
}

#[test]
fn harness_refuses_bad_libraries_with_distinct_errors() {
    if tools().is_none() {
        return;
    }
    let launch = |lib: &[u8]| {
        let s = Schedule {
            libs: vec![lib],
            buffers: vec![vec![0; 128]],
            steps: vec![Step::Launch {
                lib: 0,
                bufs: vec![BufArg {
                    buffer: 0,
                    offset: 0,
                    size: 128,
                }],
                vals: vec![],
            }],
            outputs: vec![],
        };
        hexagon::run(&s).unwrap_err().to_string()
    };
    let e = launch(b"\x7fELF not really a shared object, just some bytes........................");
    assert!(e.contains("exit 3"), "{e}");
    // a library importing something the DSP does not provide: only the HAP_* calls are bound
    let d = dir().join("imports");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("x.c"),
        "float sqrtf(float);\nint entry(unsigned long long h, unsigned sc, void *pra) { return (int)sqrtf((float)sc); }\n",
    )
    .unwrap();
    let ok = Command::new(hexagon::qemu::CLANG)
        .args([
            "--target=hexagon",
            "-mcpu=hexagonv65",
            "-shared",
            "-fPIC",
            "-nostdlib",
            "-fuse-ld=lld",
            "-O2",
            "x.c",
            "-o",
            "x.so",
        ])
        .current_dir(&d)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let so = std::fs::read(d.join("x.so")).unwrap();
    let offline = modelrt_targets::inspect_hexagon::check_hexagon(&so, "x").unwrap_err();
    assert!(offline.contains("sqrtf"), "{offline}");
    let e = launch(&so);
    assert!(
        e.contains("exit 4") && e.contains("unresolved import: sqrtf"),
        "{e}"
    );
}

fn emu_session(wait: Duration) -> (Arc<FastRpcModel>, Session) {
    let io = Arc::new(FastRpcModel::new(Box::new(Qemu), wait));
    let mut shell = b"\x7fELF".to_vec();
    shell.resize(4096, 0);
    let cfg = SessionConfig {
        shell,
        testsig_dir: None,
        listener_timeout: Duration::from_secs(2),
    };
    let s = Session::open(io.clone(), &cfg).expect("session on the FastRPC model");
    (io, s)
}

/// FastRPC calls per inference step of the small QDQ model, counted by the FastRPC model: modelrt's step is ONE
/// invoke (the bundle's model library runs the whole schedule on the DSP) with no loader traffic; tinygrad's
/// pattern (open, invoke, close the kernel's library per launch, the loader fetching it each time) is 3 invokes per
/// launch plus the listener's reverse calls. Both run under qemu through the same model and give the same bytes.
#[test]
fn small_qdq_one_invoke_per_step_against_tinygrads_three_per_launch() {
    let Some(py) = tools() else { return };
    let (bundle, _) = small_qdq(&py);
    let b = Bundle::parse(bundle).unwrap();
    assert!(b.body().init.is_empty(), "the small net has no init phase");
    let (ins, _, _, _) = reference(bundle);
    let out_len = usize::try_from(b.body().outputs.get(0).unwrap().byte_len()).unwrap();
    // ours: the engine on the FastRPC model (what `--device dsp-emu` runs)
    let mut m = DspModel::new(Bundle::parse(bundle).unwrap(), Backend::Emulated).unwrap();
    let launches = m.launches_per_step();
    let mut ours = vec![0u8; out_len];
    let mut step_secs = Vec::new();
    let mut per_step = Vec::new();
    for _ in 0..2 {
        let before = m.fastrpc_model().unwrap().counts();
        let t = Instant::now();
        m.run(&[ins[0].as_slice()], &mut [ours.as_mut_slice()])
            .unwrap();
        step_secs.push(t.elapsed().as_secs_f64());
        let after = m.fastrpc_model().unwrap().counts();
        per_step.push((
            after.app_invokes() - before.app_invokes(),
            after.run - before.run,
            after.listener_next - before.listener_next,
        ));
    }
    assert_eq!(
        per_step,
        vec![(1, 1, 0); 2],
        "modelrt: one model-level invoke per step, no loader round trips"
    );
    m.close().unwrap();
    // tinygrad's pattern, per-kernel libraries through the per-launch engine
    let (io, s) = emu_session(Duration::from_secs(120));
    let mut l = Loaded::load(&s, dsp_model::launch_plan(&b).unwrap(), Pattern::PerLaunch).unwrap();
    for (i, buf) in b.body().buffers.iter().enumerate() {
        if let Some(init) = b.init_bytes(&buf.unwrap()) {
            l.write(i as u32, 0, init).unwrap();
        }
    }
    let (tin, tout) = (
        b.body().inputs.get(0).unwrap(),
        b.body().outputs.get(0).unwrap(),
    );
    l.write(tin.buffer, tin.offset, &ins[0]).unwrap();
    let before = io.counts();
    let st = l.step().unwrap();
    let after = io.counts();
    let theirs = after.app_invokes() - before.app_invokes();
    let loader = after.listener_next - before.listener_next;
    assert_eq!(
        theirs, st.invokes,
        "the engine's count agrees with the model's"
    );
    assert_eq!(launches, 16, "the small net's launches per step");
    assert_eq!(
        theirs,
        3 * launches,
        "tinygrad: open + invoke + close per launch"
    );
    assert!(
        loader >= 3 * launches,
        "the loader fetches every library again ({loader} round trips)"
    );
    let mut theirs_out = vec![0u8; out_len];
    l.read(tout.buffer, tout.offset, &mut theirs_out).unwrap();
    l.unload().unwrap();
    s.close().unwrap();
    assert!(
        ours == theirs_out,
        "one-invoke step and per-launch replay give the same output bytes"
    );
    eprintln!(
        "small QDQ: {launches} launches/step; modelrt 1 invoke/step (qemu {:.2} s, {:.2} s); tinygrad pattern {theirs} invokes + {loader} listener round trips/step",
        step_secs[0], step_secs[1]
    );
}

/// Faults on the one-invoke path: a dying session, an invoke error and a hung invoke each give one clear error
/// naming the call and the model library, within the model's wait bound, and a dead session stays failed.
#[test]
fn one_invoke_step_faults_give_clear_errors_without_hanging() {
    let Some(py) = tools() else { return };
    let (bundle, _) = small_qdq(&py);
    let b = Bundle::parse(bundle).unwrap();
    let plan = dsp_model::plan(&b).unwrap();
    for (fault, want) in [
        (Fault::SessionDies, "session died"),
        (Fault::InvokeError(5), "errno 5"),
        (Fault::Hang, "did not complete within 400 ms"),
    ] {
        let (io, s) = emu_session(Duration::from_millis(400));
        let mut m = ModelRun::load(s, &plan).unwrap();
        io.inject(fault);
        let t = Instant::now();
        let e = m.step().unwrap_err().to_string();
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{fault:?} took {:?}",
            t.elapsed()
        );
        assert!(
            e.contains(want) && e.contains("INVOKE_ATTRS run") && e.contains(MODEL_LIBRARY),
            "{fault:?}: {e}"
        );
        if fault == Fault::SessionDies {
            let again = m.step().unwrap_err().to_string();
            assert!(again.contains("session died"), "after death: {again}");
        }
        drop(m);
        assert_eq!(io.open_libs(), 0, "{fault:?}: no library left open");
    }
}
