//! `cargo xtask compile`: its arguments and what it runs.
use std::path::PathBuf;

use anyhow::Result;
use xtask::compile::compile_with;
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
    pub fn run(self) -> Result<()> {
        let Self {
            model,
            tinygrad,
            output,
            export: mut args,
            sign,
        } = self;
        let key = sign
            .as_deref()
            .map(xtask::signing::read_signing_key)
            .transpose()?;
        let python = xtask::venv::ensure_venv(&xtask::setup::workspace_root())?;
        args.source = match tinygrad {
            Some(spec) => Source::Tinygrad(spec),
            None => Source::Onnx(model.unwrap_or_default()),
        };
        // --image implies --float16 (IMAGE=1 FLOAT16=1)
        args.float16 = args.float16 || args.image;
        // Signed in memory before it is written: the output is never an unsigned bundle.
        let r = compile_with(&python, args, &output, key.as_ref())?;
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
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

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
        let crate::Cmd::Compile(args) = cli.cmd else {
            panic!("not compile")
        };
        let export = args.export;
        assert_eq!(export.dims, [("N".to_string(), 8), ("T".to_string(), 2)]);
        assert_eq!(export.seed, Some(0));
        assert!(export.emu_check);
    }
}
