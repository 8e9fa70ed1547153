//! Adreno a6xx compute: register map, kernel layout derived from IR3 metadata, kernel-argument region and the
//! PM4 command-stream builder (all no_std, pure functions over words/bytes).
pub mod args;
pub mod cl_container;
pub mod layout;
pub mod regs;
pub mod stream;
