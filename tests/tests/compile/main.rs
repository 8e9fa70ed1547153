//! Compiling and converting for every target: bundle checks, the pre-write device-model check, disassembly, pickles.
//!
//! One test binary (`cargo test -p modelrt-tests --test compile`); each module was once a binary of its own
//! (tests/README.md lists the groups).
mod convert_metadata;
mod convert_pickle;
mod disasm_bundles;
mod e2e_targets;
mod emu_check;
mod signed_compile;
