//! `cargo xtask`: host tooling for modelrt — compile models to bundles, import tinygrad pickles,
//! regenerate the embedded demo, run the whole CI suite, cross-build for comma devices, benchmark.
#![forbid(unsafe_code)]
use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use modelrt_hal::target::{TargetName, UnknownTarget};
use xtask::compile::compile;
use xtask::exporter::{ExportArgs, Source};

mod ci;
mod closed_pipe;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "modelrt host tooling")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Compile an ONNX model (or, with --tinygrad, a tinygrad program) into a bundle with tinygrad 0.14 as the
    /// kernel compiler.
    Compile {
        /// The ONNX model (omit with --tinygrad).
        #[arg(required_unless_present = "tinygrad", conflicts_with = "tinygrad")]
        model: Option<PathBuf>,
        /// Capture a tinygrad program instead: SCRIPT.py:FN, where FN() returns the function to capture, its example
        /// inputs and the initial contents of the buffers it advances with assign (which become bundle state); see
        /// xtask/models/modeld_pipeline.py.
        #[arg(long, value_name = "SCRIPT.py:FN")]
        tinygrad: Option<String>,
        /// The device the bundle is for: cpu (= this host's arch), cpu-x86_64, cpu-aarch64, adreno-a630 (comma
        /// three GPU; emulated: qcom-emu), amd-gfx1100 (RX 7900 over USB; emulated: usb-emu), amd-gfx1201,
        /// hexagon-v65 (comma three DSP; emulated: dsp-emu).
        #[arg(long, default_value = "cpu", value_parser = parse_target)]
        target: TargetName,
        /// Output bundle (.mrt), written only once the compile and its checks succeeded.
        #[arg(short, long)]
        output: PathBuf,
        /// Embed seeded random inputs and the reference's outputs for them (onnxruntime's; tinygrad's own run for
        /// --tinygrad) so `modelrt verify` can check the bundle on any device.
        #[arg(long)]
        reference: bool,
        /// Seed of the random inputs the compile captures with, checks with and (with --reference) embeds.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// CPU kernels' thread split (baked in at compile time; default 4).
        #[arg(long)]
        threads: Option<u32>,
        /// Only with --image, which implies it (FLOAT16=1: half-precision images). tinygrad 0.14 reads FLOAT16 only
        /// in its IMAGE paths, so on its own it would change no kernel and is refused.
        #[arg(long)]
        float16: bool,
        /// adreno-a630 only: openpilot's image/texture layout (IMAGE=1 FLOAT16=1: convolutions read half-precision
        /// images); the bundle is verified at the half-precision tolerance 5e-2.
        #[arg(long)]
        image: bool,
        /// Value of the model's dynamic input dimension NAME (repeatable). A bundle has fixed shapes: dynamic
        /// dimensions without --dim are compiled as 1, and the compile prints each one.
        #[arg(long = "dim", value_name = "NAME=VALUE", value_parser = parse_dim)]
        dims: Vec<(String, u64)>,
        /// CPU baseline the kernels are built for (clang-19 -O3): cpu-x86_64: x86-64-v3 (default; AVX2, 256-bit
        /// vectors) or x86-64-v4 (AVX-512, 512-bit vectors); cpu-aarch64: cortex-a76 (default) or armv8.2-a; `host`:
        /// the best of these this machine supports (the compile prints which). A host lacking a bundle's CPU features
        /// refuses to load it and names them. See docs/cpu-kernels.md.
        #[arg(long)]
        cpu_baseline: Option<String>,
        /// Fix graph input NAME to the value in FILE.npy, folded into the graph before capture (repeatable). Needed for
        /// inputs that set a shape-like parameter (Reshape's shape, Slice's starts, Pad's pads, Resize's scales, ...):
        /// a bundle cannot take those at run time, and compile refuses them without a fixed value.
        #[arg(long = "const", value_name = "NAME=FILE.npy", value_parser = parse_const)]
        consts: Vec<(String, PathBuf)>,
        /// compile3's dtypes instead of the model's own: float16 inputs are fed as float32 and float outputs are
        /// returned as float32 (what openpilot's compile3.py does).
        #[arg(long)]
        compile3_dtypes: bool,
        /// Compile even where tinygrad is known to compute an op differently from the ONNX reference, and skip the
        /// compile-time cross-check of tinygrad's result with onnxruntime. The bundle may give wrong answers.
        #[arg(long)]
        trust_tinygrad: bool,
        /// CPU targets: run tinygrad's kernel search (BEAM=N) on this CPU during the compile and write the chosen
        /// optimisations to a search cache next to the bundle (OUTPUT with extension .beam.json, or --beam-cache-out).
        /// Refused for another architecture's CPU unless --beam-cache gives a cache made on that CPU.
        #[arg(long, value_name = "N")]
        beam: Option<u32>,
        /// CPU targets: apply a search cache (from --beam) instead of searching; the same cache gives a
        /// byte-identical bundle. A kernel the cache lacks, or a cache entry the model lacks, is an error.
        #[arg(long, value_name = "FILE")]
        beam_cache: Option<PathBuf>,
        /// With --beam: where to write the search cache.
        #[arg(
            long,
            value_name = "FILE",
            requires = "beam",
            conflicts_with = "beam_cache"
        )]
        beam_cache_out: Option<PathBuf>,
        /// CPU targets: stride-1 3×3 convolutions as Winograd F(4×4,3×3), weights transformed at compile time: auto
        /// (the exporter's default; x86-64 only) where the measured rule of docs/cpu-kernels.md §6 says it is faster
        /// than the channel-last direct convolution, on for every such conv, off for none. Each rewritten conv is
        /// checked against onnxruntime and keeps the direct form if it misses the bundle's tolerance (the compile
        /// says so).
        #[arg(long, value_parser = ["auto", "on", "off"])]
        winograd: Option<String>,
        /// Skip the check that otherwise runs before an adreno-a630, amd-gfx1100 or hexagon-v65 bundle is written:
        /// the bundle executed on that target's model (qcom-emu: the IR3 interpreter; usb-emu: the RDNA3
        /// interpreter behind the emulated bridge; dsp-emu: qemu-hexagon behind the FastRPC model) on seeded
        /// inputs, every output compared with onnxruntime (for --tinygrad: with tinygrad's own run on the host CPU).
        /// Takes minutes on large models; without it the bundle is only checked structurally, and the compile says
        /// the outputs were NOT checked.
        #[arg(long)]
        no_emu_check: bool,
    },
    /// Convert a tinygrad compile3 pickle (plain or PICKLE_OOB=1) into a bundle without recompiling.
    ///
    /// tinygrad 0.14 pickles with CPU, QCOM:IR3 (Mesa) or AMD kernels; and openpilot's DEV=QCOM pickles (tinygrad 0.12
    /// layout, kernels from Qualcomm's own OpenCL compiler) → adreno-a630 with the Qualcomm binaries kept as they are.
    /// DEV=QCOM pickles are read without executing any code from them: only allow-listed tinygrad class names, read
    /// as plain records; anything else is refused with one line.
    Convert {
        /// The pickle.
        pickle: PathBuf,
        /// Output bundle (.mrt).
        #[arg(short, long)]
        output: PathBuf,
        /// Initial contents of input NAME that the pickled program advances in place (a queue passed in on every call,
        /// as openpilot's compile_modeld.py does); the bundle keeps it as state. VALUE is `zeros` or a .npy file.
        #[arg(long = "state-init", value_name = "NAME=zeros|FILE.npy", value_parser = parse_state_init)]
        state_init: Vec<(String, String)>,
    },
    /// The ONNX light model zoo: compile for CPU, run, compare with each model's reference output;
    /// compile for Adreno and AMD and check every kernel decodes. Writes docs/zoo.md.
    Zoo {
        /// Only these models (e.g. squeezenet resnet50); default all.
        models: Vec<String>,
        /// Skip the Adreno/AMD compiles.
        #[arg(long)]
        cpu_only: bool,
        /// Instead: give the models seeded random weights, compile them for adreno-a630 (fp32 and --image) with an
        /// onnxruntime reference and run them on the KGSL model's IR3 interpreter (`--device qcom-emu`); writes the
        /// Adreno table of docs/zoo.md. Slow: minutes per model.
        #[arg(long, group = "emulated_zoo")]
        adreno: bool,
        /// Instead: give the models seeded random weights, compile them for amd-gfx1100 with an onnxruntime
        /// reference and run them through the whole `--device usb-emu` path (AM driver → bridge emulator → Navi31
        /// GPU model → RDNA3 interpreter); writes the AMD table of docs/zoo.md. Slow: up to minutes per model.
        #[arg(long, group = "emulated_zoo")]
        amd: bool,
        /// With --adreno or --amd: run the bundles an earlier run left in target/zoo/ instead of compiling them again.
        #[arg(long, requires = "emulated_zoo")]
        reuse: bool,
    },
    /// The openpilot-shaped reference pipeline (xtask/models/modeld_pipeline.py) compiled from its tinygrad script for
    /// cpu-x86_64 and adreno-a630 (fp32, --image), run for N frames on the CPU and the KGSL model (qcom-emu) and
    /// compared, outputs and state, with tinygrad's replay of the pickled JIT; writes the table of docs/pipeline.md.
    /// Slow: minutes (the IR3 interpreter).
    Pipeline {
        /// Frames to run.
        #[arg(long, default_value_t = 20)]
        frames: usize,
    },
    /// Install what the build needs (apt packages, rustup targets, the Python venv).
    Setup,
    /// Fetch Debian's firmware-amd-graphics (bookworm, non-free-firmware) through this machine's apt source,
    /// verify it and unpack the Navi31 blobs into target/amdgpu-firmware/ (nothing is installed system-wide).
    Firmware,
    /// Run the whole test suite the way CI does (does its own set-up first).
    Ci {
        /// Skip fmt/clippy (for quick local iterations).
        #[arg(long)]
        no_lint: bool,
    },
    /// Build the C library (release): target/capi/include/modelrt.h and target/capi/lib/libmodelrt.{so,a}
    /// (with --target, under target/capi/<triple>/).
    Capi {
        /// `cpu-aarch64` (comma devices) or a Rust target triple [default: this machine].
        #[arg(long)]
        target: Option<String>,
        /// Only regenerate the checked-in header targets/capi/include/modelrt.h with cbindgen (after
        /// changing the C API's Rust source or its doc comments); builds nothing.
        #[arg(long)]
        write_header: bool,
    },
    /// Build the Python wheel (PyO3, abi3, CPython >= 3.10): target/wheels/modelrt-*.whl
    /// (`pip install target/wheels/modelrt-*.whl`).
    Wheel {
        /// Build the extension with the dev profile (faster to build, slower to run).
        #[arg(long)]
        debug: bool,
    },
    /// Cross-build release binaries for a device into target/dist/ (tarball + manifest + sha256).
    Dist {
        /// Rust target triple (comma devices: aarch64-unknown-linux-gnu).
        #[arg(long, default_value = "aarch64-unknown-linux-gnu")]
        target: String,
    },
    /// Benchmark modelrt vs tinygrad's Python runtime vs onnxruntime (writes target/bench/results.{json,md}).
    Bench {
        /// CI smoke mode: policy only, one round, few iterations (checks the harness runs).
        #[arg(long)]
        quick: bool,
        /// Only these models (policy, dmonitor, vision, squeezenet, resnet50, and the stateful
        /// modeld_pipeline, timed frame by frame); repeatable.
        #[arg(long = "model")]
        models: Vec<String>,
        /// Fresh-process rounds per runtime.
        #[arg(long)]
        rounds: Option<usize>,
        /// Timed steps per process (modeld_pipeline: consecutive frames, at least 20).
        #[arg(long)]
        iters: Option<usize>,
        /// Thread counts, comma-separated, each for every runtime and all measured in the same rounds (0 = all
        /// cores; default 1,2 capped at the host's cores).
        #[arg(long, value_delimiter = ',')]
        threads: Vec<usize>,
        /// Replace the generated section of docs/bench.md with the report.
        #[arg(long)]
        write_doc: bool,
        /// Only regenerate the Markdown report (tables and prose) from a results JSON file (with --write-doc: into
        /// docs/bench.md too); runs nothing.
        #[arg(long, value_name = "RESULTS.json")]
        report: Option<std::path::PathBuf>,
    },
    /// The Hexagon DSP path on the MobileNetV2-1.0-shaped QDQ model at 224×224 (and the 64×64 CI net): compile,
    /// run under qemu-hexagon, compare with tinygrad's CPU result and onnxruntime; writes docs/hexagon.md.
    Hexagon {
        /// Input resolution of the MobileNetV2-1.0-shaped model.
        #[arg(long, default_value_t = 224)]
        res: u32,
    },
    /// Size of the no_std core+hal (tests/footprint probe, aarch64-unknown-none release) vs its budget.
    Footprint,
    /// Which CPU thread split (`compile --threads`) is fastest on this host: compile MODEL once per
    /// candidate, time each bundle with `modelrt bench` in rotated rounds; writes target/bench/threads.md.
    Threads {
        /// The ONNX model.
        #[arg(default_value = "xtask/models/vision.onnx")]
        model: PathBuf,
        /// Thread splits to compare [default: 1 up to this machine's cores].
        #[arg(long, value_delimiter = ',')]
        candidates: Vec<u32>,
        /// Fresh-process rounds per candidate.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Timed steps per process.
        #[arg(long, default_value_t = 30)]
        iters: usize,
    },
    /// ONNX's backend node tests through the CPU compile path and `modelrt run`, next to tinygrad's own
    /// results; prints the table, writes docs/conformance.md (full run) and fails on WRONG/CRASH or a
    /// lost baseline PASS.
    Conformance {
        /// `ci`: one case per op tinygrad's ONNX frontend implements (what CI runs).
        #[arg(long)]
        subset: Option<String>,
        /// Only cases whose name contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Record the results in xtask/conformance/baseline.json.
        #[arg(long)]
        update_baseline: bool,
        /// Time limit in seconds for each step of a case.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
        /// Run with a release build of modelrt.
        #[arg(long)]
        release: bool,
    },
    /// Regenerate xtask/exporter/mrt/manifest_schema.json, the kernel-metadata records' schema the exporter checks what
    /// it writes against, from the Rust declarations (xtask/src/meta_schema.rs), or check that it is current.
    ManifestSchema {
        /// Only check that the checked-in schema matches the Rust declarations.
        #[arg(long)]
        check: bool,
    },
    /// Regenerate the `modelrt demo` bundles embedded in the binary (or check they are current).
    Demo {
        /// Only check that the committed bundles are byte-identical to a fresh compile.
        #[arg(long)]
        check: bool,
    },
}

/// `NAME=zeros` or `NAME=FILE.npy` for `--state-init`.
fn parse_state_init(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, v)) if !name.is_empty() && !v.is_empty() => {
            Ok((name.to_string(), v.to_string()))
        }
        _ => Err(format!("expected NAME=zeros or NAME=FILE.npy, got '{s}'")),
    }
}

/// `NAME=VALUE` (VALUE >= 1) for `--dim`.
fn parse_dim(s: &str) -> Result<(String, u64), String> {
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
fn parse_const(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_string(), PathBuf::from(file)))
        }
        _ => Err(format!("expected NAME=FILE.npy, got '{s}'")),
    }
}

/// `--target`: a target name, or `cpu` for this host's CPU.
fn parse_target(s: &str) -> Result<TargetName, String> {
    match s {
        "cpu" => Ok(TargetName::host_cpu()),
        s => s.parse().map_err(|e: UnknownTarget| format!("{e}, or cpu")),
    }
}

fn main() {
    closed_pipe::install();
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Compile {
            model,
            tinygrad,
            target,
            output,
            reference,
            seed,
            threads,
            float16,
            image,
            dims,
            cpu_baseline,
            consts,
            compile3_dtypes,
            trust_tinygrad,
            beam,
            beam_cache,
            beam_cache_out,
            winograd,
            no_emu_check,
        } => {
            let python = xtask::venv::ensure_venv(&xtask::setup::workspace_root())?;
            let mut args = ExportArgs::onnx(model.unwrap_or_default(), target, PathBuf::new());
            if let Some(spec) = tinygrad {
                args.source = Source::Tinygrad(spec);
            }
            args.reference = reference;
            args.seed = Some(seed);
            args.threads = threads;
            args.float16 = float16 || image;
            args.image = image;
            args.cpu_baseline = cpu_baseline;
            args.consts = consts;
            args.dims = dims;
            args.compile3_dtypes = compile3_dtypes;
            args.trust_tinygrad = trust_tinygrad;
            args.beam = beam;
            args.beam_cache = beam_cache;
            args.beam_cache_out = beam_cache_out;
            args.winograd = winograd;
            args.emu_check = !no_emu_check;
            let r = compile(&python, args, &output)?;
            println!(
                "wrote {} ({} bytes, {} kernels, {} launches) in {:.1} s",
                r.out.display(),
                r.bytes,
                r.kernels,
                r.launches,
                r.seconds
            );
            if let Some(cache) = &r.beam_cache {
                println!("wrote search cache {}", cache.display());
            }
            if let Some((device, why)) = &r.not_checked {
                println!("outputs NOT checked on {device} ({why}): the outputs are unverified");
            }
            Ok(())
        }
        Cmd::Convert {
            pickle,
            output,
            state_init,
        } => {
            let python = xtask::venv::ensure_venv(&xtask::setup::workspace_root())?;
            let mut args = ExportArgs::pickle(pickle, PathBuf::new());
            args.state_init = state_init;
            let r = compile(&python, args, &output)?;
            println!(
                "wrote {} ({} bytes, {} kernels) in {:.1} s",
                r.out.display(),
                r.bytes,
                r.kernels,
                r.seconds
            );
            Ok(())
        }
        Cmd::Pipeline { frames } => {
            let rows = xtask::pipeline::run(frames)?;
            let table = xtask::pipeline::markdown(&rows);
            println!("{table}");
            println!("updated {}", xtask::pipeline::write_doc(&table)?.display());
            Ok(())
        }
        Cmd::Setup => {
            let py = xtask::setup::ensure_all()?;
            println!("set-up complete; exporter python: {}", py.display());
            Ok(())
        }
        Cmd::Firmware => {
            let dir = xtask::firmware::ensure()?;
            println!("firmware blobs in {}", dir.display());
            Ok(())
        }
        Cmd::Ci { no_lint } => ci::run(no_lint),
        Cmd::Demo { check } => ci::demo(check),
        Cmd::ManifestSchema { check } => {
            let root = xtask::setup::workspace_root();
            if check {
                let on_disk = std::fs::read_to_string(root.join(xtask::meta_schema::SCHEMA_PATH))
                    .unwrap_or_default();
                if on_disk != xtask::meta_schema::schema_text()? {
                    anyhow::bail!(
                        "{} is out of date (run `cargo xtask manifest-schema`)",
                        xtask::meta_schema::SCHEMA_PATH
                    );
                }
                println!("{} is up to date", xtask::meta_schema::SCHEMA_PATH);
            } else {
                println!("wrote {}", xtask::meta_schema::write(&root)?.display());
            }
            Ok(())
        }
        Cmd::Conformance {
            subset,
            filter,
            update_baseline,
            timeout,
            release,
        } => {
            let selection = match subset.as_deref() {
                None => xtask::conformance::Selection::All,
                Some("ci") => xtask::conformance::Selection::Ci,
                Some(other) => anyhow::bail!("unknown --subset '{other}' (known: ci)"),
            };
            let o = xtask::conformance::Options {
                selection,
                filter,
                update_baseline,
                timeout: std::time::Duration::from_secs(timeout),
                release,
            };
            xtask::conformance::run(&o).map(|_| ())
        }
        Cmd::Footprint => xtask::footprint::run().map(|_| ()),
        Cmd::Threads {
            model,
            candidates,
            rounds,
            iters,
        } => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
            let candidates = if candidates.is_empty() {
                (1..=cores).collect()
            } else {
                candidates
            };
            let o = xtask::threads::ThreadsOptions {
                model: xtask::setup::workspace_root().join(model),
                candidates,
                rounds,
                iters,
            };
            xtask::threads::run(&o).map(|_| ())
        }
        Cmd::Bench {
            quick,
            models,
            rounds,
            iters,
            threads,
            write_doc,
            report,
        } => {
            if let Some(path) = report {
                let md = xtask::bench::report_from_json(&path)?;
                print!("{md}");
                if write_doc {
                    xtask::bench::write_doc(&md)?;
                }
                return Ok(());
            }
            let mut o = if quick {
                xtask::bench::BenchOptions::quick()
            } else {
                xtask::bench::BenchOptions::full()
            };
            if !models.is_empty() {
                o.models = models;
            }
            o.rounds = rounds.unwrap_or(o.rounds);
            o.iters = iters.unwrap_or(o.iters);
            if !threads.is_empty() {
                o.threads = threads;
            }
            o.write_doc = write_doc;
            xtask::bench::run(&o).map(|_| ())
        }
        Cmd::Zoo {
            models,
            amd: true,
            reuse,
            ..
        } => {
            let results = xtask::zoo::run_amd_all(&models, reuse)?;
            let table = xtask::zoo::markdown_amd(&results);
            println!("{table}");
            let doc = xtask::setup::workspace_root().join("docs/zoo.md");
            xtask::doc_section::write(&doc, "zoo-amd", &table)?;
            println!("updated {}", doc.display());
            if results
                .iter()
                .any(|r| r.runs.iter().any(|x| x.status != "pass"))
            {
                anyhow::bail!("some zoo models failed on usb-emu (see the table)");
            }
            Ok(())
        }
        Cmd::Zoo {
            models,
            adreno: true,
            reuse,
            ..
        } => {
            let results = xtask::zoo::run_adreno_all(&models, reuse)?;
            let table = xtask::zoo::markdown_adreno(&results);
            println!("{table}");
            let doc = xtask::setup::workspace_root().join("docs/zoo.md");
            xtask::doc_section::write(&doc, "zoo-adreno", &table)?;
            println!("updated {}", doc.display());
            if results
                .iter()
                .any(|r| r.runs.iter().any(|x| x.status != "pass"))
            {
                anyhow::bail!("some zoo models failed on the KGSL model (see the table)");
            }
            Ok(())
        }
        Cmd::Zoo {
            models, cpu_only, ..
        } => {
            let results = xtask::zoo::run(&models, !cpu_only)?;
            let table = xtask::zoo::markdown(&results);
            println!("{table}");
            if models.is_empty() && !cpu_only {
                let doc = xtask::setup::workspace_root().join("docs/zoo.md");
                let text = std::fs::read_to_string(&doc).unwrap_or_default();
                let head = text
                    .split("<!-- zoo-table -->")
                    .next()
                    .unwrap_or_default()
                    .to_string();
                std::fs::write(&doc, format!("{head}<!-- zoo-table -->\n{table}"))?;
                println!("updated {}", doc.display());
            }
            if results.iter().any(|r| r.cpu != "pass") {
                anyhow::bail!("some zoo models failed on the CPU (see the table)");
            }
            Ok(())
        }
        Cmd::Hexagon { res } => {
            let py = xtask::setup::ensure_all()?;
            let figures = vec![
                xtask::hexagon::measure(&py, 64, false)?,
                xtask::hexagon::measure(&py, res, true)?,
            ];
            let table = xtask::hexagon::markdown(&figures);
            println!("{table}");
            println!("updated {}", xtask::hexagon::write_doc(&table)?.display());
            if figures.iter().any(|f| f.max_abs_vs_tinygrad_cpu != 0.0) {
                anyhow::bail!("a DSP result differs from tinygrad's CPU result");
            }
            Ok(())
        }
        Cmd::Capi {
            write_header: true, ..
        } => {
            let p = xtask::capi_header::write(&xtask::setup::workspace_root())?;
            println!("wrote {}", p.display());
            Ok(())
        }
        Cmd::Capi {
            target,
            write_header: false,
        } => {
            let triple = target.as_deref().map(xtask::capi::triple_for);
            let b = xtask::capi::build(triple, true)?;
            println!("wrote {}/modelrt.h", b.include.display());
            println!("wrote {}", b.cdylib.display());
            println!("wrote {}", b.staticlib.display());
            Ok(())
        }
        Cmd::Wheel { debug } => {
            let w = xtask::wheel::build(!debug, None)?;
            println!("wrote {}", w.display());
            Ok(())
        }
        Cmd::Dist { target } => {
            xtask::setup::ensure_apt()?;
            xtask::setup::ensure_rust()?;
            let r = xtask::dist::dist(&target)?;
            for b in &r.binaries {
                println!("built {}", b.display());
            }
            println!("wrote {} and {}", r.dir.display(), r.tarball.display());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn dim_values_are_names_with_whole_numbers() {
        assert_eq!(parse_dim("N=8"), Ok(("N".to_string(), 8)));
        assert_eq!(parse_dim("batch_size=1"), Ok(("batch_size".to_string(), 1)));
        for bad in ["N", "=8", "N=0", "N=-1", "N=x", "N="] {
            assert!(parse_dim(bad).is_err(), "{bad}");
        }
    }

    /// `--seed` shows its default in `--help`, and `--dim` is repeatable.
    #[test]
    fn compile_help_and_repeated_dims() {
        use clap::CommandFactory;
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("compile")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(help.contains("[default: 0]"), "{help}");
        let cli = Cli::try_parse_from([
            "xtask", "compile", "m.onnx", "-o", "m.mrt", "--dim", "N=8", "--dim", "T=2",
        ])
        .unwrap();
        let Cmd::Compile { dims, seed, .. } = cli.cmd else {
            panic!("not compile")
        };
        assert_eq!(dims, [("N".to_string(), 8), ("T".to_string(), 2)]);
        assert_eq!(seed, 0);
    }
}
