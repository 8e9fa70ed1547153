//! Typed parser of the kernel container Qualcomm's OpenCL compiler writes for a6xx (the binaries of tinygrad's
//! `DEV=QCOM` path; layout in docs/hw/adreno-kgsl-pm4.md §9.1). no_std, borrowing: [`ClContainer::parse`] checks
//! every field once — bounds, counts, overlaps — and returns one [`ClError`] (a one-line message) for the first
//! malformed one; afterwards the accessors cannot fail. The instructions are kept byte for byte
//! ([`ClContainer::image`] is a sub-slice of the input).

/// Where the section table starts and how long one entry is.
pub const SECTION_TABLE: usize = 0x30;
pub const SECTION_ENTRY: usize = 20;
/// Fixed header fields (absolute byte offsets of u32 words).
const OFF_SECTION_COUNT: usize = 0x18;
const OFF_PROGRAM: usize = 0x34;
const OFF_CONSTS: usize = 0xAC;
const OFF_CONSTS_SIZE: usize = 0xB0;
const OFF_IMAGE: usize = 0xC0;
const OFF_IMAGE_SIZE: usize = 0x100;
const OFF_DESC: usize = 0x110;
/// Bytes of header the fixed fields need.
const HEADER_BYTES: usize = OFF_DESC + 4;
/// Fields of the program section, relative to its offset.
const PRG_FREGS: usize = 0x14;
const PRG_HREGS: usize = 0x18;
/// Fields of the image descriptor, relative to its offset.
const D_ARG_COUNT: usize = 0xB0;
const D_PRG_OFFSET: usize = 0xC4;
const D_PVTMEM: usize = 0xC8;
const D_SHMEM: usize = 0xD8;
const D_SAMPLERS: usize = 0xDC;
const D_NAME_LEN: usize = 0xE4;
const D_BRANCHSTACK: usize = 0x108;
const D_NAME: usize = 0x158;
/// Bytes per sampler entry between the name and the argument records.
const SAMPLER_ENTRY: usize = 8;
/// Bytes of an argument record the parser reads (the record may be longer; word 0 says how long).
pub const ARG_RECORD: usize = 32;
/// Bytes of one constant record.
pub const CONST_RECORD: usize = 40;
/// Bytes of the constant file the records may write (c0…c127; descriptors follow at 2048).
pub const CONST_FILE_BYTES: u32 = 2048;
/// Longest kernel name accepted.
pub const MAX_NAME: usize = 256;

/// The first malformed field found; `Display` is one line naming the field, where it is and what is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClError {
    /// The file is shorter than the fixed header.
    TooShort { len: usize },
    /// A field's range lies (partly) outside the file.
    OutOfBounds {
        what: &'static str,
        at: u64,
        end: u64,
        len: usize,
    },
    /// Two regions that must be disjoint overlap.
    Overlap { a: &'static str, b: &'static str },
    /// A count or size field holds an impossible value.
    BadField {
        what: &'static str,
        at: usize,
        value: u32,
    },
    /// The kernel name is empty, too long, not an identifier, or its padding is not zero.
    BadName { at: usize },
    /// An argument record is malformed.
    BadArg {
        index: usize,
        at: usize,
        what: &'static str,
        value: u32,
    },
    /// A constant record is malformed.
    BadConst {
        index: usize,
        at: usize,
        what: &'static str,
        value: u32,
    },
}

impl core::fmt::Display for ClError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            ClError::TooShort { len } => write!(
                f,
                "QCOM kernel container is {len} bytes, shorter than its {HEADER_BYTES}-byte header"
            ),
            ClError::OutOfBounds { what, at, end, len } => write!(
                f,
                "QCOM kernel container: {what} at bytes {at:#x}..{end:#x} lies outside the {len}-byte file"
            ),
            ClError::Overlap { a, b } => {
                write!(f, "QCOM kernel container: {a} overlaps {b}")
            }
            ClError::BadField { what, at, value } => write!(
                f,
                "QCOM kernel container: {what} at byte {at:#x} is {value:#x}, which is not valid"
            ),
            ClError::BadName { at } => write!(
                f,
                "QCOM kernel container: the kernel name at byte {at:#x} is not a NUL-padded identifier"
            ),
            ClError::BadArg {
                index,
                at,
                what,
                value,
            } => write!(
                f,
                "QCOM kernel container: argument record {index} at byte {at:#x}: {what} ({value:#x})"
            ),
            ClError::BadConst {
                index,
                at,
                what,
                value,
            } => write!(
                f,
                "QCOM kernel container: constant record {index} at byte {at:#x}: {what} ({value:#x})"
            ),
        }
    }
}

/// One entry of the section table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    pub id: u32,
    pub offset: u32,
    pub size: u32,
    pub count: u32,
    pub entry_size: u32,
}

/// What an argument is bound as (record word 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// A buffer pointer or scalar written into the constant file at [`ArgRecord::offset_bytes`].
    Buffer,
    /// A texture (sampled image): its descriptor goes to the texture array.
    Texture,
    /// A storage image (IBO): its descriptor goes to the IBO array.
    Ibo,
}

/// One argument record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgRecord {
    /// Position of the argument in the kernel's signature (word 1).
    pub index: u32,
    /// Word 3 × 4: byte offset into the kernel-argument region.
    pub offset_bytes: u32,
    pub kind: ArgKind,
}

/// One constant the driver must write into the constant file before a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstRecord {
    pub value: u32,
    /// Byte offset into the kernel-argument region.
    pub offset_bytes: u32,
    /// 4 (32-bit) or 2 (16-bit, the value's low half).
    pub size: u32,
}

/// A parsed, validated container. All slices borrow the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClContainer<'a> {
    bytes: &'a [u8],
    section_count: u32,
    /// Offset of the program section (0x34).
    pub program_offset: u32,
    /// Full / half register footprints (program section +0x14 / +0x18).
    pub fregs: u32,
    pub hregs: u32,
    /// Constants section offset and size (0xAC / 0xB0).
    pub consts_offset: u32,
    pub consts_size: u32,
    /// First instruction (0xC0) and code bytes (0x100).
    pub image_offset: u32,
    pub image_size: u32,
    /// Image descriptor offset (0x110).
    pub desc_offset: u32,
    /// First executed dword (descriptor +0xC4), goes to the CS program setup.
    pub prg_offset: u32,
    /// Private memory per fiber in bytes (descriptor +0xC8).
    pub pvtmem: u32,
    /// Local (shared) memory bytes (descriptor +0xD8).
    pub shmem: u32,
    /// Samplers the kernel declares (descriptor +0xDC; 0 or 1).
    pub samplers: u32,
    /// Branch stack depth: descriptor +0x108 halved.
    pub branchstack: u32,
    name: &'a str,
    args_offset: u32,
    arg_count: u32,
    const_count: u32,
}

fn rd(b: &[u8], at: usize) -> Option<u32> {
    let w = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
}

fn field(b: &[u8], what: &'static str, at: usize) -> Result<u32, ClError> {
    rd(b, at).ok_or(ClError::OutOfBounds {
        what,
        at: at as u64,
        end: at as u64 + 4,
        len: b.len(),
    })
}

fn range(
    b: &[u8],
    what: &'static str,
    at: u64,
    size: u64,
) -> Result<core::ops::Range<usize>, ClError> {
    let end = at + size;
    if end > b.len() as u64 {
        return Err(ClError::OutOfBounds {
            what,
            at,
            end,
            len: b.len(),
        });
    }
    Ok(at as usize..end as usize)
}

fn disjoint(
    a: &core::ops::Range<usize>,
    na: &'static str,
    b: &core::ops::Range<usize>,
    nb: &'static str,
) -> Result<(), ClError> {
    if a.start < b.end && b.start < a.end {
        return Err(ClError::Overlap { a: na, b: nb });
    }
    Ok(())
}

fn arg_kind(v: u32) -> Option<ArgKind> {
    match v {
        0 => Some(ArgKind::Buffer),
        1 => Some(ArgKind::Texture),
        2 => Some(ArgKind::Ibo),
        _ => None,
    }
}

/// Parse one argument record at `at` (known to be in bounds). `None` is the terminator.
fn arg_at(b: &[u8], at: usize) -> Option<(u32, ArgRecord)> {
    let w = |i: usize| rd(b, at + 4 * i).unwrap_or(0);
    let len = w(0);
    if len == 0 {
        return None;
    }
    Some((
        len,
        ArgRecord {
            index: w(1),
            offset_bytes: w(3).wrapping_mul(4),
            kind: arg_kind(w(7)).unwrap_or(ArgKind::Buffer),
        },
    ))
}

fn const_at(b: &[u8], at: usize) -> ConstRecord {
    let w = |o: usize| rd(b, at + o).unwrap_or(0);
    let size = if w(24) == 1 { 4 } else { 2 };
    ConstRecord {
        value: w(0),
        offset_bytes: w(16).wrapping_mul(size),
        size,
    }
}

impl<'a> ClContainer<'a> {
    /// Parse and validate `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ClError> {
        let b = bytes;
        if b.len() < HEADER_BYTES {
            return Err(ClError::TooShort { len: b.len() });
        }
        let header = 0..HEADER_BYTES;

        // Section table: every entry inside the file, non-empty sections after the table and disjoint.
        let section_count = field(b, "section count", OFF_SECTION_COUNT)?;
        let table = range(
            b,
            "section table",
            SECTION_TABLE as u64,
            section_count as u64 * SECTION_ENTRY as u64,
        )?;
        let c = ClContainer::sections_of(b, section_count);
        for (i, s) in c.clone().enumerate() {
            let r = range(b, "a section", s.offset as u64, s.size as u64)?;
            if r.is_empty() {
                continue;
            }
            disjoint(&r, "a section", &table, "the section table")?;
            for t in c.clone().take(i) {
                let tr = t.offset as usize..t.offset as usize + t.size as usize;
                if !tr.is_empty() {
                    disjoint(&r, "a section", &tr, "another section")?;
                }
            }
        }

        // Program section: register footprints.
        let program_offset = field(b, "program section offset", OFF_PROGRAM)?;
        let p = program_offset as usize;
        let fregs = field(b, "full-register count", p + PRG_FREGS)?;
        let hregs = field(b, "half-register count", p + PRG_HREGS)?;
        if fregs > 0x3F {
            return Err(ClError::BadField {
                what: "full-register count",
                at: p + PRG_FREGS,
                value: fregs,
            });
        }
        if hregs > 0x3F {
            return Err(ClError::BadField {
                what: "half-register count",
                at: p + PRG_HREGS,
                value: hregs,
            });
        }

        // Image: non-empty, whole instructions, inside the file, clear of the header and table.
        let image_offset = field(b, "image offset", OFF_IMAGE)?;
        let image_size = field(b, "code size", OFF_IMAGE_SIZE)?;
        if image_size == 0 || !image_size.is_multiple_of(8) {
            return Err(ClError::BadField {
                what: "code size",
                at: OFF_IMAGE_SIZE,
                value: image_size,
            });
        }
        let image = range(b, "image", image_offset as u64, image_size as u64)?;
        disjoint(&image, "the image", &header, "the header")?;
        disjoint(&image, "the image", &table, "the section table")?;

        // Constants: [offset, offset+size) inside the file, before the image; records are read (as tinygrad
        // does) from the offset up to the image.
        let consts_offset = field(b, "constants offset", OFF_CONSTS)?;
        let consts_size = field(b, "constants size", OFF_CONSTS_SIZE)?;
        let mut const_count = 0u32;
        if consts_size != 0 {
            let cr = range(b, "constants", consts_offset as u64, consts_size as u64)?;
            disjoint(&cr, "the constants", &header, "the header")?;
            if cr.end > image.start {
                return Err(ClError::Overlap {
                    a: "the constants",
                    b: "the image",
                });
            }
            let mut at = cr.start;
            while at + CONST_RECORD <= image.start {
                let flag = rd(b, at + 24).unwrap_or(0);
                if flag > 1 {
                    return Err(ClError::BadConst {
                        index: const_count as usize,
                        at,
                        what: "32-bit flag is neither 0 nor 1",
                        value: flag,
                    });
                }
                let k = const_at(b, at);
                let off = rd(b, at + 16).unwrap_or(0) as u64 * k.size as u64;
                if off + k.size as u64 > CONST_FILE_BYTES as u64 {
                    return Err(ClError::BadConst {
                        index: const_count as usize,
                        at,
                        what: "offset lies outside the 2048-byte constant file",
                        value: rd(b, at + 16).unwrap_or(0),
                    });
                }
                const_count += 1;
                at += CONST_RECORD;
            }
        }

        // Image descriptor.
        let desc_offset = field(b, "image descriptor offset", OFF_DESC)?;
        let d = desc_offset as usize;
        let desc = range(b, "image descriptor", d as u64, D_NAME as u64)?;
        disjoint(&desc, "the image descriptor", &image, "the image")?;
        disjoint(&desc, "the image descriptor", &header, "the header")?;
        let prg_offset = field(b, "program offset", d + D_PRG_OFFSET)?;
        if prg_offset as u64 * 4 >= image_size as u64 {
            return Err(ClError::BadField {
                what: "program offset",
                at: d + D_PRG_OFFSET,
                value: prg_offset,
            });
        }
        let pvtmem = field(b, "private memory size", d + D_PVTMEM)?;
        if pvtmem > 64 * 1024 {
            return Err(ClError::BadField {
                what: "private memory size",
                at: d + D_PVTMEM,
                value: pvtmem,
            });
        }
        let shmem = field(b, "local memory size", d + D_SHMEM)?;
        if shmem > 32 * 1024 {
            return Err(ClError::BadField {
                what: "local memory size",
                at: d + D_SHMEM,
                value: shmem,
            });
        }
        let samplers = field(b, "sampler count", d + D_SAMPLERS)?;
        if samplers > 1 {
            return Err(ClError::BadField {
                what: "sampler count (at most 1)",
                at: d + D_SAMPLERS,
                value: samplers,
            });
        }
        let bs = field(b, "branch stack depth", d + D_BRANCHSTACK)?;
        if bs / 2 > 0x3F {
            return Err(ClError::BadField {
                what: "branch stack depth",
                at: d + D_BRANCHSTACK,
                value: bs,
            });
        }

        // Kernel name: its length at +0xE4, identifier bytes, NUL padding to a 4-byte boundary.
        let name_len = field(b, "kernel name length", d + D_NAME_LEN)?;
        if name_len == 0 || name_len as usize > MAX_NAME {
            return Err(ClError::BadField {
                what: "kernel name length",
                at: d + D_NAME_LEN,
                value: name_len,
            });
        }
        let name_at = d + D_NAME;
        let padded = (name_at + name_len as usize).next_multiple_of(4);
        let nr = range(b, "kernel name", name_at as u64, (padded - name_at) as u64)?;
        let raw = &b[nr.clone()];
        let (text, pad) = raw.split_at(name_len as usize);
        let ident = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
        if !text.iter().all(ident) || text[0].is_ascii_digit() || pad.iter().any(|&c| c != 0) {
            return Err(ClError::BadName { at: name_at });
        }
        let name = core::str::from_utf8(text).map_err(|_| ClError::BadName { at: name_at })?;

        // Argument records: after the sampler entries, `D+0xB0` of them, then a zero length word.
        let expected_args = field(b, "argument count", d + D_ARG_COUNT)?;
        let args_offset = padded + SAMPLER_ENTRY * samplers as usize;
        let mut at = args_offset;
        let mut arg_count = 0u32;
        loop {
            let len = field(b, "argument record length", at)?;
            if len == 0 {
                break;
            }
            let index = arg_count as usize;
            let bad = |what, value| ClError::BadArg {
                index,
                at,
                what,
                value,
            };
            if (len as usize) < ARG_RECORD || !len.is_multiple_of(4) {
                return Err(bad("length is not a multiple of 4 of at least 32", len));
            }
            range(b, "an argument record", at as u64, len as u64)?;
            let (_, rec) = arg_at(b, at).ok_or(bad("length", len))?;
            let kind = rd(b, at + 28).unwrap_or(0);
            if arg_kind(kind).is_none() {
                return Err(bad("kind is not 0 (buffer), 1 (texture) or 2 (IBO)", kind));
            }
            if rec.index != arg_count {
                return Err(bad("argument index out of order", rec.index));
            }
            let words = rd(b, at + 12).unwrap_or(0);
            if rec.kind == ArgKind::Buffer && words as u64 * 4 + 4 > CONST_FILE_BYTES as u64 {
                return Err(bad(
                    "offset lies outside the 2048-byte constant file",
                    words,
                ));
            }
            arg_count += 1;
            if arg_count > expected_args {
                return Err(bad("more records than the argument count", expected_args));
            }
            at += len as usize;
        }
        if arg_count != expected_args {
            return Err(ClError::BadField {
                what: "argument count (records found differ)",
                at: d + D_ARG_COUNT,
                value: expected_args,
            });
        }

        Ok(ClContainer {
            bytes,
            section_count,
            program_offset,
            fregs,
            hregs,
            consts_offset,
            consts_size,
            image_offset,
            image_size,
            desc_offset,
            prg_offset,
            pvtmem,
            shmem,
            samplers,
            branchstack: bs / 2,
            name,
            args_offset: args_offset as u32,
            arg_count,
            const_count,
        })
    }

    fn sections_of(b: &'a [u8], n: u32) -> Sections<'a> {
        Sections { b, i: 0, n }
    }

    /// The whole container.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The section table.
    pub fn sections(&self) -> Sections<'a> {
        ClContainer::sections_of(self.bytes, self.section_count)
    }

    /// The instructions, byte for byte.
    pub fn image(&self) -> &'a [u8] {
        &self.bytes[self.image_offset as usize..(self.image_offset + self.image_size) as usize]
    }

    /// The kernel name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The argument records, in signature order.
    pub fn args(&self) -> Args<'a> {
        Args {
            b: self.bytes,
            at: self.args_offset as usize,
            left: self.arg_count,
        }
    }

    /// The constant records, in file order.
    pub fn consts(&self) -> Consts<'a> {
        Consts {
            b: self.bytes,
            at: self.consts_offset as usize,
            left: self.const_count,
        }
    }

    /// Argument records of `kind`.
    pub fn count(&self, kind: ArgKind) -> u32 {
        self.args().filter(|a| a.kind == kind).count() as u32
    }
}

/// Iterator over the section table.
#[derive(Clone, Debug)]
pub struct Sections<'a> {
    b: &'a [u8],
    i: u32,
    n: u32,
}

impl Iterator for Sections<'_> {
    type Item = Section;
    fn next(&mut self) -> Option<Section> {
        if self.i >= self.n {
            return None;
        }
        let at = SECTION_TABLE + SECTION_ENTRY * self.i as usize;
        let w = |k: usize| rd(self.b, at + 4 * k).unwrap_or(0);
        self.i += 1;
        Some(Section {
            id: w(0),
            offset: w(1),
            size: w(2),
            count: w(3),
            entry_size: w(4),
        })
    }
}

/// Iterator over validated argument records.
#[derive(Clone, Debug)]
pub struct Args<'a> {
    b: &'a [u8],
    at: usize,
    left: u32,
}

impl Iterator for Args<'_> {
    type Item = ArgRecord;
    fn next(&mut self) -> Option<ArgRecord> {
        if self.left == 0 {
            return None;
        }
        let (len, rec) = arg_at(self.b, self.at)?;
        self.left -= 1;
        self.at += len as usize;
        Some(rec)
    }
}

/// Iterator over validated constant records.
#[derive(Clone, Debug)]
pub struct Consts<'a> {
    b: &'a [u8],
    at: usize,
    left: u32,
}

impl Iterator for Consts<'_> {
    type Item = ConstRecord;
    fn next(&mut self) -> Option<ConstRecord> {
        if self.left == 0 {
            return None;
        }
        let k = const_at(self.b, self.at);
        self.left -= 1;
        self.at += CONST_RECORD;
        Some(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal well-formed container built field by field from the docs/hw/adreno-kgsl-pm4.md §9.1 table.
    fn tiny() -> std::vec::Vec<u8> {
        let mut b = std::vec![0u8; 0x400];
        let put = |b: &mut [u8], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put(&mut b, 0x18, 0); // no sections
        put(&mut b, 0x34, 0x120); // program section
        put(&mut b, 0x120 + 0x14, 4);
        put(&mut b, 0x120 + 0x18, 2);
        put(&mut b, 0xAC, 0x140); // one constant record
        put(&mut b, 0xB0, 40);
        put(&mut b, 0x140, 0x1234_5678);
        put(&mut b, 0x140 + 16, 3);
        put(&mut b, 0x140 + 24, 1);
        put(&mut b, 0xC0, 0x168); // image: 2 instructions
        put(&mut b, 0x100, 16);
        put(&mut b, 0x110, 0x178); // descriptor
        put(&mut b, 0x178 + D_BRANCHSTACK, 4);
        put(&mut b, 0x178 + D_NAME_LEN, 3);
        put(&mut b, 0x178 + D_ARG_COUNT, 1);
        b[0x178 + D_NAME..0x178 + D_NAME + 3].copy_from_slice(b"k_1");
        let a = 0x178 + D_NAME + 4;
        put(&mut b, a, 32);
        put(&mut b, a + 12, 0x50);
        b
    }

    #[test]
    fn tiny_container_fields() {
        let b = tiny();
        let c = ClContainer::parse(&b).unwrap();
        assert_eq!(c.name(), "k_1");
        assert_eq!((c.fregs, c.hregs, c.branchstack), (4, 2, 2));
        assert_eq!(c.image(), &b[0x168..0x178]);
        assert_eq!(
            c.args().collect::<std::vec::Vec<_>>(),
            [ArgRecord {
                index: 0,
                offset_bytes: 0x140,
                kind: ArgKind::Buffer
            }]
        );
        assert_eq!(
            c.consts().collect::<std::vec::Vec<_>>(),
            [ConstRecord {
                value: 0x1234_5678,
                offset_bytes: 12,
                size: 4
            }]
        );
    }

    #[test]
    fn malformed_fields_name_themselves() {
        let put = |b: &mut [u8], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        let err = |f: &dyn Fn(&mut std::vec::Vec<u8>)| {
            let mut b = tiny();
            f(&mut b);
            std::format!("{}", ClContainer::parse(&b).unwrap_err())
        };
        assert!(err(&|b| b.truncate(0x20)).contains("shorter than"));
        assert!(err(&|b| put(b, 0x100, 12)).contains("code size"));
        assert!(err(&|b| put(b, 0xC0, 0x3F8)).contains("image at bytes 0x3f8..0x408"));
        assert!(err(&|b| put(b, 0xC0, 0x100)).contains("the image overlaps the header"));
        assert!(err(&|b| put(b, 0x18, 1000)).contains("section table"));
        assert!(err(&|b| put(b, 0x178 + D_SAMPLERS, 2)).contains("sampler count"));
        assert!(err(&|b| put(b, 0x178 + D_NAME_LEN, 2)).contains("kernel name"));
        assert!(err(&|b| put(b, 0x178 + D_ARG_COUNT, 2)).contains("argument count"));
        assert!(err(&|b| put(b, 0x178 + D_NAME + 4 + 28, 7)).contains("kind"));
        assert!(err(&|b| put(b, 0x178 + D_NAME + 4, 8)).contains("argument record 0"));
        assert!(err(&|b| put(b, 0x140 + 24, 5)).contains("constant record 0"));
        assert!(err(&|b| put(b, 0x140 + 16, 600)).contains("constant file"));
        assert!(err(&|b| put(b, 0xB0, 48)).contains("constants overlaps the image"));
    }
}
