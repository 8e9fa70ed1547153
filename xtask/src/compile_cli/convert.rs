//! `convert`'s command line, shared by `cargo xtask convert` and the wheel's `modelrt convert`: its arguments and
//! what it runs and prints.
use std::path::PathBuf;

use anyhow::Result;

use crate::compile::{compile_with, Toolchain};
use crate::exporter::ExportArgs;

/// Convert a tinygrad compile3 pickle (plain or PICKLE_OOB=1) into a bundle without recompiling.
///
/// tinygrad 0.14 pickles with CPU, QCOM:IR3 (Mesa) or AMD kernels; and openpilot's DEV=QCOM pickles (tinygrad 0.10
/// to v0.12.0-1606 layouts, kernels from Qualcomm's own OpenCL compiler) → adreno-a630 with the Qualcomm binaries
/// kept as they are. Every pickle is read without executing any code from it: only allow-listed tinygrad class
/// names, read as plain records (tinygrad never unpickles it); anything else is refused with one line. The log names
/// the layout detected (docs/openpilot-pickles.md).
///
/// With --metadata, openpilot's `*_metadata.pkl` next to the model names the parts of its output: the slices are
/// checked against the converted program and kept in the bundle (format 2.4; `modelrt info` lists them).
#[derive(clap::Args)]
pub struct Args {
    /// The pickle.
    pub pickle: PathBuf,
    /// Output bundle (.mrt).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Initial contents of input NAME that the pickled program advances in place (a queue passed in on every call,
    /// as openpilot's compile_modeld.py does); the bundle keeps it as state. VALUE is `zeros` or a .npy file.
    #[arg(long = "state-init", value_name = "NAME=zeros|FILE.npy", value_parser = parse_state_init)]
    pub state_init: Vec<(String, String)>,
    /// openpilot's metadata pickle for this model (`*_metadata.pkl`, plain or gzipped), read with the restricted
    /// reader. Its `input_shapes` must be inputs of the program with those shapes and its `output_shapes` outputs of
    /// those shapes (an output of another name is renamed to openpilot's when exactly one output has the shape);
    /// each `output_slices` entry (Python `slice.indices` over the output's last dimension, step 1) is kept in the
    /// bundle as NAME: OUTPUT[..., START:STOP] with the `model_checkpoint`. Any mismatch is refused, nothing written.
    #[arg(long, value_name = "FILE")]
    pub metadata: Option<PathBuf>,
    /// Sign the bundle with this Ed25519 private key (from `cargo xtask keygen`; read before converting).
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
}

impl Args {
    /// Convert with `tc`'s exporter, print what was written (as `cargo xtask convert` does) and return the bundle.
    pub fn run(self, tc: &Toolchain) -> Result<PathBuf> {
        let Self {
            pickle,
            output,
            state_init,
            metadata,
            sign,
        } = self;
        let key = sign
            .as_deref()
            .map(crate::signing::read_signing_key)
            .transpose()?;
        let mut args = ExportArgs::pickle(pickle, PathBuf::new());
        args.state_init = state_init;
        args.metadata = metadata;
        // Signed in memory before it is written: the output is never an unsigned bundle.
        let r = compile_with(tc, args, &output, key.as_ref())?;
        println!(
            "wrote {} ({} bytes, {} kernels) in {:.1} s",
            r.out.display(),
            r.bytes,
            r.kernels,
            r.seconds
        );
        if let Some(fp) = &r.signer {
            println!("signed {} (signer {fp})", r.out.display());
        }
        Ok(r.out)
    }
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
