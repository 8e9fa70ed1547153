//! The Hexagon cDSP runtime over FastRPC (std): the wire layer ([`abi`] ioctl numbers and structs, [`layout`] the
//! documented argument layouts both the host and the FastRPC model read, [`scalars`] the scalars word, [`pack`]
//! launch argument packing, [`listener`] the reverse-RPC messages), the device surface
//! [`FastRpcIo`] (the real `/dev/adsprpc-smd` + `/dev/ion` in [`real`], a model in `crate::emu::device`), and on
//! top of it [`session`] (bring-up in the documented order, the listener thread) and [`engine`] (load each kernel
//! library once, replay the schedule). Facts: docs/hw/fastrpc.md. Nothing here has run on a real DSP.
pub mod abi;
pub mod engine;
#[allow(unsafe_code)] // declares the `unsafe trait FastRpcIo` (its `# Safety` contract)
mod io;
pub mod layout;
pub mod listener;
pub mod pack;
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // ioctls on /dev/adsprpc-smd and /dev/ion, mmap of the shared buffers
pub mod real;
pub mod scalars;
pub mod selftest;
pub mod session;
pub mod table;

pub use io::{check_args, Arg, FastRpcIo, IonBuf};

/// A FastRPC or ION call failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum FastRpcError {
    #[error("cannot open {path}: {reason}")]
    Open { path: String, reason: String },
    #[error("FastRPC {call} failed: errno {errno} ({reason})")]
    Errno {
        call: String,
        errno: i32,
        reason: String,
    },
    #[error("FastRPC {call} did not complete within {timeout_ms} ms")]
    Timeout { call: String, timeout_ms: u64 },
    /// The argument breaks a rule of the protocol (refused before reaching the device).
    #[error("FastRPC {call}: {reason}")]
    Invalid { call: String, reason: String },
    /// The DSP-side answer is malformed or reports failure.
    #[error("FastRPC {call}: DSP reported {reason}")]
    Remote { call: String, reason: String },
}

impl FastRpcError {
    pub(crate) fn invalid(call: impl Into<String>, reason: impl Into<String>) -> Self {
        FastRpcError::Invalid {
            call: call.into(),
            reason: reason.into(),
        }
    }

    /// The same error with `what` (e.g. the kernel's name) added to the call.
    pub fn context(self, what: &str) -> Self {
        let add = |c: String| format!("{c} ({what})");
        match self {
            FastRpcError::Errno {
                call,
                errno,
                reason,
            } => FastRpcError::Errno {
                call: add(call),
                errno,
                reason,
            },
            FastRpcError::Timeout { call, timeout_ms } => FastRpcError::Timeout {
                call: add(call),
                timeout_ms,
            },
            FastRpcError::Invalid { call, reason } => FastRpcError::Invalid {
                call: add(call),
                reason,
            },
            FastRpcError::Remote { call, reason } => FastRpcError::Remote {
                call: add(call),
                reason,
            },
            e @ FastRpcError::Open { .. } => e,
        }
    }
}
