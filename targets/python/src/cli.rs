//! The wheel's `modelrt` command (`modelrt` on PATH, `python -m modelrt`) and `modelrt.compile`: the Rust
//! binary's command line (`modelrt_targets::cli::app`) plus `compile` and `convert`, whose arguments, checks and
//! output are `cargo xtask compile/convert`'s (`xtask::compile_cli`), run with the exporter the wheel ships
//! (`modelrt/_exporter`) in the Python that imported the extension. The Python side (`modelrt/_cli.py`) checks
//! that the `compile` extra is installed before it calls in here.
use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, FromArgMatches};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use xtask::compile::Toolchain;
use xtask::compile_cli::{compile, convert};

use crate::error::{guard, panic_message};

/// The whole command: the binary's subcommands, then `compile` and `convert`.
fn command() -> clap::Command {
    modelrt_targets::cli::app::command()
        .subcommand(compile::Args::augment_args(clap::Command::new("compile")))
        .subcommand(convert::Args::augment_args(clap::Command::new("convert")))
}

/// Parse and run `argv` (program name first); returns the exit status. Failures are one `error:` line.
fn main_in(argv: Vec<OsString>, tc: &Toolchain) -> i32 {
    let matches = match command().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let result = match matches.subcommand() {
        Some(("compile", sub)) => compile::Args::from_arg_matches(sub)
            .map_err(anyhow::Error::from)
            .and_then(|a| a.run(tc)),
        Some(("convert", sub)) => convert::Args::from_arg_matches(sub)
            .map_err(anyhow::Error::from)
            .and_then(|a| a.run(tc)),
        _ => return modelrt_targets::cli::app::run_matches(&matches),
    };
    match result {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}

/// Where the compile runs: `python` with the wheel's exporter `exporter_dir`, scratch files in `scratch`.
fn toolchain(python: PathBuf, exporter_dir: PathBuf, scratch: PathBuf) -> Toolchain {
    Toolchain {
        python,
        exporter_dir,
        scratch_root: scratch,
    }
}

/// `modelrt ARGS...` as the command line runs it; returns the exit status. The GIL is released meanwhile.
#[pyfunction]
pub fn _main(
    py: Python<'_>,
    argv: Vec<OsString>,
    python: PathBuf,
    exporter_dir: PathBuf,
    scratch: PathBuf,
) -> i32 {
    let tc = toolchain(python, exporter_dir, scratch);
    py.detach(move || {
        std::panic::catch_unwind(|| main_in(argv, &tc)).unwrap_or_else(|p| {
            eprintln!(
                "error: internal error (a bug in modelrt, please report it): {}",
                panic_message(p.as_ref())
            );
            101
        })
    })
}

/// `compile ARGS...` or `convert ARGS...` for `modelrt.compile` / `modelrt.convert`: returns the bundle's path; a bad
/// option raises `ValueError`, a refused or failed compile `modelrt.Error`. The GIL is released meanwhile.
#[pyfunction]
pub fn _compile(
    py: Python<'_>,
    args: Vec<OsString>,
    python: PathBuf,
    exporter_dir: PathBuf,
    scratch: PathBuf,
) -> PyResult<PathBuf> {
    let cmd = clap::Command::new("modelrt")
        .subcommand_required(true)
        .subcommand(compile::Args::augment_args(clap::Command::new("compile")))
        .subcommand(convert::Args::augment_args(clap::Command::new("convert")));
    let bad = |e: clap::Error| PyValueError::new_err(e.to_string().trim().to_string());
    let matches = cmd
        .try_get_matches_from(std::iter::once(OsString::from("modelrt")).chain(args))
        .map_err(bad)?;
    let tc = toolchain(python, exporter_dir, scratch);
    match matches.subcommand() {
        Some(("convert", sub)) => {
            let a = convert::Args::from_arg_matches(sub).map_err(bad)?;
            py.detach(move || guard("convert", || a.run(&tc)))
        }
        Some((_, sub)) => {
            let a = compile::Args::from_arg_matches(sub).map_err(bad)?;
            py.detach(move || guard("compile", || a.run(&tc)))
        }
        None => Err(PyValueError::new_err("compile or convert expected")),
    }
}
