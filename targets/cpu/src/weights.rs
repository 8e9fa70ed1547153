//! Weights read in place on the CPU backend: a weight buffer that the bundle never writes is served
//! from the read-only mapping of the bundle file instead of a copy in the arena, so its arena pages
//! are never touched (never resident) and load skips the copy.
//!
//! [`CpuDevice::bind_weights`] (before the executor loads the bundle) picks the weights:
//! - the bundle must say the buffer is never written ([`Bundle::in_place_weight`]: a weight, fully
//!   initialised, sharing no arena bytes, no copy into it);
//! - its bytes must lie inside the mapping the device is given (which the device keeps alive);
//! - their address must match the arena range's alignment modulo [`WEIGHT_ALIGN`] (64 bytes, the
//!   widest vector load a kernel may issue; the arena base is page aligned and the format 64-aligns
//!   every weight in the file, so this holds for bundles written by the exporter).
//!
//! Afterwards every launch argument inside a bound range is recorded with the mapping's address,
//! copies out of it read the mapping, the executor's upload of exactly those bytes is a no-op, and
//! any other write into it (an upload of other bytes, a recorded copy into it) is refused. A kernel
//! storing to a bound weight (which the bundle says none does) would fault on the `PROT_READ`
//! mapping rather than change the weights.
use std::sync::Arc;

use modelrt_core::bundle::{Bundle, NotInPlace};

use super::device::CpuDevice;
use super::error::CpuError;
use modelrt_platform::bundle_file::FileMap;

/// Alignment (bytes) a weight's mapped address must share with its arena range.
pub const WEIGHT_ALIGN: u64 = 64;

/// One arena range served from the mapping.
#[derive(Clone, Copy, Debug)]
struct Bound {
    offset: u64,
    len: u64,
    /// Address of the range's first byte inside the mapping.
    addr: u64,
}

/// The bound ranges (sorted by offset, disjoint), the arena size of the bundle they were chosen
/// for, and the mapping they point into.
#[derive(Clone, Default)]
pub(super) struct BoundWeights {
    ranges: Vec<Bound>,
    arena_size: u64,
    /// Keeps every bound address valid for as long as a device or queue can use it.
    _owner: Option<Arc<FileMap>>,
}

impl BoundWeights {
    /// The bound range overlapping `offset..offset + len`, if any (ranges are disjoint and sorted,
    /// so only the last one starting before the end can overlap).
    fn overlapping(&self, offset: u64, len: u64) -> Option<&Bound> {
        let end = offset.saturating_add(len);
        let i = self.ranges.partition_point(|r| r.offset < end);
        let r = self.ranges.get(i.checked_sub(1)?)?;
        (r.offset.saturating_add(r.len) > offset).then_some(r)
    }

    /// The mapped address of `offset..offset + len` when that lies in a bound range, `None` when
    /// it touches none; an error when it straddles one's edge.
    pub(super) fn find(&self, offset: u64, len: u64) -> Result<Option<u64>, CpuError> {
        match self.overlapping(offset, len) {
            None => Ok(None),
            Some(r) if offset >= r.offset && offset + len <= r.offset + r.len => {
                Ok(Some(r.addr + (offset - r.offset)))
            }
            Some(_) => Err(CpuError::WeightStraddled { offset, len }),
        }
    }

    /// Whether `offset..offset + len` touches a bound range.
    pub(super) fn touches(&self, offset: u64, len: u64) -> bool {
        self.overlapping(offset, len).is_some()
    }

    /// Whether these ranges were chosen for a bundle with an arena of `size` bytes (none bound
    /// matches any arena), so they lie inside it.
    pub(super) fn fit(&self, size: u64) -> bool {
        self.ranges.is_empty()
            || (self.arena_size == size
                && self
                    .ranges
                    .iter()
                    .all(|r| r.offset.checked_add(r.len).is_some_and(|e| e <= size)))
    }

    fn bytes(&self) -> u64 {
        self.ranges.iter().map(|r| r.len).sum()
    }
}

pub use modelrt_platform::WeightBinding;

/// Why a weight the bundle allows in place is still copied on this device.
fn check_mapped(map: &FileMap, bytes: &[u8], arena_offset: u64) -> Result<u64, &'static str> {
    let base = map.bytes().as_ptr() as u64;
    let addr = bytes.as_ptr() as u64;
    if addr < base || addr - base + bytes.len() as u64 > map.bytes().len() as u64 {
        return Err("its bytes are not in the bundle mapping");
    }
    if !addr.wrapping_sub(arena_offset).is_multiple_of(WEIGHT_ALIGN) {
        return Err("its bytes are not aligned like its arena range");
    }
    Ok(addr)
}

impl CpuDevice {
    /// Read the weights of `bundle` that qualify (module doc) in place from `map`, which must hold
    /// the bytes `bundle` was parsed from. Call before the executor loads the bundle (that is,
    /// before the arena is allocated); the device keeps `map` alive. Weights that do not qualify
    /// are listed with the reason and uploaded into the arena as usual.
    pub fn bind_weights(
        &mut self,
        bundle: &Bundle<'_>,
        map: &Arc<FileMap>,
    ) -> Result<WeightBinding, CpuError> {
        if self.arena_allocated() {
            return Err(CpuError::WeightsAfterArena);
        }
        let mut report = WeightBinding::default();
        let mut ranges = Vec::new();
        bundle.in_place_weights(|i, b, verdict| {
            let placed = verdict
                .map_err(NotInPlace::reason)
                .and_then(|bytes| check_mapped(map, bytes, b.arena_offset));
            match placed {
                Ok(addr) => ranges.push(Bound {
                    offset: b.arena_offset,
                    len: b.size,
                    addr,
                }),
                Err(why) => report.copied.push((i, why)),
            }
        });
        ranges.sort_by_key(|r| r.offset);
        let bound = BoundWeights {
            ranges,
            arena_size: bundle.body().arena_size,
            _owner: Some(Arc::clone(map)),
        };
        report.bound = bound.ranges.len();
        report.bound_bytes = bound.bytes();
        self.set_pending_weights(bound);
        Ok(report)
    }
}
