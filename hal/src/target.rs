//! What a bundle was compiled for, and the per-kernel metadata a backend needs to launch it.
//!
//! These types are part of the bundle body (postcard) and therefore follow the bundle's evolution rules
//! (see `modelrt_core::bundle`): new enum variants are appended at the end, never reordered; a new field
//! means a new bundle minor version.
use serde::{Deserialize, Serialize};

mod name;
pub use name::{TargetName, UnknownTarget};

/// Maximum kernel parameters (buffers + integer vars); tinygrad asserts 63 on CPU.
pub const MAX_PARAMS: usize = 64;

/// CPU instruction-set architecture of a CPU bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CpuArch {
    X86_64,
    Aarch64,
}

impl CpuArch {
    /// The architecture this binary was built for, if it is one a CPU bundle can target.
    pub const fn host() -> Option<CpuArch> {
        if cfg!(target_arch = "x86_64") {
            Some(CpuArch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(CpuArch::Aarch64)
        } else {
            None
        }
    }

    /// Name used on the command line and in `modelrt info`.
    pub const fn name(self) -> &'static str {
        match self {
            CpuArch::X86_64 => "x86_64",
            CpuArch::Aarch64 => "aarch64",
        }
    }
}

/// The device family a bundle runs on. Borrowed strings point into the bundle bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target<'a> {
    /// Host CPU running tinygrad CLANG kernels (relocatable ELF objects).
    Cpu {
        arch: CpuArch,
        /// The `-march`/`-mcpu` baseline the kernels were compiled for (e.g. `x86-64-v3`, `cortex-a76`).
        #[serde(borrow)]
        baseline: &'a str,
        /// CPU features the kernels require, as a [`cpu_features`] bit set.
        features: u64,
    },
    /// Qualcomm Adreno (e.g. `chip = 630`), IR3 kernels.
    Adreno { chip: u32, image: bool, half: bool },
    /// AMD RDNA GPU, `gfx` as the hexadecimal-looking number (`0x1100` for gfx1100).
    Amd { gfx: u32 },
    /// Qualcomm Hexagon DSP, `version` such as 65 or 68.
    Hexagon { version: u32 },
}

impl Target<'_> {
    /// Short family name for messages.
    pub fn family(&self) -> &'static str {
        match self {
            Target::Cpu { .. } => "cpu",
            Target::Adreno { .. } => "adreno",
            Target::Amd { .. } => "amd",
            Target::Hexagon { .. } => "hexagon",
        }
    }
}

/// CPU feature bits recorded in [`Target::Cpu::features`].
pub mod cpu_features {
    pub const SSE4_2: u64 = 1 << 0;
    pub const AVX: u64 = 1 << 1;
    pub const AVX2: u64 = 1 << 2;
    pub const FMA: u64 = 1 << 3;
    pub const F16C: u64 = 1 << 4;
    pub const BMI1: u64 = 1 << 5;
    pub const BMI2: u64 = 1 << 6;
    pub const MOVBE: u64 = 1 << 7;
    pub const LZCNT: u64 = 1 << 8;
    pub const AVX512F: u64 = 1 << 9;
    /// aarch64 NEON / AdvSIMD (always present on Linux aarch64).
    pub const NEON: u64 = 1 << 32;
    /// aarch64 half-precision arithmetic (FEAT_FP16).
    pub const FP16: u64 = 1 << 33;
    /// aarch64 dot product (FEAT_DotProd).
    pub const DOTPROD: u64 = 1 << 34;

    /// (bit, name) pairs for messages.
    pub const NAMES: &[(u64, &str)] = &[
        (SSE4_2, "sse4.2"),
        (AVX, "avx"),
        (AVX2, "avx2"),
        (FMA, "fma"),
        (F16C, "f16c"),
        (BMI1, "bmi1"),
        (BMI2, "bmi2"),
        (MOVBE, "movbe"),
        (LZCNT, "lzcnt"),
        (AVX512F, "avx512f"),
        (NEON, "neon"),
        (FP16, "fp16"),
        (DOTPROD, "dotprod"),
    ];
}

/// Element type of a buffer, parameter or tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DType {
    F32,
    F16,
    BF16,
    F64,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    Bool,
}

impl DType {
    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// numpy-style name (`float32`, `int8`, …), used by `.npy` I/O and messages.
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F64 => "float64",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::I16 => "int16",
            DType::U16 => "uint16",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::I64 => "int64",
            DType::U64 => "uint64",
            DType::Bool => "bool",
        }
    }
}

/// One kernel parameter, in tinygrad's signature order (buffers first, then integer vars).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ParamKind {
    /// A plain buffer pointer.
    Buffer,
    /// An image parameter of shape `(h, w, 4)` (Adreno `IMAGE=1`).
    Image { height: u32, width: u32 },
    /// tinygrad's CPU `core_id` runtime variable.
    CoreId,
    /// Any other int32 variable.
    Var,
}

/// A kernel parameter descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ParamDesc {
    pub kind: ParamKind,
    pub dtype: DType,
}

/// Launch metadata for a CPU (tinygrad CLANG) kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CpuKernelMeta {
    /// Number of `core_id` values the kernel was split into (1 = no thread axis).
    pub threads: u32,
}

/// Launch metadata for an Adreno kernel compiled by mesa ir3, decoded by the exporter from
/// `IR3Compiler.unpack_lib` (see `docs/hw/tinygrad-export.md` §7.1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ir3KernelMeta<'a> {
    /// ISA length in bytes (`v.info.size`).
    pub image_size: u32,
    /// Full-precision register footprint (`max_reg + 1`).
    pub fregs: u32,
    /// Half-precision register footprint (`max_half_reg + 1`).
    pub hregs: u32,
    pub branchstack: u32,
    /// Private memory per work item in bytes (`pvtmem_size`).
    pub pvtmem: u32,
    /// Shared (local) memory in bytes (`shared_size`).
    pub shmem: u32,
    /// Register id of the work-group id.
    pub wgid: u32,
    /// Register id of the local invocation id.
    pub lid: u32,
    /// Const offset (dwords) of the work-group size driver param, `0xfc` when unused.
    pub wgsz: u32,
    /// Byte offset of the buffer-pointer table in the args region.
    pub buf_off: u32,
    /// Byte offset where the immediates go in the args region.
    pub imm_off: u32,
    /// Immediates as little-endian u32s.
    #[serde(borrow)]
    pub immediates: &'a [u8],
    /// Texture (and sampler) count.
    pub tex_cnt: u32,
    /// IBO (writable image / UAV) count.
    pub ibo_cnt: u32,
    /// For each texture slot, the index into the image parameters after the IBOs.
    pub tex_to_image: heapless::Vec<u8, 32>,
}

/// Launch metadata for an AMD kernel (from the 64-byte `llvm_amdhsa_kernel_descriptor_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AmdKernelMeta {
    /// Offset of the kernel descriptor in the loaded image.
    pub descriptor_offset: u32,
    /// Offset of the first instruction in the loaded image.
    pub entry_offset: u32,
    pub group_segment_fixed_size: u32,
    pub private_segment_fixed_size: u32,
    pub kernarg_size: u32,
    pub compute_pgm_rsrc1: u32,
    pub compute_pgm_rsrc2: u32,
    pub compute_pgm_rsrc3: u32,
    pub kernel_code_properties: u16,
    pub wavefront_size: u8,
    pub sgpr_count: u16,
    pub vgpr_count: u16,
}

/// Target-specific kernel metadata.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KernelMeta<'a> {
    Cpu(CpuKernelMeta),
    #[serde(borrow)]
    Ir3(Ir3KernelMeta<'a>),
    Amd(AmdKernelMeta),
    /// A kernel from Qualcomm's own OpenCL compiler (tinygrad `DEV=QCOM`, bundle format 2.1): the kernel's binary is
    /// the whole Qualcomm container and the Adreno device reads the launch layout from it when it loads the kernel
    /// (docs/hw/adreno-kgsl-pm4.md §9.1, §18).
    QcomCl,
}
