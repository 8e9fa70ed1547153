//! Test support for real captures: a gzip reader and the `.rd` capture format.
pub mod inflate;
pub mod rd;
