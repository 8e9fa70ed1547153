//! The Adreno devices as the platform registry lists them (feature `platform`): [`QCOM`] (KGSL on a
//! comma device; never run on a GPU here) and [`QCOM_EMU`] (the KGSL model, kernels run by the IR3
//! interpreter), plus the zero-copy camera-frame binding ([`adreno`]).
pub mod adreno;
mod registration;

pub use adreno::{bind_input, open, unbind_input, DEFAULT_NODE};
pub use registration::{QCOM, QCOM_EMU};
