//! `compile`'s command line, shared by `cargo xtask compile` and the wheel's `modelrt compile`: its arguments
//! (the compile options are [`ExportArgs`]) and what it runs and prints.
use std::path::PathBuf;

use anyhow::Result;

use crate::compile::{compile_with, Toolchain};
use crate::exporter::{ExportArgs, Source};

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
    /// Output bundle (.mrt), written only once the compile and its checks succeeded.
    #[arg(short, long, display_order = 3)]
    pub output: PathBuf,
    /// Sign the bundle with this Ed25519 private key (from `cargo xtask keygen`; read before compiling).
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
    /// The compile options (ExportArgs is their one declaration).
    #[command(flatten)]
    pub export: ExportArgs,
}

impl Args {
    /// Compile with `tc`'s exporter, print what was written (as `cargo xtask compile` does) and return the bundle.
    pub fn run(self, tc: &Toolchain) -> Result<PathBuf> {
        let Self {
            model,
            tinygrad,
            output,
            export: mut args,
            sign,
        } = self;
        let key = sign
            .as_deref()
            .map(crate::signing::read_signing_key)
            .transpose()?;
        args.source = match tinygrad {
            Some(spec) => Source::Tinygrad(spec),
            None => Source::Onnx(model.unwrap_or_default()),
        };
        // --image implies --float16 (IMAGE=1 FLOAT16=1)
        args.float16 = args.float16 || args.image;
        if let Some(roles) = crate::exporter::roles_of(&args.targets)? {
            let r = crate::compile_multi::compile_multi(
                &tc.python,
                args,
                &roles,
                &output,
                key.as_ref(),
            )?;
            if let Some(k) = &key {
                let fp = modelrt_platform::trust::fingerprint(&k.public());
                println!("signed {} (signer {fp})", r.out.display());
            }
            return Ok(r.out);
        }
        args.target = args.targets.first().map(|t| t.target);
        // Signed in memory before it is written: the output is never an unsigned bundle.
        let r = compile_with(tc, args, &output, key.as_ref())?;
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
        if let Some(fp) = &r.signer {
            println!("signed {} (signer {fp})", r.out.display());
        }
        Ok(r.out)
    }
}
