//! Fault injection of the bridge emulator (docs/hw/asm24-bridge.md §12 "fault
//! injection hooks"). Faults are armed through [`super::EmuHandle::faults`] and consumed as they fire.
use crate::proto::CplStatus;

/// Faults to inject. Counts are "next N occurrences"; `Option`s are one-shot unless noted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// The next N mode-0 completions carry `ret_status = engine_error_code` (host retries ≤ 10×).
    pub engine_errors: u32,
    /// ret_status value used by `engine_errors` (0 is treated as 1).
    pub engine_error_code: u8,
    /// The next `completion_status_count` mode-0 TLPs complete with this status (UR/CA/CRS…).
    pub completion_status: Option<CplStatus>,
    pub completion_status_count: u32,
    /// 0xF3 power-on does not train the link (LTSSM stays at [`LTSSM_DETECT`]). Sticky.
    pub link_fails_training: bool,
    /// The next control request with this bRequest stalls.
    pub stall_request: Option<u8>,
    /// The next control request with this bRequest times out.
    pub timeout_request: Option<u8>,
    /// The next N bulk OUT transfers time out (data not delivered).
    pub bulk_out_timeouts: u32,
    /// The next N bulk IN transfers time out.
    pub bulk_in_timeouts: u32,
    /// The next bulk IN delivers at most this many bytes.
    pub short_bulk_in: Option<usize>,
    /// The next bulk OUT accepts at most this many bytes.
    pub short_bulk_out: Option<usize>,
    /// Disconnect after this many more bulk bytes have moved (mid-transfer: the transfer that
    /// crosses the limit is cut and fails with `Disconnected`, so does everything after).
    pub disconnect_after_bulk_bytes: Option<u64>,
    /// GPU writes to the CQ window do not release an armed SRAM read (delayed/never release). Sticky.
    pub hold_read_release: bool,
}

/// LTSSM value the emulator shows when training fails or power is off (emulator choice: docs/hw/asm24-bridge.md §6
/// only says "≠ 0x78").
pub const LTSSM_DETECT: u8 = 0x00;
