//! [`AdrenoError`]: every way the Adreno backend fails, each a one-line message.
use crate::kgsl::KgslError;

use super::queue::MAX_TIMESTAMPS;

/// Backend error; every message is one line.
#[derive(Debug, thiserror::Error)]
pub enum AdrenoError {
    #[error(transparent)]
    Kgsl(#[from] KgslError),
    #[error("unsupported GPU: chip_id={chip_id:#010x} (this backend emits a6xx streams; tinygrad also rejects >= 7.3)")]
    UnsupportedGpu { chip_id: u32 },
    #[error("bundle targets {0}, this device is an Adreno a6xx")]
    WrongTarget(String),
    #[error("bundle was compiled for Adreno {bundle}, this GPU is a{gpu}")]
    WrongChip { bundle: u32, gpu: u32 },
    #[error("kernel {name}: {reason}")]
    Kernel { name: String, reason: String },
    #[error("arena range {offset:#x}+{len:#x} is outside the {size:#x}-byte arena")]
    OutOfArena { offset: u64, len: u64, size: u64 },
    #[error("no arena allocated (alloc_arena must come first)")]
    NoArena,
    #[error("unknown kernel id {0}")]
    NoKernel(u32),
    #[error("queue records more than {MAX_TIMESTAMPS} timestamps")]
    TooManyTimestamps,
    #[error("GPU hang: dispatch {index} ({kernel}) did not complete within {timeout_ms} ms")]
    Hang {
        index: u32,
        kernel: String,
        timeout_ms: u32,
    },
    #[error("GPU did not retire the submission within {timeout_ms} ms (no dispatch pending; last op was a wait/signal)")]
    Stuck { timeout_ms: u32 },
    #[error("timeline is {got}, expected {want} after the submission")]
    Timeline { got: u32, want: u32 },
    #[error("queue belongs to another device")]
    ForeignQueue,
    #[error("external buffer {ptr:#x}+{len:#x} wraps around the address space")]
    BadExternal { ptr: u64, len: u64 },
}
