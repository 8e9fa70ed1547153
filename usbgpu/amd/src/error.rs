//! [`AmdError`]: every failure of the AM driver as one line naming the boot step and, for timeouts,
//! the register (or memory word) that never reached its value.
use modelrt_asm24::BridgeError;

/// A driver failure.
#[derive(Debug, thiserror::Error)]
pub enum AmdError {
    /// A bounded poll ran out.
    #[error("{step}: timed out after {ms} ms waiting for {what} (last value {last:#x})")]
    Timeout {
        /// Boot step or operation.
        step: &'static str,
        /// Register name or memory word polled.
        what: &'static str,
        /// The limit.
        ms: u64,
        /// The last value read.
        last: u64,
    },
    /// The device answered, but with a failure status.
    #[error("{step}: {what}")]
    Device {
        /// Boot step or operation.
        step: &'static str,
        /// What the device reported.
        what: String,
    },
    /// The bridge or the USB link failed.
    #[error("{step}: {source}")]
    Bridge {
        /// Boot step or operation.
        step: &'static str,
        /// The bridge error.
        source: BridgeError,
    },
    /// A register's block is not in the IP table.
    #[error("{step}: register {reg} belongs to {ip}, which IP discovery did not report")]
    NoBase {
        /// Boot step.
        step: &'static str,
        /// Register name.
        reg: &'static str,
        /// Block name.
        ip: &'static str,
    },
    /// Firmware file missing or malformed.
    #[error("{0}")]
    Firmware(String),
    /// Out of device memory or a bad request from the caller.
    #[error("{step}: {what}")]
    Invalid {
        /// Operation.
        step: &'static str,
        /// What was wrong.
        what: String,
    },
}

/// Wrap a bridge error with the step it happened in.
pub fn bridge(step: &'static str) -> impl FnOnce(BridgeError) -> AmdError {
    move |source| AmdError::Bridge { step, source }
}
