//! The IR3 interpreter of the KGSL model against independent references, on the repo's vision-, policy- and
//! dmonitor-like models compiled for `adreno-a630` (fp32, and openpilot's `--image` = IMAGE=1 FLOAT16=1):
//! - decoder golden: every kernel decodes to Mesa's own disassembly (tinymesa's `ir3_isa_disasm`, through
//!   `qcom/ir3/tests/mesa_disasm.py`), instruction by instruction;
//! - outputs: running each bundle's embedded onnxruntime reference inputs through the Adreno backend over the
//!   KGSL model with shader execution (`--device qcom-emu`) reproduces onnxruntime's outputs within the bundle's
//!   tolerance (fp32 bundles: 1e-4; image/fp16 bundles: the 5e-2 the exporter embeds for FLOAT16);
//! - threads: the vision bundle's work groups run on 1 and on 3 host threads leave byte-identical GPU memory
//!   and equal instruction counts, and both match onnxruntime.
use modelrt_hal::target::TargetName;
use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt_core::bundle::Bundle;
use modelrt_core::Executor;
use modelrt_ir3::Program;
use modelrt_qcom::adreno::AdrenoDevice;
use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};
use modelrt_targets::runner::{load, LoadOptions};
use modelrt_tests::{compile_args, python, reference, root};
use xtask::exporter::ExportArgs;

const MODELS: [&str; 3] = ["vision", "policy", "dmonitor"];

/// Compile `model` for adreno-a630 with an embedded reference (cached per test process).
fn bundle(py: &Path, model: &str, image: bool) -> Vec<u8> {
    let mut args = ExportArgs::onnx(
        root().join(format!("xtask/models/{model}.onnx")),
        TargetName::AdrenoA630,
        "",
    );
    args.image = image;
    args.float16 = image;
    args.reference = true;
    let path = compile_args(py, args, if image { "-ir3-image" } else { "-ir3" });
    std::fs::read(path).unwrap()
}

/// Mesa's listing of each file, in order.
fn mesa_listings(py: &Path, files: &[PathBuf]) -> Vec<Vec<String>> {
    let out = Command::new(py)
        .arg(root().join("qcom/ir3/tests/mesa_disasm.py"))
        .args(files)
        .output()
        .expect("the exporter Python runs");
    assert!(
        out.status.success(),
        "mesa_disasm.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let listings: Vec<Vec<String>> = text
        .split("=== ")
        .skip(1)
        .map(|sec| {
            sec.lines()
                .skip(1)
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.trim().to_string())
                .collect()
        })
        .collect();
    assert_eq!(listings.len(), files.len(), "one Mesa listing per kernel");
    listings
}

#[test]
fn every_kernel_decodes_to_mesas_disassembly() {
    let Some(py) = python() else { return };
    let dir = root().join("target/e2e/ir3-golden");
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    let mut ours = Vec::new();
    for model in MODELS {
        for image in [false, true] {
            let bytes = bundle(&py, model, image);
            let b = Bundle::parse(&bytes).unwrap();
            for (i, k) in b.body().kernels.iter().enumerate() {
                let k = k.unwrap();
                let f = dir.join(format!(
                    "{model}{}-{i}.bin",
                    if image { "-image" } else { "" }
                ));
                std::fs::write(&f, k.binary).unwrap();
                let p = Program::decode(k.name, k.binary).unwrap_or_else(|e| panic!("{e}"));
                ours.push((k.name.to_string(), p.listing()));
                files.push(f);
            }
        }
    }
    let mesa = mesa_listings(&py, &files);
    let mut instrs = 0;
    for ((name, got), want) in ours.iter().zip(&mesa) {
        assert_eq!(got.len(), want.len(), "{name}: instruction count");
        for (n, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g, w, "{name}: instruction {n} (byte offset {:#x})", n * 8);
        }
        instrs += got.len();
    }
    assert!(instrs > 10_000, "only {instrs} instructions compared");
    println!(
        "{} kernels, {instrs} instructions identical to Mesa's disassembly",
        ours.len()
    );
}

/// Deterministic xorshift words, with a random subset of bits cleared so that more of them hit encodings the
/// decoder accepts.
fn pseudo_random_words(seed: u64, n: usize) -> Vec<u64> {
    let mut x = seed;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push(x & !(x.rotate_left(23) & x.rotate_left(41)));
    }
    out
}

/// Every pseudo-random word our decoder accepts is printed exactly as Mesa prints it, so the decoder accepts no
/// encoding Mesa reads differently (Mesa's "; dontcare bits" notes are ignored; a word Mesa does not match fails).
#[test]
fn accepted_random_words_print_as_mesa_does() {
    let Some(py) = python() else { return };
    let mut words = Vec::new();
    let mut ours = Vec::new();
    for w in pseudo_random_words(0x9E37_79B9_7F4A_7C15, 400_000) {
        if let Ok(p) = Program::decode("random", &w.to_le_bytes()) {
            words.push(w);
            ours.push(p.listing().remove(0));
        }
    }
    assert!(words.len() > 40_000, "only {} words accepted", words.len());
    let dir = root().join("target/e2e/ir3-golden");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("random-words.bin");
    std::fs::write(
        &f,
        words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let mesa = mesa_listings(&py, &[f]).remove(0);
    assert_eq!(mesa.len(), words.len());
    for ((w, got), want) in words.iter().zip(&ours).zip(&mesa) {
        let want = match want.split_once("\t;") {
            Some((text, notes))
                if notes
                    .split(", ")
                    .all(|n| n.trim().starts_with("dontcare bits")) =>
            {
                text.trim()
            }
            _ => want.as_str(),
        };
        assert_eq!(got, want, "word {w:016x}");
    }
    println!(
        "{} accepted random words identical to Mesa's disassembly",
        words.len()
    );
}

/// What one emulated step measured.
struct Measured {
    max_abs: f32,
    max_rel: f32,
    step_s: f64,
    fiber_instrs: u64,
    issues: u64,
    interp_s: f64,
    overlapping_bytes: u64,
    outputs: Vec<Vec<u8>>,
}

type Emulated<'b> = Executor<'b, AdrenoDevice<KgslModel>>;

/// The bundle loaded on the Adreno backend over the executing KGSL model (what `--device qcom-emu` builds).
fn emulated(bytes: &[u8]) -> Emulated<'_> {
    let model = KgslModel::new(ModelConfig {
        execute_shaders: true,
        ..Default::default()
    });
    let dev = AdrenoDevice::open(model, Default::default()).unwrap();
    Executor::load(Bundle::parse(bytes).unwrap(), dev).unwrap_or_else(|e| panic!("{e}"))
}

/// Run the bundle's reference inputs through `ex` once and compare with onnxruntime's outputs.
fn step(ex: &mut Emulated<'_>, bytes: &[u8]) -> Measured {
    let (inputs, expected, atol, rtol) = reference(bytes);
    let mut outs: Vec<Vec<u8>> = expected.iter().map(|e| vec![0u8; e.len()]).collect();
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    let before = ex.device_mut().with_kgsl(|m| m.exec_stats());
    let t0 = std::time::Instant::now();
    ex.run(&ins, &mut refs).unwrap_or_else(|e| panic!("{e}"));
    let step_s = t0.elapsed().as_secs_f64();
    let st = ex.device_mut().with_kgsl(|m| m.exec_stats());
    let (mut max_abs, mut max_rel) = (0f32, 0f32);
    for (got, want) in outs.iter().zip(&expected) {
        for (g, w) in got.chunks_exact(4).zip(want.chunks_exact(4)) {
            let g = f32::from_le_bytes([g[0], g[1], g[2], g[3]]);
            let w = f32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            let d = (g - w).abs();
            assert!(
                d <= atol + rtol * w.abs(),
                "got {g}, onnxruntime {w} (atol {atol}, rtol {rtol})"
            );
            max_abs = max_abs.max(d);
            max_rel = max_rel.max(d / w.abs().max(1e-6));
        }
    }
    Measured {
        max_abs,
        max_rel,
        step_s,
        fiber_instrs: st.fiber_instrs - before.fiber_instrs,
        issues: st.issues - before.issues,
        interp_s: st.seconds - before.seconds,
        overlapping_bytes: st.overlapping_bytes - before.overlapping_bytes,
        outputs: outs,
    }
}

fn run_emulated(bytes: &[u8]) -> Measured {
    step(&mut emulated(bytes), bytes)
}

fn check_models(image: bool) {
    let Some(py) = python() else { return };
    for model in MODELS {
        let bytes = bundle(&py, model, image);
        let (_, _, atol, _) = reference(&bytes);
        if !image {
            assert!(atol <= 1e-4, "{model}: fp32 bundles embed atol 1e-4");
        }
        let m = run_emulated(&bytes);
        assert!(m.fiber_instrs > 0, "{model}: the interpreter ran");
        println!(
            "{model}{}: max abs err {:.3e}, max rel err {:.3e}, emulated step {:.2} s, {:.1} M fiber-instructions at {:.1} M/s",
            if image { " (image/fp16)" } else { " (fp32)" },
            m.max_abs,
            m.max_rel,
            m.step_s,
            m.fiber_instrs as f64 / 1e6,
            m.fiber_instrs as f64 / m.interp_s / 1e6
        );
    }
}

#[test]
fn qcom_emu_device_says_it_computes_outputs() {
    let Some(py) = python() else { return };
    let bytes = bundle(&py, "policy", false);
    let model = load(
        Bundle::parse(&bytes).unwrap(),
        LoadOptions::on(modelrt_targets::runner::device("qcom-emu").unwrap()),
    )
    .unwrap();
    assert!(model.computes_outputs(), "{}", model.device_name());
}

#[test]
fn fp32_bundles_compute_onnxruntimes_outputs_on_the_kgsl_model() {
    check_models(false);
}

#[test]
fn image_fp16_bundles_compute_onnxruntimes_outputs_on_the_kgsl_model() {
    check_models(true);
}

/// The work groups of a dispatch on several threads (docs/hw/adreno-kgsl-pm4.md §16.5) change nothing. The
/// vision bundle (dispatches of thousands of fibers, so many batches of work groups) steps three times on one
/// model: twice on 1 thread, then on 3. Every step matches onnxruntime (`step` compares each output with the
/// bundle's reference) and issues the same instructions; the 3-thread step leaves every GPU object as the
/// second 1-thread step did, except for bytes that also changed between the two 1-thread steps (the CP's
/// timestamps and signals, not the kernels' work).
#[test]
fn work_groups_on_three_threads_leave_the_serial_memory() {
    let Some(py) = python() else { return };
    let bytes = bundle(&py, "vision", false);
    let mut ex = emulated(&bytes);
    let snapshot = |ex: &mut Emulated<'_>| ex.device_mut().with_kgsl(|m| m.memory_snapshot());
    ex.device_mut().with_kgsl(|m| m.set_ir3_threads(1));
    let first = step(&mut ex, &bytes);
    let mem1 = snapshot(&mut ex);
    let serial = step(&mut ex, &bytes);
    let mem2 = snapshot(&mut ex);
    ex.device_mut().with_kgsl(|m| m.set_ir3_threads(3));
    let parallel = step(&mut ex, &bytes);
    let mem3 = snapshot(&mut ex);
    let widest = ex.device_mut().with_kgsl(|m| {
        m.dispatches()
            .iter()
            .map(|d| {
                d.global
                    .iter()
                    .chain(&d.local)
                    .map(|&x| u64::from(x))
                    .product::<u64>()
            })
            .max()
            .unwrap_or(0)
    });
    assert!(
        widest > 4 * 512,
        "a dispatch of {widest} fibers at most: too few batches to spread"
    );
    assert_eq!(serial.outputs, first.outputs, "serial steps agree");
    assert_eq!(parallel.outputs, serial.outputs, "outputs byte for byte");
    assert_eq!(
        (parallel.issues, parallel.fiber_instrs),
        (serial.issues, serial.fiber_instrs),
        "instruction counts"
    );
    assert_eq!(serial.overlapping_bytes, 0, "not counted serially");
    let layout = |m: &[(u64, Vec<u8>)]| m.iter().map(|(va, b)| (*va, b.len())).collect::<Vec<_>>();
    assert_eq!(layout(&mem3), layout(&mem2), "the same objects");
    assert_eq!(layout(&mem2), layout(&mem1), "the same objects");
    let (mut compared, mut cp_bytes) = (0usize, 0usize);
    for ((o1, o2), o3) in mem1.iter().zip(&mem2).zip(&mem3) {
        for (i, ((a, b), c)) in o1.1.iter().zip(&o2.1).zip(&o3.1).enumerate() {
            if a != b {
                cp_bytes += 1;
            } else {
                assert_eq!(
                    c, b,
                    "object at {:#x}, byte {i}: 3 threads differ from 1",
                    o2.0
                );
                compared += 1;
            }
        }
    }
    assert!(
        cp_bytes < 4096,
        "{cp_bytes} bytes changed between two serial steps"
    );
    println!(
        "vision fp32: {compared} bytes of GPU memory identical ({cp_bytes} CP bytes skipped); interpretation \
         {:.2} s on 1 thread, {:.2} s on 3; {} bytes stored by more than one batch",
        serial.interp_s, parallel.interp_s, parallel.overlapping_bytes
    );
}
