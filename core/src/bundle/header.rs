//! The fixed 64-byte bundle header, outside postcard so that any future reader can identify a file.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `\x89MRT\r\n\x1a\n` (catches text-mode and truncation damage, like PNG's) |
//! | 8 | 2 | format major |
//! | 10 | 2 | format minor |
//! | 12 | 4 | header length (64) |
//! | 16 | 8 | schema hash (FNV-1a-64 of [`SCHEMA`]) |
//! | 24 | 8 | total file length |
//! | 32 | 8 | weights blob offset (from file start, 64-aligned) |
//! | 40 | 8 | weights blob length |
//! | 48 | 4 | CRC-32 (IEEE) of every byte after the header |
//! | 52 | 4 | flags: 0, or [`FLAG_MULTI`] (bit 0, format 2.3) for a bundle spanning several devices |
//! | 56 | 4 | reserved (0) |
//! | 60 | 4 | header CRC-32 (IEEE) of header bytes 0..60 |
//!
//! The header CRC (format 2.0 on) makes a damaged header read as damage: without it a flipped bit in
//! the length or version field reads as a truncated download or a newer format. From major 2 on,
//! every header ends with the CRC-32 of the header bytes before it, wherever `header length` puts
//! that end, so a reader can tell a later major (intact header, unknown version) from corruption.
//!
//! A reader refuses flags it does not know ("unknown header flags"), so the multi-device flag keeps
//! every 2.1/2.2 reader out of a multi-device bundle (it could only misread one: its top-level body
//! holds no kernels). A signature is found by the minor version, not a flag.
//!
//! Format 1.x (written until format 2.0, still read): bytes 0..56 as above with header length 56,
//! major 1, and no header CRC; its schema hash is that of [`SCHEMA`] with the first line reading
//! `modelrt bundle 1.0` (the body did not change).
use super::BundleError;
use crate::crc32::crc32;

/// File magic.
pub const MAGIC: [u8; 8] = *b"\x89MRT\r\n\x1a\n";
/// Format major version this crate writes (it also reads [`LEGACY_MAJOR`]).
pub const FORMAT_MAJOR: u16 = 2;
/// Newest format minor version this crate reads and writes: 2.4, which adds named output slices and
/// a model checkpoint (`Bundle::output_slices`); 2.3 added range checks on index inputs
/// (`Bundle::index_checks`), bundles spanning several devices (see `multi`) and
/// `Step::LaunchThreads` (partial work groups); 2.2 is a signed bundle (see `signature`).
pub const FORMAT_MINOR: u16 = 4;
/// The minor version that added the output-slice record after the index-check table (2.4; in every
/// 2.4 file, stamped only on a file with slices or a checkpoint).
pub const OUTPUT_SLICE_MINOR: u16 = 4;
/// Schema hash of format 2.3 files: FNV-1a-64 of [`SCHEMA`] with its first line `modelrt bundle 2.3`
/// and without the `OutputSlices` and `OutputSlice` lines format 2.4 appended (a unit test derives it).
pub const SCHEMA_2_3_HASH: u64 = 0x92ee_9e27_52e1_d040;
/// The minor version that added the index-check table after the body (2.3; in every 2.3 file,
/// empty when the bundle has no checks).
pub const INDEX_CHECK_MINOR: u16 = 3;
/// The minor version of a multi-device bundle (header flag [`FLAG_MULTI`], the `Multi` record).
pub const MULTI_MINOR: u16 = 3;
/// The minor version of a file that uses `Step::LaunchThreads`.
pub const LAUNCH_THREADS_MINOR: u16 = 3;
/// Header flag: the index-check table is followed by a `Multi` record and the weights blob holds one
/// complete single-target bundle per device role (format 2.3, see `multi`).
pub const FLAG_MULTI: u32 = 1;
/// Schema hash of format 2.2 files: FNV-1a-64 of [`SCHEMA`] with its first line `modelrt bundle 2.2`
/// and without what format 2.3 appended (the `IndexChecks`, `IndexCheck`, `Multi`, `Role` and `Xfer`
/// lines and the `LaunchThreads` step variant; a unit test derives it).
pub const SCHEMA_2_2_HASH: u64 = 0x4503_f6b6_902f_c4b6;
/// The minor version the writer stamps on an unsigned bundle: the lowest one whose features the file
/// uses, so that every 2.1 reader reads it and unsigned bundles stay byte-identical to 2.1's.
pub const UNSIGNED_MINOR: u16 = 1;
/// Schema hash of format 2.1 files: FNV-1a-64 of [`SCHEMA`] with its first line `modelrt bundle 2.1`
/// and without the `Signature` line (a unit test derives it).
pub const SCHEMA_2_1_HASH: u64 = 0x701a_a52a_3565_304a;
/// Length of the fixed header this crate writes.
pub const HEADER_LEN: usize = 64;
/// The previous major version, still read: its header is [`LEGACY_HEADER_LEN`] bytes without a CRC.
pub const LEGACY_MAJOR: u16 = 1;
/// Header length of [`LEGACY_MAJOR`] files.
pub const LEGACY_HEADER_LEN: usize = 56;
/// Schema hash of format 1.0 files: FNV-1a-64 of [`SCHEMA`] with its first line `modelrt bundle 1.0`.
const LEGACY_SCHEMA_HASH: u64 = 0xc1b7_4901_3beb_69a1;
/// Largest header length a later major may use and this reader still checks for a header CRC.
const MAX_HEADER_LEN: usize = 4096;
/// Offset of the header CRC in a [`HEADER_LEN`]-byte header.
const HEADER_CRC_AT: usize = HEADER_LEN - 4;

/// The textual schema of the body for this minor version; its hash goes into every header.
/// Edit it together with any change to `schema.rs` or the `modelrt_hal::target` types.
pub const SCHEMA: &str = "modelrt bundle 2.4
Body{target:Target,producer:Producer,arena_size:u64,buffers:Table<BufferDesc>,kernels:Table<KernelDesc>,\
init:Table<Step>,run:Table<Step>,inputs:Table<TensorDesc>,outputs:Table<TensorDesc>,reference:Option<Reference>}
Table{count:u32,index:bytes(u32le*count),data:bytes}
Target=Cpu{arch:CpuArch{X86_64,Aarch64},baseline:str,features:u64}|Adreno{chip:u32,image:bool,half:bool}|Amd{gfx:u32}|Hexagon{version:u32}
Producer{tinygrad:str,tinymesa:Option<str>,source_sha256:[u8;32],dev:str,flags:str}
BufferDesc{label:str,size:u64,dtype:DType,kind:BufferKind{Weight,State,Input,Output,Scratch},arena_offset:u64,init:Option<(u64,u64)>}
DType{F32,F16,BF16,F64,I8,U8,I16,U16,I32,U32,I64,U64,Bool}
KernelDesc{name:str,entry:str,binary:bytes,source:Option<str>,params:Vec<ParamDesc;64>,meta:KernelMeta}
ParamDesc{kind:ParamKind{Buffer,Image{height:u32,width:u32},CoreId,Var},dtype:DType}
KernelMeta=Cpu{threads:u32}|Ir3{image_size,fregs,hregs,branchstack,pvtmem,shmem,wgid,lid,wgsz,buf_off,imm_off:u32,immediates:bytes,tex_cnt,ibo_cnt:u32,tex_to_image:Vec<u8;32>}\
|Amd{descriptor_offset,entry_offset,group_segment_fixed_size,private_segment_fixed_size,kernarg_size,compute_pgm_rsrc1,compute_pgm_rsrc2,compute_pgm_rsrc3:u32,kernel_code_properties:u16,wavefront_size:u8,sgpr_count,vgpr_count:u16}|QcomCl
Step=Launch{kernel:u32,args:Vec<ArgRef;64>,global:[u32;3],local:[u32;3]}|Copy{dst:BufRef,src:BufRef,size:u64}\
|LaunchThreads{kernel:u32,args:Vec<ArgRef;64>,global:[u32;3],local:[u32;3],threads:[u32;3]}
ArgRef=Buffer{buffer:u32,offset:u64,size:u64}|Int(i32)
BufRef{buffer:u32,offset:u64}
TensorDesc{name:str,buffer:u32,offset:u64,dtype:DType,shape:Vec<u64;8>}
Reference{seed:u64,atol:f32,rtol:f32,inputs:Table<RefTensor>,outputs:Table<RefTensor>}
RefTensor{data:bytes}
Signature(last 112 bytes, after the weights)={magic:[u8;8],alg:u16,reserved:u16,key:[u8;32],sig:[u8;64],reserved:u32}
IndexChecks(2.3: always, right after Body)=Table<IndexCheck>
IndexCheck{input:u32,period:u32,phase:u32,min:i64,max:i64,what:str}
Multi(after IndexChecks, header flag 1)={roles:Table<Role>,plan:Table<Xfer>}
Role{name:str,target:Target,part:(u64,u64)}
Xfer=Load{role:u32,input:u32,host:u32}|Run{role:u32}|Store{role:u32,output:u32,host:u32}
OutputSlices(2.4: always, after IndexChecks, before Multi)={slices:Table<OutputSlice>,checkpoint:str}
OutputSlice{output:u32,name:str,start:u64,stop:u64}
";

/// FNV-1a-64 of [`SCHEMA`].
pub const SCHEMA_HASH: u64 = fnv1a64(FNV_OFFSET, SCHEMA.as_bytes());

/// FNV-1a-64's initial state.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a-64 of `bytes`, continuing from `hash` ([`FNV_OFFSET`] for a fresh hash).
const fn fnv1a64(mut hash: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// The decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub major: u16,
    pub minor: u16,
    pub schema_hash: u64,
    pub total_len: u64,
    pub weights_offset: u64,
    pub weights_len: u64,
    pub body_crc: u32,
    pub flags: u32,
}

impl Header {
    /// Encode to the fixed little-endian layout of this format ([`HEADER_LEN`] bytes, header CRC
    /// last).
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..10].copy_from_slice(&self.major.to_le_bytes());
        out[10..12].copy_from_slice(&self.minor.to_le_bytes());
        out[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        out[16..24].copy_from_slice(&self.schema_hash.to_le_bytes());
        out[24..32].copy_from_slice(&self.total_len.to_le_bytes());
        out[32..40].copy_from_slice(&self.weights_offset.to_le_bytes());
        out[40..48].copy_from_slice(&self.weights_len.to_le_bytes());
        out[48..52].copy_from_slice(&self.body_crc.to_le_bytes());
        out[52..56].copy_from_slice(&self.flags.to_le_bytes());
        let crc = crc32(&out[..HEADER_CRC_AT]);
        out[HEADER_CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Length of this header in the file: [`LEGACY_HEADER_LEN`] for format 1.x, else [`HEADER_LEN`].
    pub fn byte_len(&self) -> usize {
        if self.major == LEGACY_MAJOR {
            LEGACY_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The schema hash a format 2.x file of `minor` carries, for the minors this reader knows (a later
/// minor only appended to the schema, evolution rule 3: its hash is not checked).
pub(crate) fn schema_2(minor: u16) -> Option<u64> {
    match minor {
        UNSIGNED_MINOR => Some(SCHEMA_2_1_HASH),
        2 => Some(SCHEMA_2_2_HASH),
        3 => Some(SCHEMA_2_3_HASH),
        FORMAT_MINOR => Some(SCHEMA_HASH),
        _ => None,
    }
}

/// True if `bytes` holds a `len`-byte header whose last 4 bytes are the CRC-32 of the bytes before.
fn header_crc_ok(bytes: &[u8], len: usize) -> bool {
    len >= 20 && bytes.len() >= len && crc32(&bytes[..len - 4]) == le_u32(bytes, len - 4)
}

/// Check the header of `bytes` (magic, header integrity, version, length, body checksum, schema) in
/// that order, so the error names the first thing that is wrong.
pub(crate) fn parse_header(bytes: &[u8]) -> Result<Header, BundleError> {
    if bytes.len() < 8 || bytes[0..8] != MAGIC {
        return if bytes.len() >= 8 || !MAGIC.starts_with(bytes) {
            Err(BundleError::BadMagic)
        } else {
            Err(BundleError::TooShort { len: bytes.len() })
        };
    }
    if bytes.len() < 16 {
        return Err(BundleError::TooShort { len: bytes.len() });
    }
    let major = le_u16(bytes, 8);
    let header_len = le_u32(bytes, 12);
    let (len, legacy) = if major == LEGACY_MAJOR && header_len as usize == LEGACY_HEADER_LEN {
        // Format 1.x has no header CRC: its fields are taken as they are.
        if bytes.len() < LEGACY_HEADER_LEN {
            return Err(BundleError::TooShort { len: bytes.len() });
        }
        (LEGACY_HEADER_LEN, true)
    } else if header_crc_ok(bytes, HEADER_LEN) {
        if major != FORMAT_MAJOR {
            return Err(BundleError::UnsupportedMajor {
                found: major,
                supported: FORMAT_MAJOR,
            });
        }
        if header_len as usize != HEADER_LEN {
            return Err(BundleError::BadHeaderLen(header_len));
        }
        if le_u32(bytes, 56) != 0 {
            return Err(BundleError::Layout("reserved header bytes are not zero"));
        }
        (HEADER_LEN, false)
    } else if (header_len as usize) <= MAX_HEADER_LEN && header_crc_ok(bytes, header_len as usize) {
        // An intact header of another length: a later major grew it (evolution rule 1).
        return Err(BundleError::UnsupportedMajor {
            found: major,
            supported: FORMAT_MAJOR,
        });
    } else if bytes.len() < HEADER_LEN && major == FORMAT_MAJOR && header_len as usize == HEADER_LEN
    {
        return Err(BundleError::TooShort { len: bytes.len() });
    } else {
        return Err(BundleError::HeaderCorrupt);
    };
    let header = Header {
        major,
        minor: le_u16(bytes, 10),
        schema_hash: le_u64(bytes, 16),
        total_len: le_u64(bytes, 24),
        weights_offset: le_u64(bytes, 32),
        weights_len: le_u64(bytes, 40),
        body_crc: le_u32(bytes, 48),
        flags: le_u32(bytes, 52),
    };
    if header.total_len != bytes.len() as u64 {
        return Err(BundleError::LengthMismatch {
            header: header.total_len,
            actual: bytes.len() as u64,
        });
    }
    let computed = crc32(&bytes[len..]);
    if computed != header.body_crc {
        return Err(BundleError::ChecksumMismatch {
            stored: header.body_crc,
            computed,
        });
    }
    let expected = if legacy {
        (header.minor == 0).then_some(LEGACY_SCHEMA_HASH)
    } else {
        schema_2(header.minor)
    };
    if let Some(expected) = expected {
        if header.schema_hash != expected {
            return Err(BundleError::SchemaMismatch {
                stored: header.schema_hash,
                expected,
            });
        }
    }
    if !header
        .weights_offset
        .is_multiple_of(super::WEIGHTS_ALIGN as u64)
    {
        return Err(BundleError::Layout("weights blob is not 64-byte aligned"));
    }
    // The multi-device flag exists from 2.3 on; any other bit is unknown.
    let known = if !legacy && header.minor >= MULTI_MINOR {
        FLAG_MULTI
    } else {
        0
    };
    if header.flags & !known != 0 {
        return Err(BundleError::Layout("unknown header flags"));
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_published_vectors() {
        // Test vectors from the FNV reference (draft-eastlake-fnv): "" and "a" and "foobar".
        assert_eq!(fnv1a64(FNV_OFFSET, b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(FNV_OFFSET, b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(FNV_OFFSET, b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn schema_hash_is_pinned() {
        // Changing the schema text must be a deliberate act: update this value and FORMAT_MINOR/MAJOR
        // according to the evolution rules in `bundle`'s module doc.
        // The value was computed independently (a Python FNV-1a over the schema text).
        assert_eq!(SCHEMA_HASH, SCHEMA_2_4_PINNED);
        assert_eq!(SCHEMA.lines().next(), Some("modelrt bundle 2.4"));
    }

    /// SCHEMA_HASH of format 2.4, computed independently (a Python FNV-1a over the schema text).
    const SCHEMA_2_4_PINNED: u64 = 0xf203_1291_c2ec_b3cc;

    /// Format 2.3's schema text: today's with the first line `modelrt bundle 2.3` and without the
    /// `OutputSlices`/`OutputSlice` lines format 2.4 appended.
    fn schema_2_3() -> alloc::string::String {
        let body: alloc::vec::Vec<&str> = SCHEMA
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with("OutputSlice"))
            .collect();
        alloc::format!("modelrt bundle 2.3\n{}\n", body.join("\n"))
    }

    #[test]
    fn schema_2_3_hash_is_the_2_3_schema() {
        // The value 2.3 files carry: it was `SCHEMA_HASH` (pinned as 0x92ee_9e27_52e1_d040) until 2.4.
        assert_eq!(
            fnv1a64(FNV_OFFSET, schema_2_3().as_bytes()),
            SCHEMA_2_3_HASH
        );
        assert_eq!(SCHEMA_2_3_HASH, 0x92ee_9e27_52e1_d040);
    }

    /// The `LaunchThreads` variant format 2.3 appended to `Step`.
    const LAUNCH_THREADS: &str =
        "|LaunchThreads{kernel:u32,args:Vec<ArgRef;64>,global:[u32;3],local:[u32;3],threads:[u32;3]}";

    /// Format 2.2's schema text: 2.3's with the first line `modelrt bundle 2.2` and without what
    /// format 2.3 appended (the `IndexChecks`, `IndexCheck`, `Multi`, `Role`, `Xfer` lines and the
    /// `LaunchThreads` variant).
    fn schema_2_2() -> alloc::string::String {
        let s23 = schema_2_3();
        assert!(s23.contains(LAUNCH_THREADS));
        let body: alloc::vec::Vec<&str> = s23
            .lines()
            .skip(1)
            .filter(|l| {
                !["IndexCheck", "Multi", "Role", "Xfer"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .collect();
        alloc::format!("modelrt bundle 2.2\n{}\n", body.join("\n")).replace(LAUNCH_THREADS, "")
    }

    #[test]
    fn schema_2_2_hash_is_the_2_2_schema() {
        // The value 2.2 (signed) files carry: it was `SCHEMA_HASH` until format 2.3 and was pinned then.
        assert_eq!(
            fnv1a64(FNV_OFFSET, schema_2_2().as_bytes()),
            SCHEMA_2_2_HASH
        );
    }

    /// Format 2.1's schema text: 2.2's with the first line `modelrt bundle 2.1` and without the
    /// `Signature` line format 2.2 appended.
    fn schema_2_1() -> alloc::string::String {
        let s22 = schema_2_2();
        let body: alloc::vec::Vec<&str> = s22
            .lines()
            .skip(1)
            .filter(|l| {
                !["Signature", "Multi", "Role", "Xfer"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .collect();
        alloc::format!("modelrt bundle 2.1\n{}\n", body.join("\n"))
    }

    #[test]
    fn schema_2_1_hash_is_the_2_1_schema() {
        // The value 2.1 files carry (it was `SCHEMA_HASH` until format 2.2).
        assert_eq!(
            fnv1a64(FNV_OFFSET, schema_2_1().as_bytes()),
            SCHEMA_2_1_HASH
        );
    }

    #[test]
    fn legacy_schema_hash_is_the_same_body_schema_as_1_0() {
        // Format 1.0's schema text is today's with the first line `modelrt bundle 1.0`; its hash is the
        // value format 1.0 files carry (core/tests/fixtures/format-1.0.mrt, bytes 16..24).
        // Format 2.1 only appended the `QcomCl` kernel-metadata variant (evolution rule 3).
        let schema = schema_2_1();
        let first = schema.find('\n').unwrap();
        let body_2_0 = schema[first..].replace("|QcomCl\n", "\n");
        assert_eq!(body_2_0.len() + "|QcomCl".len(), schema.len() - first);
        let h = fnv1a64(FNV_OFFSET, b"modelrt bundle 1.0");
        assert_eq!(fnv1a64(h, body_2_0.as_bytes()), LEGACY_SCHEMA_HASH);
    }

    #[test]
    fn header_layout_round_trips() {
        let h = Header {
            major: 2,
            minor: 0,
            schema_hash: 0x1122334455667788,
            total_len: 0x99,
            weights_offset: 0x40,
            weights_len: 7,
            body_crc: 0xdeadbeef,
            flags: 0,
        };
        let b = h.to_bytes();
        assert_eq!(&b[0..8], b"\x89MRT\r\n\x1a\n");
        assert_eq!(b[12], 64);
        assert_eq!(&b[48..52], &[0xef, 0xbe, 0xad, 0xde]);
        assert_eq!(&b[56..60], &[0, 0, 0, 0]);
        assert!(header_crc_ok(&b, 64));
    }
}
