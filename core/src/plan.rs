//! The memory plan: where each buffer lives in the single device arena.
//!
//! tinygrad has already packed the model's temporaries into its own arena buffer with lifetimes
//! resolved (TLSF, 256-byte blocks), so the bundle plan only has to lay the remaining buffers out
//! side by side: buffers of a page or more start on a 4096-byte boundary (CPU kernels use aligned
//! vector loads and Adreno/AMD map pages), smaller ones on 256 bytes. The result is fixed at compile
//! time and stored in the bundle; devices allocate `arena_size` once.

/// Alignment of buffers smaller than a page.
pub const SMALL_ALIGN: u64 = 256;
/// Alignment of buffers of a page or more.
pub const PAGE_ALIGN: u64 = 4096;

/// Alignment used for a buffer of `size` bytes.
pub const fn align_for(size: u64) -> u64 {
    if size >= PAGE_ALIGN {
        PAGE_ALIGN
    } else {
        SMALL_ALIGN
    }
}

/// Lay out buffers of the given sizes; writes each offset into `offsets` and returns the arena size
/// (rounded up to a page), or `None` on overflow or when `offsets` is shorter than `sizes`.
pub fn plan_arena(sizes: &[u64], offsets: &mut [u64]) -> Option<u64> {
    if offsets.len() < sizes.len() {
        return None;
    }
    let mut end: u64 = 0;
    for (size, slot) in sizes.iter().zip(offsets.iter_mut()) {
        let start = end.checked_next_multiple_of(align_for(*size))?;
        *slot = start;
        end = start.checked_add(*size)?;
    }
    end.checked_next_multiple_of(PAGE_ALIGN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_disjoint() {
        let sizes = [10, 5000, 1, 4096, 300];
        let mut off = [0u64; 5];
        let total = plan_arena(&sizes, &mut off).unwrap();
        assert_eq!(off, [0, 4096, 9216, 12288, 16384]);
        assert_eq!(total, 20480);
        for i in 0..sizes.len() {
            assert_eq!(off[i] % align_for(sizes[i]), 0);
            if i + 1 < sizes.len() {
                assert!(off[i] + sizes[i] <= off[i + 1]);
            }
        }
    }

    #[test]
    fn overflow_is_reported() {
        let mut off = [0u64; 2];
        assert_eq!(plan_arena(&[u64::MAX - 10, 100], &mut off), None);
        assert_eq!(plan_arena(&[1, 2], &mut off[..1]), None);
    }
}
