//! Errors of the ASM24 bridge driver (no_std; one-line `Display`, wording from docs/hw/asm24-bridge.md §9).
use super::proto::{CplStatus, EncodeError};
use core::fmt;
use modelrt_hal::usb::UsbError;

/// Everything that can go wrong talking to the bridge or through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BridgeError {
    /// A USB transfer failed; `op` names the protocol step.
    Usb { op: &'static str, source: UsbError },
    /// A control transfer returned fewer bytes than requested (the host aborts, docs/hw/asm24-bridge.md §2).
    ShortControl {
        op: &'static str,
        expected: usize,
        actual: usize,
    },
    /// "bulk OUT short write" / short bulk IN.
    ShortBulk {
        op: &'static str,
        expected: usize,
        actual: usize,
    },
    /// LTSSM not 0x78 after power-on.
    LinkDown { ltssm: u8 },
    /// ret_status ≠ 0 on every attempt (docs/hw/asm24-bridge.md §3.6).
    TlpEngine { ret_status: u8, address: u64 },
    /// The completion carried an error status (never retried).
    Completion { status: CplStatus, address: u64 },
    /// A request that cannot be encoded.
    Encode(EncodeError),
    /// An access outside a BAR or window, or a buffer of the wrong size.
    OutOfRange {
        what: &'static str,
        offset: u64,
        len: u64,
    },
    /// The SRAM bump allocator is exhausted.
    OutOfMemory,
    /// A BAR the device does not have (or that bring-up did not assign).
    NoSuchBar(u8),
}

impl From<EncodeError> for BridgeError {
    fn from(e: EncodeError) -> Self {
        BridgeError::Encode(e)
    }
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BridgeError::Usb { op, source } => write!(f, "{op}: {source}"),
            BridgeError::ShortControl {
                op,
                expected,
                actual,
            } => {
                write!(f, "{op}: short control transfer: {actual}/{expected} bytes")
            }
            BridgeError::ShortBulk {
                op,
                expected,
                actual,
            } => {
                write!(f, "{op}: short transfer: {actual}/{expected} bytes")
            }
            BridgeError::LinkDown { ltssm } => {
                write!(
                    f,
                    "PCIe link not up (LTSSM={ltssm:#04x}), custom firmware not ready"
                )
            }
            BridgeError::TlpEngine {
                ret_status,
                address,
            } => {
                write!(
                    f,
                    "TLP error after retries: ret_status={ret_status}, address={address:#x}"
                )
            }
            BridgeError::Completion { status, address } => write!(f, "{status}: {address:#x}"),
            BridgeError::Encode(e) => write!(f, "{e}"),
            BridgeError::OutOfRange { what, offset, len } => {
                write!(
                    f,
                    "{what}: access of {len} bytes at {offset:#x} is out of range"
                )
            }
            BridgeError::OutOfMemory => write!(f, "Out of memory (bridge SRAM, 512 KiB)"),
            BridgeError::NoSuchBar(i) => write!(f, "BAR{i} is not present or not assigned"),
        }
    }
}

impl core::error::Error for BridgeError {}
