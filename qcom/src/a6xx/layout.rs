//! Per-kernel launch layout derived once from [`Ir3KernelMeta`] (docs/hw/adreno-kgsl-pm4.md §7.1, §8, §8.5) or from a
//! Qualcomm CL container ([`KernelLayout::from_cl`], §9.1, §18): register footprints, private-memory sizes,
//! argument-region offsets and launch limits.
use super::cl_container::{ArgKind, ClContainer};
use modelrt_hal::target::Ir3KernelMeta;

/// Bytes of the constant file at the start of the args region (c0…c127).
pub const CONST_FILE_BYTES: u32 = 2048;
/// Bytes the constant load (CP_LOAD_STATE6, 256 vec4) reads starting at the args region.
pub const CONST_LOAD_BYTES: u32 = 4096;
/// Bytes per texture / UAV descriptor.
pub const DESC_BYTES: u32 = 64;
/// Bytes per sampler.
pub const SAMPLER_BYTES: u32 = 16;
/// Texture descriptors CP_LOAD_STATE6 loads inline; higher slots are read from SP_CS_TEXMEMOBJ_BASE
/// (docs/hw/adreno-kgsl-pm4.md §8.6).
pub const INLINE_TEXTURES: u32 = 16;
/// Most textures SP_CS_CONFIG can count: NTEX is 8 bits (docs/hw/adreno-kgsl-pm4.md §7 item 22, §8.6).
pub const MAX_TEXTURES: u32 = 0xFF;

/// Why a kernel's metadata or launch cannot be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// `image_size` is zero or not a multiple of 8 bytes (one a6xx instruction).
    BadImageSize(u32),
    /// More textures than SP_CS_CONFIG.NTEX holds (255) or than `tex_to_image` lists.
    BadTextureCount { tex_cnt: u32, mapped: usize },
    /// More UAVs than the SP_CS_CONFIG field holds.
    BadUavCount(u32),
    /// An offset in the metadata lies outside the 2048-byte constant file.
    ConstOutOfRange { what: &'static str, offset: u32 },
    /// A register id or footprint does not fit its register field.
    FieldOverflow(&'static str),
    /// `prod(local)` exceeds what the register footprint allows.
    TooManyThreads { requested: u64, max: u32 },
    /// A zero or too large local/global size.
    BadDims { global: [u32; 3], local: [u32; 3] },
}

impl core::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LayoutError::BadImageSize(n) => {
                write!(f, "shader image size {n} is not a positive multiple of 8")
            }
            LayoutError::BadTextureCount { tex_cnt, mapped } => {
                write!(
                    f,
                    "{tex_cnt} textures but {mapped} texture-to-image entries (max {MAX_TEXTURES})"
                )
            }
            LayoutError::BadUavCount(n) => write!(f, "{n} UAVs is more than a6xx supports"),
            LayoutError::ConstOutOfRange { what, offset } => {
                write!(
                    f,
                    "{what} at byte {offset} lies outside the 2048-byte constant file"
                )
            }
            LayoutError::FieldOverflow(what) => write!(f, "{what} does not fit its register field"),
            LayoutError::TooManyThreads { requested, max } => {
                write!(
                    f,
                    "Too many resources requested for launch: {requested} threads > {max}"
                )
            }
            LayoutError::BadDims { global, local } => {
                write!(
                    f,
                    "invalid global/local dims global={global:?} local={local:?}"
                )
            }
        }
    }
}

/// Everything the stream builder and the args writer need about one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelLayout {
    pub image_size: u32,
    /// SP_CS_INSTR_SIZE / shader NUM_UNIT: ceil(image_size / 128).
    pub instr_units: u32,
    pub fregs: u32,
    pub hregs: u32,
    pub branchstack: u32,
    /// SP_CS_CNTL_1 shared size field: max(1, (shmem − 1) / 1024).
    pub shared_size: u32,
    /// SP_CS_PVT_MEM_PARAM: round_up(pvtmem, 512) / 512.
    pub pvt_per_item: u32,
    /// SP_CS_PVT_MEM_SIZE: per_item · 128 · 2.
    pub pvt_total: u32,
    /// SP_CS_PVT_MEM_STACK_OFFSET (raw bytes); the stack object must be ≥ 4× this.
    pub hw_stack_offset: u32,
    pub wgid: u32,
    pub lid: u32,
    pub wgsz: u32,
    pub buf_off: u32,
    pub imm_off: u32,
    pub tex_cnt: u32,
    pub ibo_cnt: u32,
    pub samp_cnt: u32,
    pub tex_off: u32,
    pub ibo_off: u32,
    pub samp_off: u32,
    /// Bytes of the args region the CPU fills (a multiple of 256).
    pub args_size: u32,
    /// Largest `prod(local)` the register footprint allows.
    pub max_threads: u32,
    /// A Qualcomm-compiled kernel: CL-mode stream (docs/hw/adreno-kgsl-pm4.md §18) and CL argument placement.
    pub cl: bool,
    /// First executed dword (CL containers; 0 for IR3), written to SP_CS_PROGRAM_COUNTER_OFFSET.
    pub prg_offset: u32,
}

const fn round_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

impl KernelLayout {
    /// Derive the layout, rejecting metadata that cannot be encoded.
    pub fn new(m: &Ir3KernelMeta<'_>) -> Result<Self, LayoutError> {
        if m.image_size == 0 || !m.image_size.is_multiple_of(8) {
            return Err(LayoutError::BadImageSize(m.image_size));
        }
        if m.tex_cnt > MAX_TEXTURES || m.tex_to_image.len() < m.tex_cnt as usize {
            return Err(LayoutError::BadTextureCount {
                tex_cnt: m.tex_cnt,
                mapped: m.tex_to_image.len(),
            });
        }
        if m.ibo_cnt > 0x3F {
            return Err(LayoutError::BadUavCount(m.ibo_cnt));
        }
        // SP_CS_CNTL_0: HALFREGFOOTPRINT bits 1–6, FULLREGFOOTPRINT bits 7–12, BRANCHSTACK bits 14–19.
        if m.hregs > 0x3F || m.fregs > 0x3F || m.branchstack > 0x3F {
            return Err(LayoutError::FieldOverflow(
                "register footprint / branch stack",
            ));
        }
        if m.wgid > 0xFF || m.lid > 0xFF || m.wgsz > 0xFF {
            return Err(LayoutError::FieldOverflow(
                "work-group / local-id register id",
            ));
        }
        if m.shmem > 32 * 1024 {
            return Err(LayoutError::FieldOverflow("shared memory size"));
        }
        if m.pvtmem > 64 * 1024 {
            return Err(LayoutError::FieldOverflow("private memory size"));
        }
        if m.buf_off >= CONST_FILE_BYTES {
            return Err(LayoutError::ConstOutOfRange {
                what: "buffer table",
                offset: m.buf_off,
            });
        }
        if !m.immediates.len().is_multiple_of(4)
            || (m.imm_off as usize)
                .checked_add(m.immediates.len())
                .is_none_or(|end| end > CONST_FILE_BYTES as usize)
        {
            return Err(LayoutError::ConstOutOfRange {
                what: "immediates",
                offset: m.imm_off,
            });
        }
        if m.wgsz != REGID_UNUSED && m.wgsz * 4 + 12 > CONST_FILE_BYTES {
            return Err(LayoutError::ConstOutOfRange {
                what: "work-group size param",
                offset: m.wgsz * 4,
            });
        }
        let pvt_rounded = round_up(m.pvtmem as u64, 512);
        let pvt_per_item = (pvt_rounded >> 9) as u32;
        let hw_stack_offset =
            round_up(pvt_rounded.max(1).next_power_of_two() * 128 * 16, 0x1000) as u32;
        let samp_cnt = m.tex_cnt;
        let desc = (m.tex_cnt + m.ibo_cnt) * DESC_BYTES;
        let footprint = (m.fregs + m.hregs.div_ceil(2)).max(1);
        Ok(KernelLayout {
            image_size: m.image_size,
            instr_units: m.image_size.div_ceil(128),
            fregs: m.fregs,
            hregs: m.hregs,
            branchstack: m.branchstack,
            shared_size: (m.shmem.saturating_sub(1) / 1024).max(1),
            pvt_per_item,
            pvt_total: pvt_per_item * 128 * 2,
            hw_stack_offset,
            wgid: m.wgid,
            lid: m.lid,
            wgsz: m.wgsz,
            buf_off: m.buf_off,
            imm_off: m.imm_off,
            tex_cnt: m.tex_cnt,
            ibo_cnt: m.ibo_cnt,
            samp_cnt,
            tex_off: CONST_FILE_BYTES,
            ibo_off: CONST_FILE_BYTES + DESC_BYTES * m.tex_cnt,
            samp_off: CONST_FILE_BYTES + desc,
            args_size: round_up(
                (CONST_FILE_BYTES + desc + samp_cnt * SAMPLER_BYTES) as u64,
                256,
            ) as u32,
            max_threads: (((384 * 32) / (footprint * 128)) * 128).min(1024),
            cl: false,
            prg_offset: 0,
        })
    }

    /// The layout of a Qualcomm-compiled kernel, read from its container as tinygrad's `QCOMProgram` does for
    /// `DEV=QCOM` (docs/hw/adreno-kgsl-pm4.md §18): IBO descriptors first at 2048, then textures, then samplers (one
    /// more than the container declares); no work-group registers (the CL compiler's code finds its ids itself).
    pub fn from_cl(c: &ClContainer<'_>) -> Result<Self, LayoutError> {
        let tex_cnt = c.count(ArgKind::Texture);
        let ibo_cnt = c.count(ArgKind::Ibo);
        if tex_cnt > MAX_TEXTURES {
            return Err(LayoutError::BadTextureCount {
                tex_cnt,
                mapped: tex_cnt as usize,
            });
        }
        if ibo_cnt > 0x3F {
            return Err(LayoutError::BadUavCount(ibo_cnt));
        }
        // The container parser bounds fregs/hregs/branch stack (6 bits), pvtmem (64 KiB), shmem (32 KiB).
        let pvt_rounded = round_up(c.pvtmem as u64, 512);
        let pvt_per_item = (pvt_rounded >> 9) as u32;
        let hw_stack_offset =
            round_up(pvt_rounded.max(1).next_power_of_two() * 128 * 16, 0x1000) as u32;
        let samp_cnt = if c.samplers > 0 { c.samplers + 1 } else { 0 };
        let desc = (tex_cnt + ibo_cnt) * DESC_BYTES;
        let footprint = (c.fregs + c.hregs.div_ceil(2)).max(1);
        Ok(KernelLayout {
            image_size: c.image_size,
            instr_units: c.image_size.div_ceil(128),
            fregs: c.fregs,
            hregs: c.hregs,
            branchstack: c.branchstack,
            shared_size: (c.shmem.saturating_sub(1) / 1024).max(1),
            pvt_per_item,
            pvt_total: pvt_per_item * 128 * 2,
            hw_stack_offset,
            wgid: REGID_UNUSED,
            lid: REGID_UNUSED,
            wgsz: REGID_UNUSED,
            buf_off: 0,
            imm_off: 0,
            tex_cnt,
            ibo_cnt,
            samp_cnt,
            ibo_off: CONST_FILE_BYTES,
            tex_off: CONST_FILE_BYTES + DESC_BYTES * ibo_cnt,
            samp_off: CONST_FILE_BYTES + desc,
            args_size: round_up(
                (CONST_FILE_BYTES + desc + samp_cnt * SAMPLER_BYTES) as u64,
                256,
            ) as u32,
            max_threads: (((384 * 32) / (footprint * 128)) * 128).min(1024),
            cl: true,
            prg_offset: c.prg_offset,
        })
    }

    /// Launch checks of docs/hw/adreno-kgsl-pm4.md §7.1 plus the register field limits (LOCALSIZE is 10 bits, counts non-zero).
    pub fn check_launch(&self, global: [u32; 3], local: [u32; 3]) -> Result<(), LayoutError> {
        let bad = LayoutError::BadDims { global, local };
        if global.iter().chain(local.iter()).any(|&x| x == 0) || local.iter().any(|&l| l > 1024) {
            return Err(bad);
        }
        if global
            .iter()
            .zip(local.iter())
            .any(|(&g, &l)| g as u64 * l as u64 > u32::MAX as u64)
        {
            return Err(bad);
        }
        let requested = local.iter().map(|&l| l as u64).product::<u64>();
        if requested > self.max_threads as u64 {
            return Err(LayoutError::TooManyThreads {
                requested,
                max: self.max_threads,
            });
        }
        Ok(())
    }
}

use super::regs::REGID_UNUSED;

#[cfg(test)]
mod tests {
    use super::*;

    /// The §12 walk-through kernel's metadata (the selftest's `E_8_32_4`) with another image size and register
    /// footprint.
    fn meta(image_size: u32, fregs: u32, hregs: u32) -> Ir3KernelMeta<'static> {
        Ir3KernelMeta {
            image_size,
            fregs,
            hregs,
            ..crate::selftest::kernel_meta()
        }
    }

    #[test]
    fn walkthrough_values_from_spec_12() {
        // §12: image 384 B → INSTR_SIZE 3; pvtmem 0 → stack offset 0x1000; kernargs 2048.
        let l = KernelLayout::new(&meta(384, 7, 1)).unwrap();
        assert_eq!(l.instr_units, 3);
        assert_eq!(l.hw_stack_offset, 0x1000);
        assert_eq!(l.pvt_per_item, 0);
        assert_eq!(l.pvt_total, 0);
        assert_eq!(l.args_size, 2048);
        assert_eq!(l.shared_size, 1);
        // 12288 / (max(1, 7 + 1) * 128) = 12 → 12*128 = 1536 → min 1024
        assert_eq!(l.max_threads, 1024);
    }

    #[test]
    fn pvtmem_and_shared_formulas() {
        let mut m = meta(128, 40, 3);
        m.pvtmem = 600; // round_up 1024 → per-item 2, next_pow2(1024)*2048 = 2 MiB
        m.shmem = 4096; // (4095)/1024 = 3
        let l = KernelLayout::new(&m).unwrap();
        assert_eq!(l.pvt_per_item, 2);
        assert_eq!(l.pvt_total, 512);
        assert_eq!(l.hw_stack_offset, 1024 * 128 * 16);
        assert_eq!(l.shared_size, 3);
        // footprint 40 + round_up(3,2)/2 = 42 → 12288/(42*128) = 2 → 256
        assert_eq!(l.max_threads, 256);
        assert_eq!(l.check_launch([1, 1, 1], [16, 16, 1]), Ok(()));
        assert_eq!(
            l.check_launch([1, 1, 1], [16, 17, 1]),
            Err(LayoutError::TooManyThreads {
                requested: 272,
                max: 256
            })
        );
    }

    #[test]
    fn image_offsets_follow_ir3_order() {
        let mut m = meta(512, 12, 0);
        m.tex_cnt = 2;
        m.ibo_cnt = 1;
        m.tex_to_image = heapless::Vec::from_slice(&[1, 0]).unwrap();
        let l = KernelLayout::new(&m).unwrap();
        assert_eq!(
            (l.tex_off, l.ibo_off, l.samp_off),
            (2048, 2048 + 128, 2048 + 192)
        );
        // round_up(2048 + 3*64 + 2*16, 256) = 2304
        assert_eq!(l.args_size, 2304);
    }

    #[test]
    fn bad_metadata_is_rejected() {
        assert_eq!(
            KernelLayout::new(&meta(0, 1, 1)),
            Err(LayoutError::BadImageSize(0))
        );
        assert_eq!(
            KernelLayout::new(&meta(12, 1, 1)),
            Err(LayoutError::BadImageSize(12))
        );
        let mut m = meta(128, 1, 1);
        m.tex_cnt = 1;
        assert!(matches!(
            KernelLayout::new(&m),
            Err(LayoutError::BadTextureCount { .. })
        ));
        let mut m = meta(128, 1, 1);
        m.imm_off = 2046;
        assert!(matches!(
            KernelLayout::new(&m),
            Err(LayoutError::ConstOutOfRange { .. })
        ));
        let l = KernelLayout::new(&meta(128, 1, 1)).unwrap();
        assert!(l.check_launch([0, 1, 1], [1, 1, 1]).is_err());
        assert!(l.check_launch([1, 1, 1], [2048, 1, 1]).is_err());
    }
}
