//! One module per `cargo xtask` subcommand: its clap arguments (with the help text `--help` shows) and `run`, which
//! calls into the `xtask` library. `main` only parses and dispatches.
pub mod bench;
pub mod capi;
pub mod ci;
pub mod compile;
pub mod conformance;
pub mod convert;
pub mod demo;
pub mod dist;
pub mod firmware;
pub mod footprint;
pub mod hexagon;
pub mod keygen;
pub mod manifest_schema;
pub mod pickle;
pub mod pickle_table;
pub mod pipeline;
pub mod setup;
pub mod sign;
pub mod threads;
pub mod wheel;
pub mod zoo;
