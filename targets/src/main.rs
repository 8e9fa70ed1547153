//! The `modelrt` command-line tool: run, inspect, verify and benchmark model bundles, and talk to
//! USB-attached GPUs and comma-device accelerators. The whole tool is the library's
//! [`modelrt_targets::cli::app`] (so the Python wheel's `modelrt` command is the same program).
#![forbid(unsafe_code)]

fn main() {
    std::process::exit(modelrt_targets::cli::app::main(std::env::args_os()));
}
