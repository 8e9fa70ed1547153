//! The Hexagon device's error: a FastRPC/ION call that failed, or a refusal before any call (wrong target, no
//! model library, arena limits, a missing transport). `Display` is one line for users.
use crate::fastrpc::FastRpcError;

/// Why the DSP device refused or failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DspError {
    /// A FastRPC or ION call failed (it names the call).
    #[error(transparent)]
    FastRpc(#[from] FastRpcError),
    /// Refused before reaching the device.
    #[error("{0}")]
    Other(String),
}
