//! Typed parsers for the headers of amdgpu firmware blobs, one file per format (layouts in
//! docs/hw/amd-firmware.md): the common header, PSP bundles v2.x, SMC, RLC v2.x, RS64 GFX (PFP/ME/MEC),
//! SDMA v2/v3, IMU, MES. Every parser borrows the blob, checks every length and offset it hands out
//! against the blob's size, and refuses anything else with a [`FwError`] — never a panic.
#![forbid(unsafe_code)]

mod bytes;
pub mod common;
mod error;
pub mod gfx;
pub mod imu;
pub mod mes;
pub mod psp;
pub mod rlc;
pub mod sdma;
pub mod smc;

pub use bytes::Span;
pub use common::CommonHeader;
pub use error::{FwError, Named};
pub use gfx::Rs64Gfx;
pub use imu::Imu;
pub use mes::Mes;
pub use psp::{PspBundle, PspComponent, PspDescriptor};
pub use rlc::{Rlc, RlcImage};
pub use sdma::Sdma;
pub use smc::{PpTable, Smc};
