//! The model-bundle format (`.mrt`): one file a device can execute with no compiler present.
//!
//! # Layout
//! ```text
//! offset 0   Header (64 bytes, fixed, little-endian, outside postcard — see `header`)
//! offset 64  Body: postcard-encoded `Body` (target, producer, tables of buffers/kernels/steps/IO, reference)
//!            zero padding up to a multiple of 64
//! weights    One blob, 64-byte aligned in the file, holding the initial bytes of weight/state buffers
//! (2.2 on)   An optional 112-byte signature block, the last bytes of the file (see `signature`)
//! (2.3, flag 1) the body is followed by a `Multi` record, and the weights blob holds one complete
//!            single-target bundle per device role (see `multi`)
//! ```
//! In detail, after the postcard `Body`: (2.3 on) the `Table<IndexCheck>`, (2.4 on) the
//! `OutputMeta` record (output slices, checkpoint), (flag 1) the `Multi` record, then zero padding.
//! The body CRC-32 (IEEE, [`crate::crc32`]) in the header covers every byte after the header; the
//! header CRC-32 in its last 4 bytes covers the header itself (format 2.0 on). Nothing is copied
//! when a bundle is parsed: every string, kernel binary and weight slice borrows the input bytes.
//! Variable-length lists are [`Table`]s — an offset index plus concatenated postcard records — so a
//! reader needs no allocator and can look records up by index.
//!
//! # Evolution rules (append-only; this format is meant to be read for ten years)
//! 1. The header layout never changes in place. `header_len` lets a later major version grow it; from
//!    major 2 on, every header ends with a CRC-32 of the header bytes before it, so a reader can tell
//!    an intact header of an unknown major ("not supported") from a damaged one ("corrupt").
//! 2. A reader reads its own major ([`FORMAT_MAJOR`]) and the previous ones it keeps a reader for
//!    ([`LEGACY_MAJOR`]), and rejects any other.
//! 3. Within a major version, a new **minor** version may only *append* fields at the end of `Body`
//!    (postcard ignores trailing bytes, so an older reader still reads the prefix it knows), or add new
//!    enum variants *at the end* of an enum, or define a block after the weights blob (an older reader
//!    ignores bytes after the weights: 2.2's signature block). Existing fields, their order and their
//!    meaning never change. A writer stamps the lowest minor whose additions a file uses.
//!    A reader of minor `m` reading a file of minor `< m` must default the fields added later.
//! 4. Records inside tables never change shape within a major version; a new kind of record means a
//!    new table appended to `Body` (rule 3).
//! 5. The schema hash ([`SCHEMA_HASH`]) is FNV-1a-64 over [`SCHEMA`], the textual schema of this minor
//!    version. A reader checks it when the file's minor equals its own; `SCHEMA` must be edited with
//!    every schema change (a unit test pins the hash so a change cannot go unnoticed).
//! 6. Enum discriminants are postcard varints in declaration order: never reorder or remove variants.
//! 7. Validation rules may get stricter only with a new major version.
//!
//! # History
//! - 1.0: 56-byte header without a header CRC. Still read (see `header`); no longer written.
//! - 2.0: 64-byte header ending in a header CRC-32, so a damaged header reads as corruption rather
//!   than as a truncated file or a newer version. The body is unchanged.
//! - 2.1: `KernelMeta::QcomCl` appended: an Adreno kernel from Qualcomm's OpenCL compiler whose binary is the
//!   whole Qualcomm container (docs/hw/adreno-kgsl-pm4.md §9.1). 2.0 files read unchanged.
//! - 2.2: signed bundles: an Ed25519 signature block after the weights, the last bytes of the file
//!   (`signature`; docs/signing.md). A 2.1 reader reads a signed file (it ignores bytes after the
//!   weights); a 2.2 reader refuses anything after the weights of a 2.2 file but that block. The writer
//!   stamps the lowest minor a file needs: unsigned bundles are still written as 2.1, byte for byte.
//! - 2.3: three additions, each stamped only on a file that uses it (signed or not; every other
//!   bundle is still written as 2.1, or 2.2 when signed, byte for byte, and 2.1/2.2 files read
//!   unchanged). In every 2.3 file a `Table<IndexCheck>` follows the postcard `Body` (empty when there
//!   are no checks; rule 4: a new kind of record is a new table appended to the body):
//!   - range checks on integer inputs that index something (`IndexCheck`, [`Bundle::index_checks`]):
//!     `Executor::run` refuses an out-of-range value before any kernel runs (`crate::index_check`);
//!   - `Step::LaunchThreads`: a launch whose last work group per dimension may be partial (tinygrad's
//!     fractional global sizes on QCOM; docs/hw/adreno-kgsl-pm4.md "Fractional global sizes"); a 2.2
//!     reader refuses that step as an unknown variant rather than running it wrong;
//!   - bundles spanning several devices (`multi`): header flag 1 ([`FLAG_MULTI`]) and a `Multi` record
//!     after the index-check table naming the device roles, whose programs are complete single-target
//!     bundles (parts) in the weights blob, and the per-frame transfer plan between them. Readers before
//!     2.3 refuse the flag ("unknown header flags").
//!
//!   A 2.2 reader reads a 2.3 file without those three and ignores its (empty) check table.
//! - 2.4: named output slices (openpilot's `*_metadata.pkl` `output_slices`, `cargo xtask convert
//!   --metadata`, docs/openpilot-pickles.md) and the model checkpoint they belong to. In every 2.4 file
//!   an `OutputMeta` record follows the 2.3 index-check table (before the `Multi` record of a
//!   multi-device file): a `Table<OutputSlice>` — output index, name, `start..stop` elements along
//!   that output's last dimension ([`OutputSlice`], [`Bundle::output_slices`]) — then the checkpoint
//!   string ([`Bundle::checkpoint`], empty when none). Stamped only on a file that has slices or a
//!   checkpoint (every other bundle is written as before, 2.1/2.2/2.3 byte for byte; older files read
//!   unchanged with no slices). A 2.3 reader reads a single-target 2.4 file and ignores the record
//!   (it does not check a later minor's schema hash); the writer never puts slices in a multi-device
//!   container (only its parts could carry them), so no 2.3 reader meets a 2.4 `Multi` record.
//!
//! Only the `writer` module (behind the `alloc` feature, used by `xtask`) produces bundles.
mod decode;
mod error;
mod header;
mod in_place;
pub mod multi;
mod schema;
pub mod signature;
mod table;
mod validate;
#[cfg(feature = "alloc")]
pub mod writer;
#[cfg(all(feature = "alloc", feature = "multi"))]
pub mod writer_multi;

pub use error::BundleError;
pub use header::{
    Header, FLAG_MULTI, FORMAT_MAJOR, FORMAT_MINOR, HEADER_LEN, INDEX_CHECK_MINOR,
    LAUNCH_THREADS_MINOR, LEGACY_HEADER_LEN, LEGACY_MAJOR, MAGIC, MULTI_MINOR, OUTPUT_SLICE_MINOR,
    SCHEMA, SCHEMA_2_1_HASH, SCHEMA_2_2_HASH, SCHEMA_2_3_HASH, SCHEMA_HASH, UNSIGNED_MINOR,
};
pub use in_place::NotInPlace;
pub use multi::{Multi, Role, Xfer};
pub use schema::{
    ArgRef, Body, BufRef, BufferDesc, BufferKind, IndexCheck, KernelDesc, OutputMeta, OutputSlice,
    Producer, RefTensor, Reference, Step, TensorDesc, MAX_CHECKPOINT, MAX_DIMS, MAX_IO, MAX_SLICES,
    MAX_SLICE_NAME,
};
pub use signature::SignatureBlock;
pub use table::{Table, TableIter};

use crate::bundle::header::parse_header;

/// Required alignment of the weights blob inside the file.
pub const WEIGHTS_ALIGN: usize = 64;

/// A parsed and fully validated bundle, borrowing its bytes.
#[derive(Clone, Debug)]
pub struct Bundle<'a> {
    header: Header,
    body: Body<'a>,
    index_checks: Table<'a, IndexCheck<'a>>,
    output_meta: OutputMeta<'a>,
    weights: &'a [u8],
    bytes: &'a [u8],
    multi: Option<Multi<'a>>,
}

/// Decode the `Multi` record that follows the index-check table of a multi-device bundle. Without the
/// `multi` feature (a device build that runs one target) such a bundle is refused instead.
fn decode_multi<'a>(trailing: &'a [u8]) -> Result<Multi<'a>, BundleError> {
    #[cfg(feature = "multi")]
    {
        let (m, _) =
            decode::take_from_bytes::<Multi<'a>>(trailing).map_err(|_| BundleError::BodyDecode)?;
        Ok(m)
    }
    #[cfg(not(feature = "multi"))]
    {
        let _ = trailing;
        Err(NO_MULTI)
    }
}

/// The refusal of a multi-device bundle by a build without the `multi` feature.
#[cfg(not(feature = "multi"))]
const NO_MULTI: BundleError = BundleError::Invalid {
    what: "a multi-device bundle (this build of modelrt-core lacks the `multi` feature; load it on the host, which runs each part on its device)",
    index: 0,
};

impl<'a> Bundle<'a> {
    /// Parse and validate `bytes`. Every cross-reference is checked here, before anything runs: a
    /// bundle that parses can be executed without further bounds checks failing.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, BundleError> {
        Self::parse_with(bytes, true)
    }

    /// [`parse`](Self::parse) of a multi-device bundle's part: a single-target bundle (a part that is
    /// itself a container is refused, so nesting cannot recurse).
    pub fn parse_part(bytes: &'a [u8]) -> Result<Self, BundleError> {
        Self::parse_with(bytes, false)
    }

    fn parse_with(bytes: &'a [u8], allow_multi: bool) -> Result<Self, BundleError> {
        let header = parse_header(bytes)?;
        let is_multi = header.flags & FLAG_MULTI != 0;
        if is_multi && !allow_multi {
            return Err(BundleError::Invalid {
                what: "a part is itself a multi-device bundle",
                index: 0,
            });
        }
        let header_len = header.byte_len();
        let signed_end = signature::signed_end(bytes, &header)?;
        let rest = &bytes[header_len..signed_end];
        let weights_start = header
            .weights_offset
            .checked_sub(header_len as u64)
            .ok_or(BundleError::Layout("weights blob overlaps the header"))?;
        let weights_end = weights_start
            .checked_add(header.weights_len)
            .ok_or(BundleError::Layout("weights blob length overflows"))?;
        if weights_end > rest.len() as u64 {
            return Err(BundleError::Layout(
                "weights blob extends past the end of the file",
            ));
        }
        let body_bytes = &rest[..weights_start as usize];
        let weights = &rest[weights_start as usize..weights_end as usize];
        let (body, trailing) =
            decode::take_from_bytes::<Body<'a>>(body_bytes).map_err(|_| BundleError::BodyDecode)?;
        let (index_checks, trailing) =
            if header.major == FORMAT_MAJOR && header.minor >= INDEX_CHECK_MINOR {
                decode::take_from_bytes::<Table<'a, IndexCheck<'a>>>(trailing)
                    .map_err(|_| BundleError::BodyDecode)?
            } else {
                (Table::from_parts(0, &[], &[]), trailing)
            };
        let (output_meta, trailing) =
            if header.major == FORMAT_MAJOR && header.minor >= OUTPUT_SLICE_MINOR {
                decode::take_from_bytes::<OutputMeta<'a>>(trailing)
                    .map_err(|_| BundleError::BodyDecode)?
            } else {
                (
                    OutputMeta {
                        slices: Table::from_parts(0, &[], &[]),
                        checkpoint: "",
                    },
                    trailing,
                )
            };
        let multi = if is_multi {
            Some(decode_multi(trailing)?)
        } else {
            None
        };
        let bundle = Bundle {
            header,
            body,
            index_checks,
            output_meta,
            weights,
            bytes,
            multi,
        };
        let checked = validate::validate(&bundle).and_then(|()| match &bundle.multi {
            #[cfg(feature = "multi")]
            Some(m) => multi::validate_multi(&bundle, m),
            #[cfg(not(feature = "multi"))]
            Some(_) => Err(NO_MULTI),
            None => Ok(()),
        });
        if let Err(e) = checked {
            crate::log::warning!("bundle validation failed: {}", e);
            return Err(e);
        }
        Ok(bundle)
    }

    /// The fixed header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The multi-device record of a bundle spanning several devices (format 2.3), `None` for a
    /// single-target bundle (the one-device case).
    pub fn multi(&self) -> Option<&Multi<'a>> {
        self.multi.as_ref()
    }

    /// Role `i` of a multi-device bundle and its part, parsed (validated when `self` was parsed).
    #[cfg(feature = "multi")]
    pub fn part(&self, i: usize) -> Result<(Role<'a>, Bundle<'a>), BundleError> {
        let m = self.multi.as_ref().ok_or(BundleError::Invalid {
            what: "not a multi-device bundle",
            index: 0,
        })?;
        let role = m.roles.get(i)?;
        let bytes = multi::part_bytes(self.weights, &role).ok_or(BundleError::Invalid {
            what: "part lies outside the weights",
            index: i as u32,
        })?;
        Ok((role, Bundle::parse_part(bytes)?))
    }

    /// The decoded body.
    pub fn body(&self) -> &Body<'a> {
        &self.body
    }

    /// Range checks on index inputs (format 2.3; empty for older files and bundles without any).
    pub fn index_checks(&self) -> Table<'a, IndexCheck<'a>> {
        self.index_checks
    }

    /// Named slices of the outputs (format 2.4; empty for older files and bundles without any): each
    /// is elements `start..stop` along the last dimension of output `output`.
    pub fn output_slices(&self) -> Table<'a, OutputSlice<'a>> {
        self.output_meta.slices
    }

    /// The model checkpoint the output slices describe (format 2.4), `None` when the bundle has none.
    pub fn checkpoint(&self) -> Option<&'a str> {
        Some(self.output_meta.checkpoint).filter(|c| !c.is_empty())
    }

    /// Every byte of the file the bundle was parsed from (what a signature covers).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The signature block of a signed bundle (format 2.2; not verified here: see `crate::sign`).
    pub fn signature(&self) -> Option<SignatureBlock<'a>> {
        // `parse` checked that a block is where `signed_end` found one.
        match signature::signed_end(self.bytes, &self.header) {
            Ok(end) if end < self.bytes.len() => signature::read_block(self.bytes).ok().flatten(),
            _ => None,
        }
    }

    /// The weights blob (initial bytes of weight and state buffers).
    pub fn weights(&self) -> &'a [u8] {
        self.weights
    }

    /// Initial bytes of buffer `b`, if it has any.
    pub fn init_bytes(&self, b: &BufferDesc<'_>) -> Option<&'a [u8]> {
        let (start, len) = b.init?;
        // Validated in `validate`: the range lies inside the weights blob (so the casts and the sum
        // cannot overflow for a parsed bundle; they are checked for any other `BufferDesc`).
        let start = usize::try_from(start).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.weights.get(start..end)
    }

    /// Arena offset of byte `offset` of buffer `buffer`. Validation bounds every view a parsed
    /// bundle refers to by the arena size, so this fails only for references the bundle never makes.
    pub fn arena_offset(&self, buffer: u32, offset: u64) -> Result<u64, BundleError> {
        self.body
            .buffers
            .get(buffer as usize)?
            .arena_offset
            .checked_add(offset)
            .ok_or(BundleError::Invalid {
                what: "buffer view offset overflows",
                index: buffer,
            })
    }

    /// Index of the input named `name`.
    pub fn input_index(&self, name: &str) -> Option<usize> {
        self.body
            .inputs
            .iter()
            .position(|t| matches!(t, Ok(t) if t.name == name))
    }
}
