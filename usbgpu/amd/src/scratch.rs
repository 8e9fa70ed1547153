//! Scratch (the private segment) on GC 11: how big the area is for a kernel's private bytes per
//! lane, what `COMPUTE_TMPRING_SIZE` and the private-segment buffer descriptor say about it, and the
//! kernel-descriptor bits that ask for it (docs/hw/amd-driver.md §5.1).
use super::discovery::GcInfo;

/// Kernel descriptor `kernel_code_properties` bits (AMDGPUUsage, tinygrad `ops_amd.py`).
pub(super) const KCP_PRIVATE_SEGMENT_BUFFER: u16 = 1 << 0;
/// Flat-scratch-init user SGPRs: not provided (GC 11 scratch is architected, §5.1).
pub(super) const KCP_FLAT_SCRATCH_INIT: u16 = 1 << 5;
/// Scratch is sized for wave64 lanes and a 256-byte granule (docs/hw/amd-driver.md §5.1).
const SCRATCH_LANES: u64 = 64;
/// `COMPUTE_TMPRING_SIZE.WAVESIZE` unit in bytes.
const SCRATCH_GRANULE: u64 = 256;
/// The private-segment buffer descriptor's word 3 on GC 11: FORMAT 32_UINT (20) at 17:12,
/// INDEX_STRIDE 2 (32 lanes) at 22:21, ADD_TID_ENABLE bit 23, OOB_SELECT 2 at 29:28
/// (docs/hw/amd-driver.md §5.1).
pub(super) const SCRATCH_RSRC_WORD3: u32 = 20 << 12 | 2 << 21 | 1 << 23 | 2 << 28;

/// The scratch (private segment) area and what a dispatch that uses it programs
/// (docs/hw/amd-driver.md §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchLayout {
    /// Private bytes per lane the area was sized for (the largest kernel's, rounded up to 4).
    pub per_thread: u64,
    /// `COMPUTE_TMPRING_SIZE.WAVESIZE`: bytes per wave / 256.
    pub wavesize: u32,
    /// `COMPUTE_TMPRING_SIZE.WAVES`: waves per shader engine that may hold scratch at once.
    pub waves: u32,
    /// Bytes of the area: every scratch slot of every CU.
    pub bytes: u64,
}

impl ScratchLayout {
    /// The layout for `private_size` bytes per lane on a GPU with `gc`'s counts.
    pub fn new(private_size: u32, gc: &GcInfo) -> Result<ScratchLayout, String> {
        let cus = u64::from(gc.num_cu_per_sa) * u64::from(gc.num_sa_per_se) * u64::from(gc.num_se);
        let slots = u64::from(gc.max_scratch_slots_per_cu);
        if cus == 0 || slots == 0 || gc.num_se == 0 {
            return Err(format!(
                "the GC info table lists {cus} CUs, {slots} scratch slots per CU, {} SEs",
                gc.num_se
            ));
        }
        let per_thread = u64::from(private_size).next_multiple_of(SCRATCH_GRANULE / SCRATCH_LANES);
        let wavesize = (SCRATCH_LANES * per_thread).div_ceil(SCRATCH_GRANULE);
        let bytes = per_thread * SCRATCH_LANES * slots * cus;
        let waves = (bytes / (wavesize * SCRATCH_GRANULE) / u64::from(gc.num_se)).min(cus * slots);
        if wavesize > 0x7FFF || waves > 0xFFF {
            return Err(format!(
                "{private_size} private bytes per lane do not fit COMPUTE_TMPRING_SIZE \
                 (WAVESIZE {wavesize}, WAVES {waves})"
            ));
        }
        Ok(ScratchLayout {
            per_thread,
            wavesize: wavesize as u32,
            waves: waves as u32,
            bytes,
        })
    }

    /// `COMPUTE_TMPRING_SIZE`: WAVES at bits 11:0, WAVESIZE at bits 26:12.
    pub fn tmpring_size(&self) -> u32 {
        self.waves | self.wavesize << 12
    }
}

/// An allocated scratch area.
#[derive(Clone, Copy, Debug)]
pub(super) struct Scratch {
    /// Its sizing.
    pub(super) layout: ScratchLayout,
    /// Its GPU VA.
    pub(super) va: u64,
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Navi31 as its GC info table describes it (the GPU device model's v1.0 table, a 7900 XTX: 6 SE ×
    /// 2 SA × 4 WGP of 2 CUs, 32 scratch slots per CU).
    pub(crate) fn navi31_gc() -> GcInfo {
        GcInfo {
            version_major: 1,
            version_minor: 0,
            num_se: 6,
            num_cu_per_sa: 8,
            num_sa_per_se: 2,
            num_rb_per_se: 4,
            num_gprs: 1536,
            wave_size: 32,
            max_waves_per_simd: 16,
            max_scratch_slots_per_cu: 32,
            lds_size: 64,
        }
    }

    #[test]
    fn scratch_layout_matches_the_documented_sizing() {
        // 228 bytes per lane (inception_v1's r_8_7_7_2_16_4_4_4_3_7_7), by hand (§5.1):
        // per thread = 228 (already a multiple of 256 / 64 = 4); WAVESIZE = 64 × 228 / 256 = 57;
        // bytes = 228 × 64 lanes × 32 slots × 96 CUs; WAVES = (96 × 32 waves) / 6 SEs = 512.
        let l = ScratchLayout::new(228, &navi31_gc()).unwrap();
        assert_eq!(l.per_thread, 228);
        assert_eq!(l.wavesize, 57);
        assert_eq!(l.bytes, 44_826_624);
        assert_eq!(l.waves, 512);
        // 57 << 12 | 512.
        assert_eq!(l.tmpring_size(), 0x0003_9200);
        // 5 bytes round up to 8 per thread: WAVESIZE = 64 × 8 / 256 = 2.
        let l = ScratchLayout::new(5, &navi31_gc()).unwrap();
        assert_eq!((l.per_thread, l.wavesize, l.waves), (8, 2, 512));
        assert_eq!(l.bytes, 8 * 64 * 32 * 96);
        // WAVESIZE beyond its 15 bits is refused.
        assert!(ScratchLayout::new(0x8000 * 4, &navi31_gc()).is_err());
    }
}
