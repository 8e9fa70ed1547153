//! The FastRPC scalars word ("sc") of an invoke: attribute (bits 29–31), method (24–28), input buffers (16–23),
//! output buffers (8–15), input handles (4–7), output handles (0–3). The remote-arg array is laid out in that
//! order: input buffers, output buffers, input handles, output handles (docs/hw/fastrpc.md §3).

/// A decoded scalars word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scalars {
    pub attr: u8,
    pub method: u8,
    pub inbufs: u8,
    pub outbufs: u8,
    pub inhandles: u8,
    pub outhandles: u8,
}

impl Scalars {
    /// `method` with `inbufs` input and `outbufs` output buffers, no handles.
    pub const fn new(method: u8, inbufs: u8, outbufs: u8) -> Self {
        Scalars {
            attr: 0,
            method,
            inbufs,
            outbufs,
            inhandles: 0,
            outhandles: 0,
        }
    }

    /// Split a word into its fields (every u32 decodes).
    pub const fn decode(sc: u32) -> Self {
        Scalars {
            attr: (sc >> 29) as u8,
            method: ((sc >> 24) & 0x1F) as u8,
            inbufs: (sc >> 16) as u8,
            outbufs: (sc >> 8) as u8,
            inhandles: ((sc >> 4) & 0xF) as u8,
            outhandles: (sc & 0xF) as u8,
        }
    }

    /// The word, or `None` when a field does not fit its bits (attr ≤ 7, method ≤ 31, handles ≤ 15).
    pub const fn encode(self) -> Option<u32> {
        if self.attr > 7 || self.method > 31 || self.inhandles > 15 || self.outhandles > 15 {
            return None;
        }
        Some(
            ((self.attr as u32) << 29)
                | ((self.method as u32) << 24)
                | ((self.inbufs as u32) << 16)
                | ((self.outbufs as u32) << 8)
                | ((self.inhandles as u32) << 4)
                | self.outhandles as u32,
        )
    }

    /// Number of remote-arg entries the word describes.
    pub const fn total(self) -> usize {
        self.inbufs as usize
            + self.outbufs as usize
            + self.inhandles as usize
            + self.outhandles as usize
    }
}

/// Remote-control handle (open/close a library).
pub const HANDLE_REMOTECTL: u32 = 0;
/// Reverse-RPC listener handle.
pub const HANDLE_LISTENER: u32 = 3;
/// The handle whose method 2 tears the current process down before a reconnect.
pub const HANDLE_PROCESS: u32 = 4;

/// Remote control: open a library (2 in, 2 out).
pub const SC_OPEN_LIB: u32 = 0x0002_0200;
/// Remote control: close a library (method 1, 1 in, 2 out).
pub const SC_CLOSE_LIB: u32 = 0x0101_0200;
/// Listener init (method 3, no args).
pub const SC_LISTENER_INIT: u32 = 0x0300_0000;
/// Listener next (method 4, 2 in, 2 out).
pub const SC_LISTENER_NEXT: u32 = 0x0402_0200;
/// Process teardown (handle 4, method 2, no args).
pub const SC_PROCESS_EXIT: u32 = 0x0200_0000;
/// A kernel launch without its handle count: method 2, 2 in, 1 out; the low nibble carries nbufs.
pub const SC_LAUNCH_BASE: u32 = 0x0202_0100;
/// Most dma-buf handles one launch can carry (4 bits).
pub const MAX_LAUNCH_BUFFERS: usize = super::layout::MAX_HANDLES;

/// The scalars word of a launch with `nbufs` buffers, or `None` above [`MAX_LAUNCH_BUFFERS`].
pub const fn launch_sc(nbufs: usize) -> Option<u32> {
    if nbufs > MAX_LAUNCH_BUFFERS {
        None
    } else {
        Some(SC_LAUNCH_BASE | nbufs as u32)
    }
}
