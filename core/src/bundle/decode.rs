//! The bundle reader's serde deserializer: postcard's wire format (the writer still encodes with
//! the `postcard` crate), decoded through a few non-generic, out-of-line primitives.
//!
//! `postcard::Deserializer` inlines its varint loop into every field of every record type, which
//! made varint decoding the largest part of the `no_std` footprint. Here every varint, byte and
//! length-prefixed slice goes through [`Reader::varint`], [`Reader::byte`] and [`Reader::take`],
//! compiled once. The accepted input is postcard's, rule for rule (the round-trip and corruption
//! tests in `core/tests` hold it to that):
//! - `u16`/`u32`/`u64`/`usize` (lengths) are LEB128 varints of at most 3/5/10 bytes whose last byte
//!   may not carry bits past the type's width; `i16`/`i32`/`i64` are zigzag varints;
//! - `u8`/`i8` are one raw byte; `bool` and the `Option` tag are one byte, 0 or 1;
//! - `f32`/`f64` are little-endian bytes; `str`/bytes/`char` are a varint length and the bytes
//!   (`str` and `char` valid UTF-8, a `char` exactly one character of at most 4 bytes);
//! - sequences and maps are a varint count and the elements; tuples, arrays and structs are their
//!   elements in order; an enum is a varint `u32` variant index and the variant's content;
//! - self-describing input (`deserialize_any`, identifiers, ignored values) is not supported.
use core::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

/// A record or body that does not decode. Callers map it to the matching [`super::BundleError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DecodeError;

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("bundle record does not decode")
    }
}

impl core::error::Error for DecodeError {}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        DecodeError
    }
}

type Result<T> = core::result::Result<T, DecodeError>;

/// Decode one `T` from the front of `bytes`; returns it and the bytes after it.
pub(crate) fn take_from_bytes<'de, T: de::Deserialize<'de>>(
    bytes: &'de [u8],
) -> Result<(T, &'de [u8])> {
    let mut r = Reader { rest: bytes };
    let value = T::deserialize(&mut r)?;
    Ok((value, r.rest))
}

/// The not yet decoded input.
pub(crate) struct Reader<'de> {
    rest: &'de [u8],
}

impl<'de> Reader<'de> {
    /// The next byte.
    #[inline(never)]
    fn byte(&mut self) -> Result<u8> {
        let (&b, rest) = self.rest.split_first().ok_or(DecodeError)?;
        self.rest = rest;
        Ok(b)
    }

    /// The next `n` bytes, borrowed from the input.
    #[inline(never)]
    fn take(&mut self, n: u64) -> Result<&'de [u8]> {
        let n = usize::try_from(n).map_err(|_| DecodeError)?;
        if n > self.rest.len() {
            return Err(DecodeError);
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    /// A LEB128 varint of an unsigned integer `bits` wide (16, 32 or 64): at most
    /// `ceil(bits / 7)` bytes, and the last possible byte may only carry the `bits % 7` high bits.
    #[inline(never)]
    fn varint(&mut self, bits: u32) -> Result<u64> {
        let max_bytes = bits.div_ceil(7);
        let last_max = (1u8 << (bits % 7)) - 1;
        let mut out = 0u64;
        for i in 0..max_bytes {
            let b = self.byte()?;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if i == max_bytes - 1 && b > last_max {
                    return Err(DecodeError);
                }
                return Ok(out);
            }
        }
        Err(DecodeError)
    }

    /// A length prefix (`usize` varint).
    fn len(&mut self) -> Result<u64> {
        self.varint(usize::BITS)
    }

    /// A length-prefixed byte string.
    fn bytes(&mut self) -> Result<&'de [u8]> {
        let n = self.len()?;
        self.take(n)
    }

    /// A length-prefixed UTF-8 string.
    #[inline(never)]
    fn str(&mut self) -> Result<&'de str> {
        let b = self.bytes()?;
        core::str::from_utf8(b).map_err(|_| DecodeError)
    }

    /// `n` little-endian bytes as an integer (for `f32`/`f64`).
    fn fixed(&mut self, n: u64) -> Result<u64> {
        let b = self.take(n)?;
        Ok(b.iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }
}

/// Undo zigzag encoding.
fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// Elements of a sequence, tuple or struct (`len` of them left).
struct Seq<'a, 'de> {
    r: &'a mut Reader<'de>,
    len: u64,
}

impl<'de> de::SeqAccess<'de> for Seq<'_, 'de> {
    type Error = DecodeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.len == 0 {
            return Ok(None);
        }
        self.len -= 1;
        seed.deserialize(&mut *self.r).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        // Never more than the remaining bytes: a corrupt count must not reserve memory.
        usize::try_from(self.len)
            .ok()
            .filter(|&n| n <= self.r.rest.len())
    }
}

impl<'de> de::MapAccess<'de> for Seq<'_, 'de> {
    type Error = DecodeError;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        de::SeqAccess::next_element_seed(self, seed)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        seed.deserialize(&mut *self.r)
    }
    fn size_hint(&self) -> Option<usize> {
        usize::try_from(self.len).ok()
    }
}

impl<'de> de::Deserializer<'de> for &mut Reader<'de> {
    type Error = DecodeError;

    fn is_human_readable(&self) -> bool {
        false
    }
    fn deserialize_any<V: Visitor<'de>>(self, _v: V) -> Result<V::Value> {
        Err(DecodeError)
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        match self.byte()? {
            0 => v.visit_bool(false),
            1 => v.visit_bool(true),
            _ => Err(DecodeError),
        }
    }
    fn deserialize_i8<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_i8(self.byte()? as i8)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_i16(unzigzag(self.varint(16)?) as i16)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_i32(unzigzag(self.varint(32)?) as i32)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_i64(unzigzag(self.varint(64)?))
    }
    fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_u8(self.byte()?)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_u16(self.varint(16)? as u16)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_u32(self.varint(32)? as u32)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_u64(self.varint(64)?)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_f32(f32::from_bits(self.fixed(4)? as u32))
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_f64(f64::from_bits(self.fixed(8)?))
    }
    fn deserialize_char<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        let n = self.len()?;
        if n > 4 {
            return Err(DecodeError);
        }
        let s = core::str::from_utf8(self.take(n)?).map_err(|_| DecodeError)?;
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => v.visit_char(c),
            _ => Err(DecodeError),
        }
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_borrowed_str(self.str()?)
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_str(self.str()?)
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_borrowed_bytes(self.bytes()?)
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_bytes(self.bytes()?)
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        match self.byte()? {
            0 => v.visit_none(),
            1 => v.visit_some(self),
            _ => Err(DecodeError),
        }
    }
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value> {
        v.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        let len = self.len()?;
        v.visit_seq(Seq { r: self, len })
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value> {
        v.visit_seq(Seq {
            r: self,
            len: len as u64,
        })
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value> {
        self.deserialize_tuple(len, v)
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        let len = self.len()?;
        v.visit_map(Seq { r: self, len })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value> {
        self.deserialize_tuple(fields.len(), v)
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value> {
        v.visit_enum(self)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, _v: V) -> Result<V::Value> {
        Err(DecodeError)
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, _v: V) -> Result<V::Value> {
        Err(DecodeError)
    }
}

impl<'de> de::EnumAccess<'de> for &mut Reader<'de> {
    type Error = DecodeError;
    type Variant = Self;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        let index = self.varint(32)? as u32;
        let value = seed.deserialize(index.into_deserializer())?;
        Ok((value, self))
    }
}

impl<'de> de::VariantAccess<'de> for &mut Reader<'de> {
    type Error = DecodeError;
    fn unit_variant(self) -> Result<()> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value> {
        de::Deserializer::deserialize_tuple(self, len, v)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value> {
        de::Deserializer::deserialize_tuple(self, fields.len(), v)
    }
}

/// Differential tests: the `postcard` crate (which the writer encodes with) is the reference; for
/// valid, truncated and corrupted input both decoders must agree on the value, the rest and on
/// failure.
#[cfg(test)]
mod tests {
    extern crate std;
    use std::format;
    use std::vec::Vec;

    use modelrt_hal::target::{
        AmdKernelMeta, CpuArch, CpuKernelMeta, DType, Ir3KernelMeta, KernelMeta, ParamDesc,
        ParamKind, Target,
    };
    use proptest::prelude::*;
    use serde::{Deserialize, Serialize};

    use super::take_from_bytes;
    use crate::bundle::{
        ArgRef, Body, BufRef, BufferDesc, BufferKind, KernelDesc, Step, TensorDesc,
    };

    /// Both decoders on `bytes`: same `Debug` form of value and rest, or both fail.
    fn agree<'a, T: Deserialize<'a> + core::fmt::Debug>(bytes: &'a [u8]) {
        let ours = take_from_bytes::<T>(bytes).ok();
        let reference = postcard::take_from_bytes::<T>(bytes).ok();
        assert_eq!(
            format!("{ours:?}"),
            format!("{reference:?}"),
            "input {bytes:02x?}"
        );
    }

    /// `agree` (for one type) on `bytes`, every prefix of it, and every single-byte corruption of it.
    fn agree_corrupted(bytes: &[u8], agree: impl Fn(&[u8])) {
        for n in 0..=bytes.len() {
            agree(&bytes[..n]);
        }
        let mut m = bytes.to_vec();
        for i in 0..m.len() {
            let orig = m[i];
            for v in [
                0x00,
                0x01,
                0x02,
                0x7f,
                0x80,
                0xff,
                orig ^ 0x80,
                orig.wrapping_add(1),
            ] {
                m[i] = v;
                agree(&m);
            }
            m[i] = orig;
        }
    }

    fn encode<T: Serialize>(v: &T) -> Vec<u8> {
        let mut buf = [0u8; 4096];
        postcard::to_slice(v, &mut buf).unwrap().to_vec()
    }

    #[test]
    fn varint_edges_match_postcard() {
        let cases: &[&[u8]] = &[
            &[],
            &[0x00],
            &[0x7f],
            &[0x80],
            &[0x80, 0x00],
            &[0xff, 0x03],
            &[0xff, 0xff, 0x03],
            &[0xff, 0xff, 0x04],
            &[0xff, 0xff, 0x83, 0x00],
            &[0xff, 0xff, 0xff, 0xff, 0x0f],
            &[0xff, 0xff, 0xff, 0xff, 0x10],
            &[0xff, 0xff, 0xff, 0xff, 0x8f, 0x00],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
            &[
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00,
            ],
        ];
        for bytes in cases {
            agree::<u16>(bytes);
            agree::<u32>(bytes);
            agree::<u64>(bytes);
            agree::<i16>(bytes);
            agree::<i32>(bytes);
            agree::<i64>(bytes);
            agree::<&[u8]>(bytes);
        }
    }

    proptest! {
        #[test]
        fn scalars_and_containers_match_postcard(bytes in prop::collection::vec(any::<u8>(), 0..24)) {
            agree::<u8>(&bytes);
            agree::<i8>(&bytes);
            agree::<bool>(&bytes);
            agree::<u16>(&bytes);
            agree::<u32>(&bytes);
            agree::<u64>(&bytes);
            agree::<i16>(&bytes);
            agree::<i32>(&bytes);
            agree::<i64>(&bytes);
            agree::<f32>(&bytes);
            agree::<f64>(&bytes);
            agree::<char>(&bytes);
            agree::<&str>(&bytes);
            agree::<&[u8]>(&bytes);
            agree::<Option<u32>>(&bytes);
            agree::<[u32; 3]>(&bytes);
            agree::<(u64, u64)>(&bytes);
            agree::<heapless::Vec<u16, 4>>(&bytes);
            agree::<DType>(&bytes);
            agree::<ParamKind>(&bytes);
            agree::<ArgRef>(&bytes);
            agree::<BufRef>(&bytes);
        }
    }

    #[test]
    fn records_match_postcard_when_truncated_or_corrupted() {
        let params: heapless::Vec<ParamDesc, 64> = [
            ParamDesc {
                kind: ParamKind::Image {
                    height: 300,
                    width: 70_000,
                },
                dtype: DType::F16,
            },
            ParamDesc {
                kind: ParamKind::Var,
                dtype: DType::I32,
            },
        ]
        .into_iter()
        .collect();
        let ir3 = KernelDesc {
            name: "r_4_4",
            entry: "main",
            binary: &[1, 2, 3, 0xff],
            source: Some("void k() {}"),
            params: params.clone(),
            meta: KernelMeta::Ir3(Ir3KernelMeta {
                image_size: 1024,
                fregs: 12,
                hregs: 3,
                branchstack: 0,
                pvtmem: 0,
                shmem: 4096,
                wgid: 0xfc,
                lid: 0,
                wgsz: 0x1_0000,
                buf_off: 16,
                imm_off: 200,
                immediates: &[9, 9, 9, 9],
                tex_cnt: 1,
                ibo_cnt: 0,
                tex_to_image: [0u8].into_iter().collect(),
            }),
        };
        agree_corrupted(&encode(&ir3), |b| agree::<KernelDesc<'_>>(b));
        let amd = KernelDesc {
            source: None,
            meta: KernelMeta::Amd(AmdKernelMeta {
                descriptor_offset: 0,
                entry_offset: 256,
                group_segment_fixed_size: 65_536,
                private_segment_fixed_size: 0,
                kernarg_size: 24,
                compute_pgm_rsrc1: 0xdead_beef,
                compute_pgm_rsrc2: 0x8c,
                compute_pgm_rsrc3: 0,
                kernel_code_properties: 0x40a,
                wavefront_size: 32,
                sgpr_count: 106,
                vgpr_count: 256,
            }),
            ..ir3.clone()
        };
        agree_corrupted(&encode(&amd), |b| agree::<KernelDesc<'_>>(b));
        let cpu = KernelDesc {
            meta: KernelMeta::Cpu(CpuKernelMeta { threads: 8 }),
            ..ir3
        };
        agree_corrupted(&encode(&cpu), |b| agree::<KernelDesc<'_>>(b));
        let launch = Step::Launch {
            kernel: 3,
            args: [
                ArgRef::Buffer {
                    buffer: 1,
                    offset: 1 << 40,
                    size: 64,
                },
                ArgRef::Int(-5),
                ArgRef::Int(i32::MIN),
            ]
            .into_iter()
            .collect(),
            global: [1, 128, 70_000],
            local: [32, 1, 1],
        };
        agree_corrupted(&encode(&launch), |b| agree::<Step>(b));
        let copy = Step::Copy {
            dst: BufRef {
                buffer: 2,
                offset: 0,
            },
            src: BufRef {
                buffer: 200,
                offset: u64::MAX,
            },
            size: 12,
        };
        agree_corrupted(&encode(&copy), |b| agree::<Step>(b));
        let buffer = BufferDesc {
            label: "onnx:conv1.weight",
            size: 4096,
            dtype: DType::BF16,
            kind: BufferKind::State,
            arena_offset: 128,
            init: Some((64, 4096)),
        };
        agree_corrupted(&encode(&buffer), |b| agree::<BufferDesc<'_>>(b));
        let tensor = TensorDesc {
            name: "img",
            buffer: 0,
            offset: 0,
            dtype: DType::U8,
            shape: [1, 3, 224, 224].into_iter().collect(),
        };
        agree_corrupted(&encode(&tensor), |b| agree::<TensorDesc<'_>>(b));
        let targets = [
            Target::Cpu {
                arch: CpuArch::Aarch64,
                baseline: "cortex-a76",
                features: u64::MAX,
            },
            Target::Adreno {
                chip: 630,
                image: true,
                half: false,
            },
            Target::Amd { gfx: 0x1100 },
            Target::Hexagon { version: 68 },
        ];
        for t in targets {
            agree_corrupted(&encode(&t), |b| agree::<Target<'_>>(b));
        }
    }

    #[test]
    fn demo_bundle_bodies_match_postcard_when_corrupted() {
        for name in ["demo-x86_64.mrt", "demo-aarch64.mrt"] {
            let path = format!("{}/../targets/assets/{name}", env!("CARGO_MANIFEST_DIR"));
            let bytes = std::fs::read(&path).unwrap();
            let header = crate::bundle::header::parse_header(&bytes).unwrap();
            let start = header.byte_len();
            let end = usize::try_from(header.weights_offset).unwrap();
            let body = &bytes[start..end];
            agree::<Body<'_>>(body);
            let mut m = body.to_vec();
            for i in 0..m.len().min(512) {
                let orig = m[i];
                for v in [0x00, 0x01, 0x80, 0xff, orig.wrapping_add(1)] {
                    m[i] = v;
                    agree::<Body<'_>>(&m);
                }
                m[i] = orig;
            }
        }
    }
}
