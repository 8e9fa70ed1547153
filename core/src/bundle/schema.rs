//! The bundle body's record types (see `SCHEMA` in `header.rs` for the textual form).
use modelrt_hal::target::{DType, KernelMeta, ParamDesc, Target, MAX_PARAMS};
use serde::{Deserialize, Serialize};

use super::table::Table;

/// Maximum tensor rank.
pub const MAX_DIMS: usize = 8;
/// Maximum number of named inputs and of named outputs.
pub const MAX_IO: usize = 32;

/// The body: everything but the fixed header and the weights blob.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Body<'a> {
    #[serde(borrow)]
    pub target: Target<'a>,
    #[serde(borrow)]
    pub producer: Producer<'a>,
    /// Size of the device arena every buffer lives in.
    pub arena_size: u64,
    #[serde(borrow)]
    pub buffers: Table<'a, BufferDesc<'a>>,
    #[serde(borrow)]
    pub kernels: Table<'a, KernelDesc<'a>>,
    /// Steps run once after the weights are uploaded (tinygrad's pruned one-time calls).
    #[serde(borrow)]
    pub init: Table<'a, Step>,
    /// Steps run on every inference, in order.
    #[serde(borrow)]
    pub run: Table<'a, Step>,
    #[serde(borrow)]
    pub inputs: Table<'a, TensorDesc<'a>>,
    #[serde(borrow)]
    pub outputs: Table<'a, TensorDesc<'a>>,
    /// Optional self-check data.
    #[serde(borrow)]
    pub reference: Option<Reference<'a>>,
}

/// Who produced the bundle, from what.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Producer<'a> {
    /// tinygrad version used as the kernel compiler.
    pub tinygrad: &'a str,
    /// tinymesa version (IR3 targets).
    pub tinymesa: Option<&'a str>,
    /// SHA-256 of the source model file (ONNX or pickle).
    pub source_sha256: [u8; 32],
    /// tinygrad device string used to compile (e.g. `CPU:CLANG:x86_64,x86-64-v3`).
    pub dev: &'a str,
    /// Compile-affecting flags, `KEY=VALUE` separated by spaces, sorted.
    pub flags: &'a str,
}

/// What a buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BufferKind {
    /// Read-only initial data.
    Weight,
    /// Initial data that the model also writes (recurrent state): persists across runs.
    State,
    /// Filled from a named input before each run.
    Input,
    /// Read into a named output after each run.
    Output,
    /// Temporary.
    Scratch,
}

/// One buffer, placed at a fixed offset in the device arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferDesc<'a> {
    /// Human-readable origin (`onnx:conv1.weight`, `arena`, `input:img`).
    pub label: &'a str,
    pub size: u64,
    pub dtype: DType,
    pub kind: BufferKind,
    pub arena_offset: u64,
    /// `(offset, len)` of the initial bytes in the weights blob.
    pub init: Option<(u64, u64)>,
}

/// One compiled kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelDesc<'a> {
    pub name: &'a str,
    pub entry: &'a str,
    #[serde(borrow)]
    pub binary: &'a [u8],
    pub source: Option<&'a str>,
    pub params: heapless::Vec<ParamDesc, MAX_PARAMS>,
    #[serde(borrow)]
    pub meta: KernelMeta<'a>,
}

/// A launch argument referring to a buffer view or an integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArgRef {
    Buffer { buffer: u32, offset: u64, size: u64 },
    Int(i32),
}

/// A position inside a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufRef {
    pub buffer: u32,
    pub offset: u64,
}

/// One scheduled operation.
// `Launch` carries its arguments inline so decoding needs no allocator; steps are decoded one at a
// time at load, so the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Step {
    Launch {
        kernel: u32,
        args: heapless::Vec<ArgRef, MAX_PARAMS>,
        global: [u32; 3],
        local: [u32; 3],
    },
    Copy {
        dst: BufRef,
        src: BufRef,
        size: u64,
    },
    /// Format 2.3: a launch of `global` work groups of `local` items of which only the first `threads[d]`
    /// items of each dimension run, `(global[d] - 1) * local[d] < threads[d] <= global[d] * local[d]` (the
    /// last group of a dimension is partial). tinygrad's QCOM path launches fractional global sizes this
    /// way (docs/hw/adreno-kgsl-pm4.md, "Fractional global sizes"); backends that cannot run partial
    /// groups refuse it at load.
    LaunchThreads {
        kernel: u32,
        args: heapless::Vec<ArgRef, MAX_PARAMS>,
        global: [u32; 3],
        local: [u32; 3],
        threads: [u32; 3],
    },
}

/// A named input or output tensor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorDesc<'a> {
    pub name: &'a str,
    pub buffer: u32,
    pub offset: u64,
    pub dtype: DType,
    pub shape: heapless::Vec<u64, MAX_DIMS>,
}

impl TensorDesc<'_> {
    /// Number of elements. Saturates at `u64::MAX`, which no buffer can hold; a validated bundle's
    /// tensors never saturate (validation checks the product without overflow).
    pub fn numel(&self) -> u64 {
        self.shape
            .iter()
            .try_fold(1u64, |acc, &n| acc.checked_mul(n))
            .unwrap_or(u64::MAX)
    }

    /// Size in bytes, saturating like [`numel`](Self::numel).
    pub fn byte_len(&self) -> u64 {
        self.numel().saturating_mul(self.dtype.size() as u64)
    }
}

/// A range check on an integer input (format 2.3): the elements `phase`, `phase + period`, … of
/// input `input` (flat, row-major) must lie in `min..=max`, else `run` refuses before any kernel
/// runs (`crate::index_check`). The compile writes one per graph input an index operand reads
/// (Gather's indices, ScatterND's last axis, …) with ONNX's valid range, negative indices included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexCheck<'a> {
    /// Index into the bundle's inputs.
    pub input: u32,
    /// Stride between checked elements (1: every element).
    pub period: u32,
    /// First checked element (less than `period`).
    pub phase: u32,
    /// Smallest valid value.
    pub min: i64,
    /// Largest valid value.
    pub max: i64,
    /// What the value indexes, for the refusal (`indices of Gather 'g' into axis 0 of 'table'`).
    pub what: &'a str,
}

/// Longest output-slice name (bytes, format 2.4).
pub const MAX_SLICE_NAME: usize = 128;
/// Most output slices one bundle holds (format 2.4).
pub const MAX_SLICES: usize = 256;
/// Longest checkpoint string (bytes, format 2.4).
pub const MAX_CHECKPOINT: usize = 256;

/// A named part of an output (format 2.4; openpilot's `output_slices`): the elements
/// `start..stop` along the **last** dimension of output `output`, for every index of the dimensions
/// before it. For an output of shape `(1, 1000)`, `plan 0..990` is elements 0..990 of the flat output;
/// for `(2, 1000)` it is those of each of the two rows. Always `start < stop <= last dimension`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputSlice<'a> {
    /// Index into the bundle's outputs.
    pub output: u32,
    /// The slice's name: non-empty, at most [`MAX_SLICE_NAME`] bytes, unique in the bundle.
    pub name: &'a str,
    /// First element along the last dimension.
    pub start: u64,
    /// One past the last element along the last dimension.
    pub stop: u64,
}

/// What follows the index checks in every format 2.4 file: the output slices and the model
/// checkpoint they describe (openpilot's `model_checkpoint`; empty when none was given), at most
/// [`MAX_CHECKPOINT`] bytes.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct OutputMeta<'a> {
    #[serde(borrow)]
    pub slices: Table<'a, OutputSlice<'a>>,
    pub checkpoint: &'a str,
}

/// Reference inputs and expected outputs, so a bundle can check itself.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Reference<'a> {
    /// Seed the inputs were drawn with.
    pub seed: u64,
    pub atol: f32,
    pub rtol: f32,
    /// One record per bundle input, in input order.
    #[serde(borrow)]
    pub inputs: Table<'a, RefTensor<'a>>,
    /// One record per bundle output, in output order.
    #[serde(borrow)]
    pub outputs: Table<'a, RefTensor<'a>>,
}

/// Raw little-endian tensor bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefTensor<'a> {
    #[serde(borrow)]
    pub data: &'a [u8],
}
