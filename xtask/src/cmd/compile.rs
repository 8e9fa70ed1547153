//! `cargo xtask compile`: its arguments and what it runs.
use std::path::PathBuf;

use anyhow::Result;
use modelrt_hal::target::{TargetName, UnknownTarget};
use xtask::compile::compile;
use xtask::exporter::{ExportArgs, Source};

/// Compile an ONNX model (or, with --tinygrad, a tinygrad program) into a bundle with tinygrad 0.14 as the
/// kernel compiler.
#[derive(clap::Args)]
pub struct Args {
    /// The ONNX model (omit with --tinygrad).
    #[arg(required_unless_present = "tinygrad", conflicts_with = "tinygrad")]
    pub model: Option<PathBuf>,
    /// Capture a tinygrad program instead: SCRIPT.py:FN, where FN() returns the function to capture, its example
    /// inputs and the initial contents of the buffers it advances with assign (which become bundle state); see
    /// xtask/models/modeld_pipeline.py.
    #[arg(long, value_name = "SCRIPT.py:FN")]
    pub tinygrad: Option<String>,
    /// The device the bundle is for: cpu (= this host's arch), cpu-x86_64, cpu-aarch64, adreno-a630 (comma
    /// three GPU; emulated: qcom-emu), amd-gfx1100 (RX 7900 over USB; emulated: usb-emu), amd-gfx1201,
    /// hexagon-v65 (comma three DSP; emulated: dsp-emu).
    #[arg(long, default_value = "cpu", value_parser = parse_target)]
    pub target: TargetName,
    /// Output bundle (.mrt), written only once the compile and its checks succeeded.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Embed seeded random inputs and the reference's outputs for them (onnxruntime's; tinygrad's own run for
    /// --tinygrad) so `modelrt verify` can check the bundle on any device.
    #[arg(long)]
    pub reference: bool,
    /// Seed of the random inputs the compile captures with, checks with and (with --reference) embeds.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
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
    #[arg(long)]
    pub no_emu_check: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self {
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
        } = self;
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
}

/// `--target`: a target name, or `cpu` for this host's CPU.
fn parse_target(s: &str) -> Result<TargetName, String> {
    match s {
        "cpu" => Ok(TargetName::host_cpu()),
        s => s.parse().map_err(|e: UnknownTarget| format!("{e}, or cpu")),
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

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
        let mut cmd = crate::Cli::command();
        let help = cmd
            .find_subcommand_mut("compile")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(help.contains("[default: 0]"), "{help}");
        let cli = crate::Cli::try_parse_from([
            "xtask", "compile", "m.onnx", "-o", "m.mrt", "--dim", "N=8", "--dim", "T=2",
        ])
        .unwrap();
        let crate::Cmd::Compile(Args { dims, seed, .. }) = cli.cmd else {
            panic!("not compile")
        };
        assert_eq!(dims, [("N".to_string(), 8), ("T".to_string(), 2)]);
        assert_eq!(seed, 0);
    }
}
