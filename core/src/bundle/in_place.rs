//! Which weight buffers a backend may read where they lie in the bundle bytes (a read-only file
//! mapping) instead of copying them into the arena.
//!
//! A weight qualifies when everything the bundle records says no byte of it is ever written:
//! - its kind is [`BufferKind::Weight`] (the exporter gives that kind only to buffers that are read
//!   before any write and that no captured call of either phase writes, from tinygrad's own
//!   per-call output sets; state, scratch, input and output buffers never qualify);
//! - its initial bytes cover the whole buffer (a shorter prefix would need zeros after it);
//! - no other buffer shares any of its arena bytes, so no launch argument or copy that names
//!   another buffer can reach it;
//! - no copy step of the init or run phase writes into it.
//!
//! Format-1 bundles do not record which launch parameters a kernel writes, so a launch that names
//! the weight is trusted to read it (the first rule); a backend that binds the weight to read-only
//! memory turns a violation into a fault, never into silently changed weights.
use super::schema::{BufferDesc, BufferKind, Step};
use super::{Bundle, Table};

/// Why a buffer is not read in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum NotInPlace {
    /// Not a weight (state, scratch, input or output), or no such buffer.
    NotWeight,
    /// Its initial bytes are shorter than the buffer.
    PartialInit,
    /// Another buffer shares some of its arena bytes.
    SharesArena,
    /// A copy step writes into it.
    CopiedInto,
}

impl NotInPlace {
    /// The reason as one phrase.
    pub fn reason(self) -> &'static str {
        match self {
            NotInPlace::NotWeight => "not a weight buffer",
            NotInPlace::PartialInit => "its initial bytes do not cover the buffer",
            NotInPlace::SharesArena => "another buffer shares its arena bytes",
            NotInPlace::CopiedInto => "a copy step writes into it",
        }
    }
}

impl core::fmt::Display for NotInPlace {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.reason())
    }
}

/// Whether some copy of `steps` writes into buffer `buffer` (by index: views lie inside their
/// buffer, validated at parse). Undecodable steps (impossible after validation) count as writes.
fn copies_into(steps: Table<'_, Step>, buffer: u32) -> bool {
    steps.iter().any(|s| match s {
        Ok(Step::Copy { dst, .. }) => dst.buffer == buffer,
        Ok(Step::Launch { .. } | Step::LaunchThreads { .. }) => false,
        Err(_) => true,
    })
}

impl<'a> Bundle<'a> {
    /// The bytes of weight buffer `buffer` if a backend may read them in place of the buffer's
    /// arena range for the bundle's whole life (rules in `bundle::in_place`), else why not.
    /// Walks the buffer table and both schedules; allocates nothing.
    pub fn in_place_weight(&self, buffer: u32) -> Result<&'a [u8], NotInPlace> {
        let b = self
            .body()
            .buffers
            .get(buffer as usize)
            .map_err(|_| NotInPlace::NotWeight)?;
        self.check_in_place(buffer, &b, || self.shares_arena(buffer, &b))
    }

    /// [`in_place_weight`](Self::in_place_weight) for every weight buffer, in table order: calls
    /// `f(index, desc, verdict)`. Linear in the buffer table when it is laid out in arena order
    /// (as the writer does), quadratic otherwise; allocates nothing.
    pub fn in_place_weights(
        &self,
        mut f: impl FnMut(u32, &BufferDesc<'a>, Result<&'a [u8], NotInPlace>),
    ) {
        let buffers = self.body().buffers;
        let sorted = buffers
            .iter()
            .try_fold(0u64, |prev, d| {
                d.ok().map(|d| d.arena_offset).filter(|&o| o >= prev)
            })
            .is_some();
        // The furthest end of the buffers before the current one (for a sorted table, an earlier
        // buffer overlaps the current one exactly when this end passes its start).
        let mut max_end = 0u64;
        for (i, d) in buffers.iter().enumerate() {
            let Ok(d) = d else { continue };
            let end = d.arena_offset.saturating_add(d.size);
            if d.kind == BufferKind::Weight {
                let i = i as u32;
                let verdict = self.check_in_place(i, &d, || {
                    if !sorted {
                        return self.shares_arena(i, &d);
                    }
                    // Sorted: a later buffer overlaps exactly when the next one starts before
                    // this end.
                    let next = buffers.get(i as usize + 1).ok();
                    max_end > d.arena_offset || next.is_some_and(|n| n.arena_offset < end)
                });
                f(i, &d, verdict);
            }
            max_end = max_end.max(end);
        }
    }

    /// The rules, with the arena-sharing test supplied by the caller.
    fn check_in_place(
        &self,
        buffer: u32,
        b: &BufferDesc<'a>,
        shares_arena: impl FnOnce() -> bool,
    ) -> Result<&'a [u8], NotInPlace> {
        if b.kind != BufferKind::Weight {
            return Err(NotInPlace::NotWeight);
        }
        let init = self.init_bytes(b).ok_or(NotInPlace::PartialInit)?;
        if init.len() as u64 != b.size {
            return Err(NotInPlace::PartialInit);
        }
        if shares_arena() {
            return Err(NotInPlace::SharesArena);
        }
        let body = self.body();
        if copies_into(body.init, buffer) || copies_into(body.run, buffer) {
            return Err(NotInPlace::CopiedInto);
        }
        Ok(init)
    }

    /// Whether another buffer shares arena bytes with buffer `buffer` (`b`), by a walk of the
    /// whole table. Undecodable records (impossible after validation) count as sharing.
    fn shares_arena(&self, buffer: u32, b: &BufferDesc<'_>) -> bool {
        // Validation bounds every buffer by the arena, so these ends cannot overflow.
        let end = b.arena_offset.saturating_add(b.size);
        self.body()
            .buffers
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != buffer as usize)
            .any(|(_, o)| {
                o.map_or(true, |o| {
                    o.arena_offset < end && b.arena_offset < o.arena_offset.saturating_add(o.size)
                })
            })
    }
}
