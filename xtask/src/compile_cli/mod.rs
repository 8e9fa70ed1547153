//! The command lines of `compile` and `convert` as library code: `cargo xtask compile/convert` runs them with this
//! repository's exporter and venv, the `modelrt` wheel's `modelrt compile/convert` with its own copy of the exporter
//! and the user's Python, so both have the same options, checks and output.
pub mod compile;
pub mod convert;
