//! Exporter manifest (format 1): the serde mirror of `manifest.json` written by `xtask/exporter/export.py`
//! (contract: docs/hw/tinygrad-export.md §10). [`schema`] declares its records, [`loader`] reads a manifest
//! directory with every referenced blob and checks its consistency, and [`meta_schema`] derives the kernel-metadata
//! records' schema that the exporter checks what it writes against.
pub mod loader;
pub mod meta_schema;
pub mod schema;

pub use loader::ManifestError;
pub use schema::*;
