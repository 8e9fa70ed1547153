//! Fault injection and transfer counters of the bridge emulator (spec asm24-bridge.md §12 "fault
//! injection hooks"). Faults are armed through [`super::EmuHandle::faults`] and consumed as they fire.
use crate::asm24::proto::CplStatus;

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

/// LTSSM value the emulator shows when training fails or power is off (emulator choice: the spec
/// only says "≠ 0x78").
pub const LTSSM_DETECT: u8 = 0x00;

/// Transfer counters, for protocol-efficiency assertions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Control OUT transfers (including pipelined submissions).
    pub control_out: u64,
    /// Control IN transfers.
    pub control_in: u64,
    /// Bulk OUT transfers.
    pub bulk_out: u64,
    /// Bulk IN transfers.
    pub bulk_in: u64,
    /// Data-stage bytes of control OUT transfers.
    pub control_bytes_out: u64,
    /// Data-stage bytes of control IN transfers.
    pub control_bytes_in: u64,
    /// Bytes moved by bulk OUT.
    pub bulk_bytes_out: u64,
    /// Bytes moved by bulk IN.
    pub bulk_bytes_in: u64,
    /// Mode-0 TLPs executed.
    pub tlps: u64,
}

impl Counters {
    /// All USB transfers (round trips).
    pub fn transfers(&self) -> u64 {
        self.control_out + self.control_in + self.bulk_out + self.bulk_in
    }

    /// All control transfers.
    pub fn control(&self) -> u64 {
        self.control_out + self.control_in
    }

    /// Difference `self − earlier`.
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            control_out: self.control_out - earlier.control_out,
            control_in: self.control_in - earlier.control_in,
            bulk_out: self.bulk_out - earlier.bulk_out,
            bulk_in: self.bulk_in - earlier.bulk_in,
            control_bytes_out: self.control_bytes_out - earlier.control_bytes_out,
            control_bytes_in: self.control_bytes_in - earlier.control_bytes_in,
            bulk_bytes_out: self.bulk_bytes_out - earlier.bulk_bytes_out,
            bulk_bytes_in: self.bulk_bytes_in - earlier.bulk_bytes_in,
            tlps: self.tlps - earlier.tlps,
        }
    }
}
