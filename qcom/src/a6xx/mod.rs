//! Adreno a6xx compute: register map, kernel layout derived from IR3 metadata or a Qualcomm CL container
//! ([`cl_container`]), kernel-argument region and the PM4 command-stream builder (pure functions over words/bytes;
//! no_std except [`cl_args`], the CL args writer, which keeps the container's records in `Vec`s).
pub mod args;
#[cfg(feature = "std")]
pub mod cl_args;
pub mod cl_container;
pub mod layout;
pub mod regs;
pub mod stream;
