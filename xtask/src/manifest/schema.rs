//! The manifest's records as serde types (field names are the JSON contract, docs/hw/tinygrad-export.md §10); kernel
//! metadata uses hal's bundle types where they are the same record, so the two cannot drift.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The only manifest format this reader understands.
pub const FORMAT: u32 = 1;

/// Element types, spelled like numpy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Float32,
    Float16,
    Bfloat16,
    Float64,
    Int8,
    Uint8,
    Int16,
    Uint16,
    Int32,
    Uint32,
    Int64,
    Uint64,
    Bool,
}

impl DType {
    /// Size of one element in bytes.
    pub fn itemsize(self) -> u64 {
        match self {
            DType::Int8 | DType::Uint8 | DType::Bool => 1,
            DType::Float16 | DType::Bfloat16 | DType::Int16 | DType::Uint16 => 2,
            DType::Float32 | DType::Int32 | DType::Uint32 => 4,
            DType::Float64 | DType::Int64 | DType::Uint64 => 8,
        }
    }
}

/// Who produced the manifest and with which compile-affecting settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Producer {
    pub tinygrad: String,
    pub tinymesa: Option<String>,
    pub onnx_sha256: String,
    pub dev: String,
    pub renderer: String,
    pub flags: BTreeMap<String, String>,
}

/// Compilation target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    Cpu {
        arch: String,
        baseline: String,
    },
    Adreno {
        chip: u32,
        image: bool,
        half: bool,
    },
    Amd {
        gfx: String,
    },
    /// Qualcomm Hexagon DSP (`version` 65 = v65 with 128-byte HVX); kernels are shared objects with CPU meta.
    Hexagon {
        version: u32,
    },
}

/// Role of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BufferKind {
    Input,
    Output,
    Weight,
    State,
    Scratch,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buffer {
    pub id: usize,
    pub size: u64,
    pub dtype: DType,
    pub kind: BufferKind,
    /// Initial bytes (exactly `size`) for weight/state buffers.
    pub blob: Option<String>,
    pub label: String,
}

/// A model input or output bound to a buffer region.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorBinding {
    pub name: String,
    pub buffer: usize,
    pub offset: u64,
    pub shape: Vec<u64>,
    pub dtype: DType,
}

impl TensorBinding {
    /// Byte size of the tensor.
    pub fn nbytes(&self) -> u64 {
        self.shape.iter().product::<u64>() * self.dtype.itemsize()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    Buffer,
    Image,
    CoreId,
    Var,
}

/// One kernel parameter, in parameter order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    pub kind: ParamKind,
    pub dtype: DType,
    /// Image height in pixels (image params only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u64>,
    /// Image width in pixels, 4 channels each (image params only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u64>,
}

/// CPU (and Hexagon) kernel metadata: hal's bundle record itself (`threads`: the number of `core_id` values,
/// 1 when the kernel has no core_id). The kernel-meta records' schema is `super::meta_schema`.
pub use modelrt_hal::target::CpuKernelMeta as CpuMeta;

/// AMD kernel descriptor fields (docs/hw/tinygrad-export.md §8): hal's bundle record itself. Offsets are into the
/// image laid out by tinygrad's `elf_loader` (PROGBITS sections appended in header order, each aligned).
pub use modelrt_hal::target::AmdKernelMeta as AmdMeta;

/// Decoded mesa ir3 fields (docs/hw/adreno-kgsl-pm4.md §9.2): hal's [`modelrt_hal::target::Ir3KernelMeta`] with the
/// same field types, except that `immediates` names the blob holding them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ir3Meta {
    pub image_size: u32,
    pub fregs: u32,
    pub hregs: u32,
    pub branchstack: u32,
    pub pvtmem: u32,
    pub shmem: u32,
    pub wgid: u32,
    pub lid: u32,
    pub wgsz: u32,
    pub buf_off: u32,
    pub imm_off: u32,
    /// Blob with the u32 immediates to place at `imm_off`.
    pub immediates: String,
    pub tex_cnt: u32,
    pub ibo_cnt: u32,
    /// At most 32 entries of 0..=255 (hal's `heapless::Vec<u8, 32>`); more is refused when the manifest is read.
    pub tex_to_image: heapless::Vec<u8, 32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelMeta {
    Cpu(CpuMeta),
    Ir3(Ir3Meta),
    Amd(AmdMeta),
    /// A Qualcomm-compiled kernel (`DEV=QCOM` pickles): the binary blob is the whole Qualcomm container, which carries
    /// its own layout (docs/hw/adreno-kgsl-pm4.md §9.1). JSON: `{"qcomcl": {}}`.
    QcomCl {},
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kernel {
    pub name: String,
    pub entry: String,
    pub binary: String,
    pub source: Option<String>,
    pub params: Vec<Param>,
    pub meta: KernelMeta,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Runs once after weights are uploaded, before the first inference.
    Init,
    /// Runs on every inference.
    Run,
}

/// A kernel argument: a buffer view or an integer (core_id placeholder 0 / bound var value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Arg {
    Buffer {
        buffer: usize,
        offset: u64,
        size: u64,
    },
    Int {
        int: i64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    pub buffer: usize,
    pub offset: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum OpBody {
    Kernel {
        kernel: usize,
        args: Vec<Arg>,
        global: [u64; 3],
        local: [u64; 3],
        /// Items per dimension when the last work group is partial (a fractional tinygrad global size,
        /// docs/hw/adreno-kgsl-pm4.md "Fractional global sizes"); absent: `global * local`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threads: Option<[u64; 3]>,
    },
    Copy {
        dst: Location,
        src: Location,
        size: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    pub phase: Phase,
    #[serde(flatten)]
    pub body: OpBody,
}

/// Seeded inputs and onnxruntime outputs (raw little-endian bytes), keyed by tensor name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    pub seed: u64,
    pub inputs: BTreeMap<String, String>,
    pub outputs: BTreeMap<String, String>,
    pub atol: f64,
    pub rtol: f64,
}

/// The whole manifest. `blobs` is filled by [`Manifest::load`] with every referenced blob, keyed by its path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub producer: Producer,
    pub target: Target,
    pub buffers: Vec<Buffer>,
    pub inputs: Vec<TensorBinding>,
    pub outputs: Vec<TensorBinding>,
    pub kernels: Vec<Kernel>,
    pub ops: Vec<Op>,
    pub reference: Option<Reference>,
    /// Range checks on index inputs (absent: none); become the bundle's format 2.3 index checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub index_checks: Vec<IndexCheck>,
    /// Named slices of the outputs (openpilot metadata, `convert --metadata`; absent: none); become the
    /// bundle's format 2.4 output slices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_slices: Vec<OutputSlice>,
    /// The model checkpoint the slices describe (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    #[serde(skip)]
    pub blobs: BTreeMap<String, Vec<u8>>,
}

/// An integer input that indexes something: elements `phase, phase + period, …` must lie in
/// `min..=max` (core's `IndexCheck`, with the input by name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexCheck {
    pub input: String,
    pub period: u32,
    pub phase: u32,
    pub min: i64,
    pub max: i64,
    pub what: String,
}

/// Elements `start..stop` along the last dimension of output `output` (by name), called `name` (core's
/// `OutputSlice`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputSlice {
    pub output: String,
    pub name: String,
    pub start: u64,
    pub stop: u64,
}
