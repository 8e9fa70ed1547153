//! The only bundle writer (feature `alloc`), used by `xtask compile`/`convert`.
//!
//! It lays the buffers out in the arena ([`crate::plan`]), packs initial data into the 64-aligned
//! weights blob, encodes the body, fills the header and finally parses its own output with the
//! reader, so it can never emit a bundle the runtime would reject. Output is a pure function of the
//! spec: the same spec gives the same bytes.
//!
//! [`BundleSpec::new`] and its builder methods, [`launch`], [`whole`], [`f32_bytes`] and [`reseal`] are
//! the one way tests, fuzz targets and benchmarks assemble small bundles by hand.
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use modelrt_hal::target::{DType, Target};
use serde::Serialize;

use super::header::{
    schema_2, Header, FORMAT_MAJOR, HEADER_LEN, INDEX_CHECK_MINOR, LAUNCH_THREADS_MINOR,
    OUTPUT_SLICE_MINOR, SCHEMA_HASH, UNSIGNED_MINOR,
};
use super::schema::{
    ArgRef, Body, BufferDesc, BufferKind, IndexCheck, KernelDesc, OutputMeta, OutputSlice,
    Producer, RefTensor, Reference, Step, TensorDesc,
};
use super::signature::{
    signed_message, ALG_ED25519, SIGNATURE_BLOCK_LEN, SIGNATURE_MAGIC, SIGNED_MINOR,
};
use super::{Bundle, BundleError, Table, WEIGHTS_ALIGN};

/// Why a bundle could not be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// postcard could not encode a record.
    Encode,
    /// A table or the file exceeds the format's 32-bit index limits.
    TooLarge,
    /// Arena layout overflowed.
    Plan,
    /// The spec is inconsistent; the reader's message says how.
    Invalid(BundleError),
    /// The file would reach [`MAX_FILE_BYTES`] (its weights alone: `bytes`).
    FileTooLarge { bytes: u64 },
}

/// Largest bundle file the writer produces: 4 GiB − 1. Every offset and length of the format is 64-bit
/// (header lengths, weights ranges, arena offsets, views) except the table record offsets (32-bit,
/// within the body), but no larger bundle has been written, loaded or run, and 32-bit hosts (the
/// Hexagon DSP's) index weights with `usize`; so larger ones are refused at compile time
/// (docs/hw/amd-driver.md §6.2).
pub const MAX_FILE_BYTES: u64 = u32::MAX as u64;

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Encode => write!(f, "failed to encode a bundle record"),
            WriteError::TooLarge => write!(f, "bundle table exceeds 4 GiB"),
            WriteError::Plan => write!(f, "arena layout overflows 64 bits"),
            WriteError::Invalid(e) => write!(f, "refusing to write an invalid bundle: {e}"),
            WriteError::FileTooLarge { bytes } => write!(
                f,
                "the bundle would hold {bytes} bytes of weights and initial state: bundles of 4 GiB \
                 or more are refused (the format's offsets are 64-bit, but no such bundle has been \
                 loaded or run; docs/hw/amd-driver.md §6.2); use fewer or smaller weights"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for WriteError {}

/// A buffer as the writer takes it: the arena offset and weights range are computed.
#[derive(Clone, Debug)]
pub struct BufferSpec<'a> {
    pub label: &'a str,
    pub size: u64,
    pub dtype: DType,
    pub kind: BufferKind,
    /// Initial bytes (weights/state), at most `size`.
    pub init: Option<&'a [u8]>,
}

/// Reference data: one byte string per input and per output, in order.
#[derive(Clone, Debug)]
pub struct ReferenceSpec<'a> {
    pub seed: u64,
    pub atol: f32,
    pub rtol: f32,
    pub inputs: Vec<&'a [u8]>,
    pub outputs: Vec<&'a [u8]>,
}

/// Everything that goes into a bundle.
#[derive(Clone, Debug)]
pub struct BundleSpec<'a> {
    pub target: Target<'a>,
    pub producer: Producer<'a>,
    pub buffers: Vec<BufferSpec<'a>>,
    pub kernels: Vec<KernelDesc<'a>>,
    pub init: Vec<Step>,
    pub run: Vec<Step>,
    pub inputs: Vec<TensorDesc<'a>>,
    pub outputs: Vec<TensorDesc<'a>>,
    pub reference: Option<ReferenceSpec<'a>>,
    /// Range checks on index inputs (format 2.3; a bundle with none is written as before).
    pub index_checks: Vec<IndexCheck<'a>>,
    /// Named slices of the outputs (format 2.4; a bundle with none and no checkpoint is written as
    /// before).
    pub output_slices: Vec<OutputSlice<'a>>,
    /// The model checkpoint the slices describe (format 2.4; empty: none).
    pub checkpoint: &'a str,
}

impl<'a> BundleSpec<'a> {
    /// A spec for `target` made by `producer`, with no buffers, kernels, steps, tensors or reference
    /// yet: add them with the methods below (or push to the fields directly).
    pub fn new(target: Target<'a>, producer: Producer<'a>) -> Self {
        BundleSpec {
            target,
            producer,
            buffers: Vec::new(),
            kernels: Vec::new(),
            init: Vec::new(),
            run: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            reference: None,
            index_checks: Vec::new(),
            output_slices: Vec::new(),
            checkpoint: "",
        }
    }

    /// Add a buffer of `size` bytes (initial bytes `init` for weights and state); returns its index.
    pub fn buffer(
        &mut self,
        label: &'a str,
        size: u64,
        dtype: DType,
        kind: BufferKind,
        init: Option<&'a [u8]>,
    ) -> u32 {
        self.buffers.push(BufferSpec {
            label,
            size,
            dtype,
            kind,
            init,
        });
        (self.buffers.len() - 1) as u32
    }

    /// Add a kernel; returns its index.
    pub fn kernel(&mut self, kernel: KernelDesc<'a>) -> u32 {
        self.kernels.push(kernel);
        (self.kernels.len() - 1) as u32
    }

    /// Add graph input `name` (`dtype`, `shape`) at the start of buffer `buffer`.
    pub fn input(&mut self, name: &'a str, buffer: u32, dtype: DType, shape: &[u64]) -> &mut Self {
        self.inputs.push(tensor(name, buffer, dtype, shape));
        self
    }

    /// Add graph output `name` (`dtype`, `shape`) at the start of buffer `buffer`.
    pub fn output(&mut self, name: &'a str, buffer: u32, dtype: DType, shape: &[u64]) -> &mut Self {
        self.outputs.push(tensor(name, buffer, dtype, shape));
        self
    }
}

fn tensor<'a>(name: &'a str, buffer: u32, dtype: DType, shape: &[u64]) -> TensorDesc<'a> {
    TensorDesc {
        name,
        buffer,
        offset: 0,
        dtype,
        shape: shape.iter().copied().collect(),
    }
}

/// A launch of kernel `kernel` with `args` over `global` × `local` work items (at most
/// [`modelrt_hal::target::MAX_PARAMS`] arguments; more are dropped, and the writer then refuses the
/// bundle because the count differs from the kernel's parameters).
pub fn launch(kernel: u32, args: &[ArgRef], global: [u32; 3], local: [u32; 3]) -> Step {
    Step::Launch {
        kernel,
        args: args.iter().copied().collect(),
        global,
        local,
    }
}

/// The whole of buffer `buffer` (`size` bytes) as a launch argument.
pub fn whole(buffer: u32, size: u64) -> ArgRef {
    ArgRef::Buffer {
        buffer,
        offset: 0,
        size,
    }
}

/// Little-endian bytes of `values` (how the format stores f32 weights, inputs and references).
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The f32 values of little-endian bytes `bytes` (a trailing partial value is ignored).
pub fn bytes_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Accumulates postcard records into a [`Table`] encoding.
pub struct TableBuilder {
    index: Vec<u8>,
    data: Vec<u8>,
    count: u32,
}

impl TableBuilder {
    pub fn new() -> Self {
        TableBuilder {
            index: Vec::new(),
            data: Vec::new(),
            count: 0,
        }
    }

    /// Append one record.
    pub fn push<T: Serialize>(&mut self, record: &T) -> Result<(), WriteError> {
        let off = u32::try_from(self.data.len()).map_err(|_| WriteError::TooLarge)?;
        let bytes = postcard::to_allocvec(record).map_err(|_| WriteError::Encode)?;
        self.index.extend_from_slice(&off.to_le_bytes());
        self.data.extend_from_slice(&bytes);
        self.count = self.count.checked_add(1).ok_or(WriteError::TooLarge)?;
        Ok(())
    }

    /// Build from a list of records.
    pub fn of<T: Serialize>(records: &[T]) -> Result<Self, WriteError> {
        let mut t = TableBuilder::new();
        for r in records {
            t.push(r)?;
        }
        Ok(t)
    }

    /// A table view of what was pushed.
    pub fn view<'a, T: serde::Deserialize<'a>>(&'a self) -> Table<'a, T> {
        Table::from_parts(self.count, &self.index, &self.data)
    }
}

impl Default for TableBuilder {
    fn default() -> Self {
        Self::new()
    }
}

fn pad_to(v: &mut Vec<u8>, align: usize) {
    let n = v.len().next_multiple_of(align);
    v.resize(n, 0);
}

/// Encode `spec` as bundle bytes.
pub fn write_bundle(spec: &BundleSpec<'_>) -> Result<Vec<u8>, WriteError> {
    // Refuse an oversized file before copying any weights.
    let weights_len = spec
        .buffers
        .iter()
        .filter_map(|b| b.init)
        .try_fold(0u64, |n, d| {
            n.next_multiple_of(WEIGHTS_ALIGN as u64)
                .checked_add(d.len() as u64)
        })
        .ok_or(WriteError::FileTooLarge { bytes: u64::MAX })?;
    if weights_len >= MAX_FILE_BYTES {
        return Err(WriteError::FileTooLarge { bytes: weights_len });
    }
    let sizes: Vec<u64> = spec.buffers.iter().map(|b| b.size).collect();
    let mut offsets = vec![0u64; sizes.len()];
    let arena_size = crate::plan::plan_arena(&sizes, &mut offsets).ok_or(WriteError::Plan)?;

    let mut weights = Vec::new();
    let mut buffers = TableBuilder::new();
    for (b, off) in spec.buffers.iter().zip(&offsets) {
        let init = match b.init {
            Some(data) => {
                pad_to(&mut weights, WEIGHTS_ALIGN);
                let start = weights.len() as u64;
                weights.extend_from_slice(data);
                Some((start, data.len() as u64))
            }
            None => None,
        };
        buffers.push(&BufferDesc {
            label: b.label,
            size: b.size,
            dtype: b.dtype,
            kind: b.kind,
            arena_offset: *off,
            init,
        })?;
    }
    let kernels = TableBuilder::of(&spec.kernels)?;
    let init = TableBuilder::of(&spec.init)?;
    let run = TableBuilder::of(&spec.run)?;
    let inputs = TableBuilder::of(&spec.inputs)?;
    let outputs = TableBuilder::of(&spec.outputs)?;
    let (ref_in, ref_out) = match &spec.reference {
        Some(r) => {
            let wrap = |v: &[&[u8]]| -> Result<TableBuilder, WriteError> {
                let recs: Vec<RefTensor<'_>> = v.iter().map(|d| RefTensor { data: d }).collect();
                TableBuilder::of(&recs)
            };
            (Some(wrap(&r.inputs)?), Some(wrap(&r.outputs)?))
        }
        None => (None, None),
    };
    let reference = match (&spec.reference, &ref_in, &ref_out) {
        (Some(r), Some(i), Some(o)) => Some(Reference {
            seed: r.seed,
            atol: r.atol,
            rtol: r.rtol,
            inputs: i.view(),
            outputs: o.view(),
        }),
        _ => None,
    };
    let body = Body {
        target: spec.target,
        producer: spec.producer,
        arena_size,
        buffers: buffers.view(),
        kernels: kernels.view(),
        init: init.view(),
        run: run.view(),
        inputs: inputs.view(),
        outputs: outputs.view(),
        reference,
    };
    let checks = TableBuilder::of(&spec.index_checks)?;
    let slices = TableBuilder::of(&spec.output_slices)?;
    let meta =
        (!spec.output_slices.is_empty() || !spec.checkpoint.is_empty()).then(|| OutputMeta {
            slices: slices.view(),
            checkpoint: spec.checkpoint,
        });
    let out = seal_as(
        &body,
        Some(checks.view()),
        meta,
        &[],
        &weights,
        UNSIGNED_MINOR,
        0,
    )?;
    if out.len() as u64 > MAX_FILE_BYTES {
        return Err(WriteError::FileTooLarge {
            bytes: weights.len() as u64,
        });
    }
    Bundle::parse(&out).map_err(WriteError::Invalid)?;
    Ok(out)
}

/// Fix up the length, body CRC and header CRC of bundle bytes `bytes` (current format) after an edit,
/// so that the edit reaches the body decoder and the validator instead of stopping at a checksum.
/// Bytes shorter than a header are left alone. For tests and fuzzing; the writer seals its own output.
pub fn reseal(bytes: &mut [u8]) {
    if bytes.len() < HEADER_LEN {
        return;
    }
    let len = bytes.len() as u64;
    bytes[24..32].copy_from_slice(&len.to_le_bytes());
    let body_crc = crate::crc32::crc32(&bytes[HEADER_LEN..]);
    bytes[48..52].copy_from_slice(&body_crc.to_le_bytes());
    let header_crc = crate::crc32::crc32(&bytes[..HEADER_LEN - 4]);
    bytes[HEADER_LEN - 4..HEADER_LEN].copy_from_slice(&header_crc.to_le_bytes());
}

/// Lay out `body` and `weights` as bundle bytes — header (lengths, CRC, schema hash), body, padding,
/// weights blob — **without** validating them. [`write_bundle`] validates what it seals; tests use this
/// to build bundles that are well formed but invalid.
pub fn seal(body: &Body<'_>, weights: &[u8]) -> Result<Vec<u8>, WriteError> {
    // The lowest minor this file needs (an unsigned bundle is a 2.1 file, byte for byte).
    seal_as(body, None, None, &[], weights, UNSIGNED_MINOR, 0)
}

/// [`seal`] for a format 2.3 bundle: `checks` (its index checks) follow the body.
pub fn seal_with_checks(
    body: &Body<'_>,
    checks: Table<'_, IndexCheck<'_>>,
    weights: &[u8],
) -> Result<Vec<u8>, WriteError> {
    seal_as(body, Some(checks), None, &[], weights, INDEX_CHECK_MINOR, 0)
}

/// [`seal`] stamped at least `minor` with header `flags`: a 2.3 file gets its index-check table
/// (`checks`, or an empty one) right after the body, a 2.4 file (stamped when `meta` is given) its
/// output slices and checkpoint after that, then `record` (postcard bytes: a multi-device
/// container's `Multi` record, `writer_multi`).
pub(crate) fn seal_as(
    body: &Body<'_>,
    checks: Option<Table<'_, IndexCheck<'_>>>,
    meta: Option<OutputMeta<'_>>,
    record: &[u8],
    weights: &[u8],
    minor: u16,
    flags: u32,
) -> Result<Vec<u8>, WriteError> {
    // The lowest minor this file needs: 2.3 when a step is a `LaunchThreads`, when it has index
    // checks or when the caller asks for it (a multi-device container); else the caller's (an
    // unsigned bundle without any of those is a 2.1 file, byte for byte).
    let partial = |t: &Table<'_, Step>| {
        t.iter()
            .any(|s| matches!(s, Ok(Step::LaunchThreads { .. })))
    };
    let mut minor = minor;
    if partial(&body.init) || partial(&body.run) {
        minor = minor.max(LAUNCH_THREADS_MINOR);
    }
    if checks.is_some_and(|c| !c.is_empty()) {
        minor = minor.max(INDEX_CHECK_MINOR);
    }
    if meta.is_some() {
        minor = minor.max(OUTPUT_SLICE_MINOR);
    }
    let mut out = vec![0u8; HEADER_LEN];
    out.extend(postcard::to_allocvec(body).map_err(|_| WriteError::Encode)?);
    if minor >= INDEX_CHECK_MINOR {
        let checks = checks.unwrap_or(Table::from_parts(0, &[], &[]));
        out.extend(postcard::to_allocvec(&checks).map_err(|_| WriteError::Encode)?);
    }
    if minor >= OUTPUT_SLICE_MINOR {
        let meta = meta.unwrap_or(OutputMeta {
            slices: Table::from_parts(0, &[], &[]),
            checkpoint: "",
        });
        out.extend(postcard::to_allocvec(&meta).map_err(|_| WriteError::Encode)?);
    }
    out.extend_from_slice(record);
    pad_to(&mut out, WEIGHTS_ALIGN);
    let weights_offset = out.len() as u64;
    out.extend_from_slice(weights);
    let header = Header {
        major: FORMAT_MAJOR,
        minor,
        schema_hash: schema_hash_of(minor),
        total_len: out.len() as u64,
        weights_offset,
        weights_len: weights.len() as u64,
        body_crc: crate::crc32::crc32(&out[HEADER_LEN..]),
        flags,
    };
    out[..HEADER_LEN].copy_from_slice(&header.to_bytes());
    Ok(out)
}

/// The schema hash a file of `minor` (major 2) carries.
fn schema_hash_of(minor: u16) -> u64 {
    schema_2(minor).unwrap_or(SCHEMA_HASH)
}

/// Sign bundle `bytes` as the holder of Ed25519 public key `key`: the bundle is checked to parse,
/// becomes format 2.2 (or the file's own later minor: 2.3 with index checks, 2.4 with output slices; minor, schema hash, a signature block appended after the weights, replacing
/// an earlier signature) and `sign` is called with the message to sign (see
/// `bundle::signature::signed_message`); it returns the 64-byte Ed25519 signature. The CRCs are
/// sealed last. The result parses and carries `key`.
pub fn sign_bundle(
    bytes: &[u8],
    key: &[u8; 32],
    sign: impl FnOnce(&[u8]) -> [u8; 64],
) -> Result<Vec<u8>, WriteError> {
    let bundle = Bundle::parse(bytes).map_err(WriteError::Invalid)?;
    if bundle.header().major != FORMAT_MAJOR {
        return Err(WriteError::Invalid(BundleError::UnsupportedMajor {
            found: bundle.header().major,
            supported: FORMAT_MAJOR,
        }));
    }
    let end = bundle.signature().map_or(bytes.len(), |b| b.offset);
    let mut out = bytes[..end].to_vec();
    // 2.2, or the file's own minor if it is later (2.3: it carries index checks).
    let minor = bundle.header().minor.max(SIGNED_MINOR);
    let hash = schema_2(minor).ok_or(WriteError::Invalid(BundleError::Layout(
        "cannot sign a bundle of a later minor version than this writer knows",
    )))?;
    out[10..12].copy_from_slice(&minor.to_le_bytes());
    out[16..24].copy_from_slice(&hash.to_le_bytes());
    let offset = out.len();
    out.extend_from_slice(&SIGNATURE_MAGIC);
    out.extend_from_slice(&ALG_ED25519.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(key);
    out.resize(offset + SIGNATURE_BLOCK_LEN, 0);
    let total = out.len() as u64;
    out[24..32].copy_from_slice(&total.to_le_bytes());
    let message: Vec<u8> = signed_message(&out, offset).concat();
    let signature = sign(&message);
    out[offset + 44..offset + 108].copy_from_slice(&signature);
    reseal(&mut out);
    Bundle::parse(&out).map_err(WriteError::Invalid)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::schema::BufferKind;
    use modelrt_hal::target::CpuArch;

    fn spec<'a>() -> BundleSpec<'a> {
        BundleSpec::new(
            Target::Cpu {
                arch: CpuArch::X86_64,
                baseline: "x86-64-v3",
                features: 0,
            },
            Producer {
                tinygrad: "0.14.0",
                tinymesa: None,
                source_sha256: [0; 32],
                dev: "CPU",
                flags: "",
            },
        )
    }

    #[test]
    fn bundles_of_4_gib_or_more_are_refused_before_the_weights_are_copied() {
        // Two 2 GiB weights (zeroed allocations: the pages are never touched, because the writer
        // refuses from the lengths alone) pass 4 GiB only once the second is aligned after the first.
        let half = vec![0u8; 1 << 31];
        let mut s = spec();
        s.buffer("w0", 1 << 31, DType::U8, BufferKind::Weight, Some(&half));
        s.buffer("w1", 1 << 31, DType::U8, BufferKind::Weight, Some(&half));
        let e = write_bundle(&s).unwrap_err();
        assert_eq!(e, WriteError::FileTooLarge { bytes: 1 << 32 });
        let msg = alloc::format!("{e}");
        assert!(
            msg.contains("4294967296 bytes") && msg.contains("4 GiB"),
            "{msg}"
        );
        // A small spec gets past the size check (it fails later, for having no outputs).
        let small = [7u8; 64];
        let mut s = spec();
        s.buffer("w", 64, DType::U8, BufferKind::Weight, Some(&small));
        let e = write_bundle(&s).unwrap_err();
        assert!(matches!(e, WriteError::Invalid(_)), "{e:?}");
    }
}
