//! The `modelrt` command-line tool.
fn main() {}
