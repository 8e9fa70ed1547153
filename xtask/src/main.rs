//! `cargo xtask`: host tooling for modelrt.
fn main() {}
