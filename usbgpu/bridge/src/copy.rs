//! Bulk copies through the bridge SRAM (the 0xF2 path of docs/hw/asm24-bridge.md §5 and the copy
//! pipelines of docs/hw/asm24-bridge.md §14), without GPU-side logic: the GPU's part (draining a window
//! into VRAM, filling SRAM and writing the completion-queue dword) is a caller-supplied step.
//!
//! - Upload (host → SRAM): chunks of up to 256 KiB alternate between the two copy-in windows
//!   (slot 0 = PCIe 0x200000, slot 16 = PCIe 0x240000). Each chunk is one 0xF2 write arm + one bulk
//!   OUT, both submitted asynchronously so the next arm overlaps the previous bulk (docs/hw/asm24-bridge.md §5.1).
//!   `before_chunk(window, index)` runs before a window is rewritten — where the AMD driver waits for
//!   the GPU to have drained that window's previous occupant (fence ≥ seq−1).
//! - Download (SRAM → host): chunks of up to 512 KiB; 0xF2 read arm, then `release(len)` (on a GPU:
//!   SDMA copy into 0x200000 + the write of PCIe 0x82200C), then one bulk IN (docs/hw/asm24-bridge.md §5.2).
//!   `download_while` asks a `go_on(offset)` hook before arming each chunk, so an interruptible copy stops
//!   between chunks with nothing armed (an upload stops the same way when `before_chunk` returns an error).
//!
//! Transfer cost: per 256 KiB uploaded, 1 control + 1 bulk; per 512 KiB downloaded, 1 control + 1 bulk.
use crate::proto::{sector_padded, SLOT, SRAM_SIZE};
use crate::{Bridge, BridgeError};
use modelrt_hal::usb::UsbTransport;

/// Size of one copy-in window (256 KiB).
pub const WINDOW: usize = 0x40000;
/// SRAM slots of the two copy-in windows.
pub const WINDOW_SLOTS: [usize; 2] = [0, WINDOW / SLOT];
/// Largest download chunk (the whole SRAM).
pub const DOWNLOAD_CHUNK: usize = SRAM_SIZE;

/// A staging buffer (`what`) smaller than `need` bytes is refused.
fn check_staging(what: &'static str, staging: &[u8], need: usize) -> Result<(), BridgeError> {
    if staging.len() < need {
        return Err(BridgeError::OutOfRange {
            what,
            offset: 0,
            len: staging.len() as u64,
        });
    }
    Ok(())
}

/// Upload `data` into the alternating SRAM windows. `staging` (≥ 256 KiB) holds the padded wire
/// image of the last chunk. Returns the number of chunks sent.
pub fn upload<T: UsbTransport, E: From<BridgeError>>(
    bridge: &mut Bridge<T>,
    data: &[u8],
    staging: &mut [u8],
    mut before_chunk: impl FnMut(&mut Bridge<T>, usize, usize) -> Result<(), E>,
) -> Result<usize, E> {
    check_staging("upload staging buffer", staging, WINDOW)?;
    let mut chunks = 0;
    for (i, chunk) in data.chunks(WINDOW).enumerate() {
        let window = i & 1;
        before_chunk(bridge, window, i)?;
        let wire_len = sector_padded(chunk.len());
        let wire: &[u8] = if wire_len == chunk.len() {
            chunk
        } else {
            staging[..chunk.len()].copy_from_slice(chunk);
            staging[chunk.len()..wire_len].fill(0);
            &staging[..wire_len]
        };
        bridge.sram_write_async(WINDOW_SLOTS[window], wire)?;
        chunks += 1;
    }
    bridge.wait_pipelined()?;
    Ok(chunks)
}

/// Download `out.len()` bytes through SRAM. `staging` (≥ 512 KiB) receives each padded bulk IN;
/// `release(bridge, offset, len)` performs the GPU side for the chunk at `offset` of `len` bytes.
/// Returns the number of chunks received.
pub fn download<T: UsbTransport, E: From<BridgeError>>(
    bridge: &mut Bridge<T>,
    out: &mut [u8],
    staging: &mut [u8],
    release: impl FnMut(&mut Bridge<T>, usize, usize) -> Result<(), E>,
) -> Result<usize, E> {
    download_while(bridge, out, staging, |_| true, release)
}

/// [`download`] that asks `go_on(offset)` before arming each chunk and stops there, between two chunks (nothing
/// armed, nothing pending), when it says no: the progress and stop hook of interruptible copies. Returns the
/// number of chunks received; the first `chunks * DOWNLOAD_CHUNK` bytes of `out` (at most its length) are valid.
pub fn download_while<T: UsbTransport, E: From<BridgeError>>(
    bridge: &mut Bridge<T>,
    out: &mut [u8],
    staging: &mut [u8],
    mut go_on: impl FnMut(usize) -> bool,
    mut release: impl FnMut(&mut Bridge<T>, usize, usize) -> Result<(), E>,
) -> Result<usize, E> {
    check_staging("download staging buffer", staging, DOWNLOAD_CHUNK)?;
    let mut chunks = 0;
    for (i, chunk) in out.chunks_mut(DOWNLOAD_CHUNK).enumerate() {
        if !go_on(i * DOWNLOAD_CHUNK) {
            break;
        }
        bridge.sram_read_arm(chunk.len())?;
        release(bridge, i * DOWNLOAD_CHUNK, chunk.len())?;
        let wire = &mut staging[..sector_padded(chunk.len())];
        bridge.sram_read(wire)?;
        chunk.copy_from_slice(&wire[..chunk.len()]);
        chunks += 1;
    }
    Ok(chunks)
}
