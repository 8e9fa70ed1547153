//! Zero-copy inputs on the CPU backend: for one submit, a borrowed host buffer (a camera frame the
//! runtime did not allocate) stands in for an input's arena range, so kernels read the frame where it
//! lies instead of a copy of it.
//!
//! [`CpuDevice::submit_borrowed`] re-points every recorded launch argument inside the range at the
//! borrowed bytes, makes recorded copies out of the range read them, submits, and restores the arena
//! addresses before it returns (also on error or unwind), so no queue ever keeps a pointer into
//! caller memory. The buffer is borrowed `&mut` because a compiled kernel cannot be proven not to
//! write its arguments; exporters never write inputs, so in practice the frame comes back unchanged.
//!
//! A buffer is bound in place only if [`CpuDevice::check_borrow`] accepts it:
//! - it is exactly the range's length and the range lies inside the arena;
//! - it has the range's alignment modulo [`BORROW_ALIGN`] (64 bytes: the widest vector load a
//!   kernel may issue), so every aligned load a kernel makes stays aligned;
//! - every recorded view (launch argument or copy source) touching the range lies wholly inside it,
//!   and no recorded copy writes into it.
//!
//! Otherwise the caller copies the input into the arena as usual (`crate::frame::cpu_frame` does,
//! and reports why).
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use modelrt_hal::device::SubmitTiming;

use super::device::{Command, CpuDevice, CpuQueue, Redirect};
use super::error::CpuError;

/// Alignment (bytes) a borrowed buffer must share with the arena range it stands in for.
pub const BORROW_ALIGN: u64 = 64;

/// Most buffers one submit can borrow (a bundle has at most this many inputs).
pub const MAX_BORROWED: usize = modelrt_core::bundle::MAX_IO;

/// A host buffer standing in for arena bytes `arena_offset..arena_offset + data.len()` during one
/// [`CpuDevice::submit_borrowed`].
#[derive(Debug)]
pub struct Borrowed<'a> {
    pub arena_offset: u64,
    pub data: &'a mut [u8],
}

/// Why a buffer cannot stand in for an arena range in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BorrowRefusal {
    /// The queue was recorded on another device or arena.
    ForeignQueue,
    /// The range is empty or does not lie inside the arena.
    OutsideArena,
    /// The buffer's address differs from the range's modulo [`BORROW_ALIGN`].
    Misaligned,
    /// A recorded launch argument or copy reaches both into and out of the range.
    Straddled,
    /// A recorded copy writes into the range.
    WrittenByCopy,
    /// Two borrowed buffers stand in for overlapping ranges.
    Overlapping,
    /// More than [`MAX_BORROWED`] buffers in one submit.
    TooMany,
}

impl BorrowRefusal {
    /// The refusal as one phrase.
    pub fn reason(self) -> &'static str {
        match self {
            BorrowRefusal::ForeignQueue => "the queue belongs to another device",
            BorrowRefusal::OutsideArena => "the range is empty or outside the arena",
            BorrowRefusal::Misaligned => {
                "the buffer is not aligned like the arena range (64-byte alignment needed)"
            }
            BorrowRefusal::Straddled => "a kernel view reaches past the input's bytes",
            BorrowRefusal::WrittenByCopy => "the model copies into this input",
            BorrowRefusal::Overlapping => "two borrowed inputs overlap",
            BorrowRefusal::TooMany => "more borrowed inputs than a bundle can have",
        }
    }
}

impl fmt::Display for BorrowRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

/// `a..a+alen` and `b..b+blen` share a byte (lengths bounded by the arena, so no overflow).
fn overlaps(a: u64, alen: u64, b: u64, blen: u64) -> bool {
    a < b.saturating_add(blen) && b < a.saturating_add(alen)
}

/// `a..a+alen` lies inside `b..b+blen`.
fn inside(a: u64, alen: u64, b: u64, blen: u64) -> bool {
    a >= b && a.saturating_add(alen) <= b.saturating_add(blen)
}

impl CpuDevice {
    /// Whether `data` can stand in for arena bytes `arena_offset..arena_offset + data.len()` of
    /// `queue` without a copy (rules in the module doc).
    pub fn check_borrow(
        &self,
        queue: &CpuQueue,
        arena_offset: u64,
        data: &[u8],
    ) -> Result<(), BorrowRefusal> {
        if !Arc::ptr_eq(&queue.arena, &self.arena) {
            return Err(BorrowRefusal::ForeignQueue);
        }
        let len = data.len() as u64;
        if len == 0 || self.arena.check(arena_offset, len).is_err() {
            return Err(BorrowRefusal::OutsideArena);
        }
        let want = (self.arena.base() as u64).wrapping_add(arena_offset);
        if !(data.as_ptr() as u64)
            .wrapping_sub(want)
            .is_multiple_of(BORROW_ALIGN)
        {
            return Err(BorrowRefusal::Misaligned);
        }
        for c in &queue.commands {
            match c {
                Command::Exec { spans, .. } => {
                    for s in spans.iter() {
                        if overlaps(s.offset, s.size, arena_offset, len)
                            && !inside(s.offset, s.size, arena_offset, len)
                        {
                            return Err(BorrowRefusal::Straddled);
                        }
                    }
                }
                Command::Copy { dst, src, len: n } => {
                    let (dst, src, n) = (*dst as u64, *src as u64, *n as u64);
                    if overlaps(dst, n, arena_offset, len) {
                        return Err(BorrowRefusal::WrittenByCopy);
                    }
                    if overlaps(src, n, arena_offset, len) && !inside(src, n, arena_offset, len) {
                        return Err(BorrowRefusal::Straddled);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Run `queue` once with each of `inputs` standing in for its arena range (zero copy). Every
    /// input must pass [`check_borrow`](Self::check_borrow) and the ranges must be disjoint, else
    /// nothing runs and the error names the refusal. The reported enqueue time includes re-pointing
    /// and restoring the arguments.
    pub fn submit_borrowed(
        &mut self,
        queue: &mut CpuQueue,
        inputs: &mut [Borrowed<'_>],
    ) -> Result<SubmitTiming, CpuError> {
        let t0 = Instant::now();
        for (i, b) in inputs.iter().enumerate() {
            self.check_borrow(queue, b.arena_offset, &*b.data)
                .map_err(CpuError::Borrow)?;
            let len = b.data.len() as u64;
            if inputs[..i]
                .iter()
                .any(|o| overlaps(o.arena_offset, o.data.len() as u64, b.arena_offset, len))
            {
                return Err(CpuError::Borrow(BorrowRefusal::Overlapping));
            }
        }
        if inputs.len() > MAX_BORROWED {
            return Err(CpuError::Borrow(BorrowRefusal::TooMany));
        }
        // Pointers derived from the `&mut` borrows, valid for this whole call; kernels and copies
        // reach them only through the re-pointed arguments and redirects, both gone on return.
        // A fixed array: a submit does not allocate.
        let mut slots = [Redirect::NONE; MAX_BORROWED];
        for (slot, b) in slots.iter_mut().zip(inputs.iter_mut()) {
            *slot = Redirect {
                offset: b.arena_offset,
                len: b.data.len() as u64,
                ptr: b.data.as_mut_ptr(),
            };
        }
        let redirects = &slots[..inputs.len()];
        let guard = Restore { queue };
        for c in guard.queue.commands.iter_mut() {
            if let Command::Exec { args, spans, .. } = c {
                for s in spans.iter() {
                    if let Some(r) = redirects
                        .iter()
                        .find(|r| inside(s.offset, s.size, r.offset, r.len))
                    {
                        args[s.slot] = r.ptr as u64 + (s.offset - r.offset);
                    }
                }
            }
        }
        let bind_ns = t0.elapsed().as_nanos() as u64;
        // SAFETY: every redirect points into one of the caller's `&mut` slices, borrowed for
        // this whole call and used by nothing else while it runs.
        let result = unsafe { self.submit_redirected(guard.queue, redirects) };
        let t1 = Instant::now();
        drop(guard);
        let restore_ns = t1.elapsed().as_nanos() as u64;
        result.map(|t| SubmitTiming {
            enqueue_ns: t.enqueue_ns + bind_ns + restore_ns,
            device_ns: t.device_ns,
        })
    }
}

/// Puts every recorded launch argument back on its recorded address when dropped.
struct Restore<'q> {
    queue: &'q mut CpuQueue,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        for c in self.queue.commands.iter_mut() {
            if let Command::Exec { args, spans, .. } = c {
                for s in spans.iter() {
                    args[s.slot] = s.addr;
                }
            }
        }
    }
}
