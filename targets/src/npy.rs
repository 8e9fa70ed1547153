//! Minimal `.npy` (numpy array file) reading and writing for `modelrt run`: versions 1–3,
//! little-endian or byte-order-free dtypes, C order only. Errors name the file problem in one line.
//! Files are written whole or not at all ([`write_file`]): a failed write never leaves a truncated
//! file, nor damages the file it was meant to replace.
use std::io::{self, Write};
use std::path::Path;

use modelrt_hal::target::DType;

/// A decoded array: dtype, shape and raw little-endian data.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

/// Why a byte string is not a usable `.npy` file.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum NpyError {
    #[error("not a .npy file (bad magic)")]
    Magic,
    #[error("unsupported .npy version {0}.{1}")]
    Version(u8, u8),
    #[error("truncated .npy header")]
    Truncated,
    #[error("malformed .npy header: {0}")]
    Header(String),
    #[error("unsupported .npy dtype '{0}' (modelrt reads little-endian numeric types)")]
    Dtype(String),
    #[error("Fortran-order arrays are not supported; save with np.ascontiguousarray")]
    FortranOrder,
    #[error(".npy data has {got} bytes, its header promises {expected}")]
    DataLen { expected: u64, got: u64 },
}

const MAGIC: &[u8] = b"\x93NUMPY";

fn descr_to_dtype(d: &str) -> Option<DType> {
    Some(match d {
        "<f4" => DType::F32,
        "<f2" => DType::F16,
        "<f8" => DType::F64,
        "|i1" | "<i1" => DType::I8,
        "|u1" | "<u1" => DType::U8,
        "<i2" => DType::I16,
        "<u2" => DType::U16,
        "<i4" => DType::I32,
        "<u4" => DType::U32,
        "<i8" => DType::I64,
        "<u8" => DType::U64,
        "|b1" => DType::Bool,
        _ => return None,
    })
}

fn dtype_to_descr(d: DType) -> &'static str {
    match d {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        // numpy has no bfloat16; raw 16-bit words are the honest representation.
        DType::BF16 => "<u2",
        DType::F64 => "<f8",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::I16 => "<i2",
        DType::U16 => "<u2",
        DType::I32 => "<i4",
        DType::U32 => "<u4",
        DType::I64 => "<i8",
        DType::U64 => "<u8",
        DType::Bool => "|b1",
    }
}

/// Value of `'key': <value>` in the header dict, up to the next top-level `,` or `}`.
fn field<'h>(header: &'h str, key: &str) -> Result<&'h str, NpyError> {
    let pat = format!("'{key}':");
    let start = header
        .find(&pat)
        .ok_or_else(|| NpyError::Header(format!("missing '{key}'")))?
        + pat.len();
    let rest = header[start..].trim_start();
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Ok(rest[..i].trim()),
            _ => {}
        }
    }
    Err(NpyError::Header(format!("unterminated '{key}'")))
}

/// Parse a `.npy` file.
pub fn parse(bytes: &[u8]) -> Result<NpyArray, NpyError> {
    if bytes.len() < 8 || &bytes[..6] != MAGIC {
        return Err(NpyError::Magic);
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (hlen, hstart): (usize, usize) = match major {
        1 if bytes.len() >= 10 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        1..=3 => return Err(NpyError::Truncated),
        _ => return Err(NpyError::Version(major, minor)),
    };
    let header = bytes
        .get(hstart..hstart.checked_add(hlen).ok_or(NpyError::Truncated)?)
        .ok_or(NpyError::Truncated)?;
    let header = std::str::from_utf8(header).map_err(|_| NpyError::Header("not text".into()))?;
    let descr = field(header, "descr")?.trim_matches(|c| c == '\'' || c == '"');
    let dtype = descr_to_dtype(descr).ok_or_else(|| NpyError::Dtype(descr.to_string()))?;
    match field(header, "fortran_order")? {
        "False" => {}
        "True" => return Err(NpyError::FortranOrder),
        other => return Err(NpyError::Header(format!("fortran_order is {other}"))),
    }
    let shape_txt = field(header, "shape")?;
    let inner = shape_txt
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| NpyError::Header(format!("shape is {shape_txt}")))?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_end_matches('L')
                .parse::<u64>()
                .map_err(|_| NpyError::Header(format!("shape is {shape_txt}")))
        })
        .collect::<Result<Vec<u64>, _>>()?;
    let expected = shape
        .iter()
        .try_fold(dtype.size() as u64, |a, &n| a.checked_mul(n))
        .ok_or_else(|| NpyError::Header("shape overflows".into()))?;
    let data = &bytes[hstart + hlen..];
    if data.len() as u64 != expected {
        return Err(NpyError::DataLen {
            expected,
            got: data.len() as u64,
        });
    }
    Ok(NpyArray {
        dtype,
        shape,
        data: data.to_vec(),
    })
}

/// The version 1.0 `.npy` header (magic to the `\n` that ends the padded dictionary) for an
/// array of `dtype` and `shape`; the data follows it.
fn header(dtype: DType, shape: &[u64]) -> Vec<u8> {
    let dims = match shape {
        [] => String::new(),
        [d] => format!("{d},"),
        _ => shape
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    };
    let mut dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': ({dims}), }}",
        dtype_to_descr(dtype)
    );
    // Pad so that the data starts on a 64-byte boundary, header ends with '\n'.
    let unpadded = MAGIC.len() + 2 + 2 + dict.len() + 1;
    let pad = unpadded.next_multiple_of(64) - unpadded;
    dict.push_str(&" ".repeat(pad));
    dict.push('\n');
    let mut out = Vec::with_capacity(10 + dict.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Encode an array as a version 1.0 `.npy` file.
pub fn encode(dtype: DType, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let mut out = header(dtype, shape);
    out.extend_from_slice(data);
    out
}

/// Write an array as a version 1.0 `.npy` file at `path`, replacing any file there only once the
/// whole new file is written (see [`crate::replace::replace_file`]).
pub fn write_file(path: &Path, dtype: DType, shape: &[u64], data: &[u8]) -> io::Result<()> {
    crate::replace::replace_file(path, |f| {
        f.write_all(&header(dtype, shape))?;
        f.write_all(data)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Header bytes exactly as numpy 2.x's `np.save` writes them for `np.arange(6, dtype='<f4').reshape(2, 3)`.
    fn numpy_file() -> Vec<u8> {
        let mut v = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
        let mut dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".to_string();
        while !(10 + dict.len() + 1).is_multiple_of(64) {
            dict.push(' ');
        }
        dict.push('\n');
        assert_eq!(dict.len(), 0x76);
        v.extend_from_slice(dict.as_bytes());
        for i in 0..6 {
            v.extend_from_slice(&(i as f32).to_le_bytes());
        }
        v
    }

    #[test]
    fn parses_numpy_output() {
        let a = parse(&numpy_file()).unwrap();
        assert_eq!(a.dtype, DType::F32);
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(&a.data[4..8], &1.0f32.to_le_bytes());
    }

    #[test]
    fn encode_matches_numpy_layout() {
        let data: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
        assert_eq!(encode(DType::F32, &[2, 3], &data), numpy_file());
        let one = encode(DType::U8, &[4], &[1, 2, 3, 4]);
        let p = parse(&one).unwrap();
        assert_eq!((p.shape, p.dtype), (vec![4], DType::U8));
        let scalar = parse(&encode(DType::I32, &[], &7i32.to_le_bytes())).unwrap();
        assert!(scalar.shape.is_empty());
    }

    #[test]
    fn rejects_bad_files() {
        assert_eq!(parse(b"hello"), Err(NpyError::Magic));
        let mut f = numpy_file();
        f.pop();
        assert!(matches!(
            parse(&f),
            Err(NpyError::DataLen {
                expected: 24,
                got: 23
            })
        ));
        let mut be = numpy_file();
        let pos = be.windows(3).position(|w| w == b"<f4").unwrap();
        be[pos] = b'>';
        assert_eq!(parse(&be), Err(NpyError::Dtype(">f4".into())));
        let mut fortran = numpy_file();
        let pos = fortran.windows(5).position(|w| w == b"False").unwrap();
        fortran[pos..pos + 5].copy_from_slice(b"True ");
        assert_eq!(parse(&fortran), Err(NpyError::FortranOrder));
        assert_eq!(parse(b"\x93NUMPY\x09\x00xx"), Err(NpyError::Version(9, 0)));
    }

    /// Names in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("modelrt-npy-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn write_file_replaces_whole_and_not_through_symlinks() {
        let dir = scratch("ok");
        let path = dir.join("y.npy");
        std::fs::write(&path, b"old").unwrap();
        write_file(&path, DType::U8, &[2], &[7, 9]).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            encode(DType::U8, &[2], &[7, 9])
        );
        assert_eq!(listing(&dir), ["y.npy"]);
        // A symlink at the destination is replaced; its target is not written.
        let victim = dir.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let link = dir.join("l.npy");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        write_file(&link, DType::U8, &[1], &[5]).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(!std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        // A stale temporary name is skipped, not reused.
        let stale = dir.join(format!(".y.npy.{}-0.tmp", std::process::id()));
        std::fs::write(&stale, b"stale").unwrap();
        write_file(&path, DType::U8, &[1], &[1]).unwrap();
        assert_eq!(std::fs::read(&stale).unwrap(), b"stale");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
