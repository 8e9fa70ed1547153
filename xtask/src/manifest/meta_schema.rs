//! The schema of the manifest's kernel-metadata records (`meta` of each kernel in `manifest.json`), derived from
//! the Rust declarations that read them ([`crate::manifest::KernelMeta`], whose CPU and AMD records are hal's own
//! bundle types) and checked in as `xtask/exporter/mrt/manifest_schema.json`, against which the exporter checks
//! every record it writes (`mrt/manifest_schema.py`). The record list is [`RECORDS`], the one table; the field names
//! and types come from serde's view of each type (a probing deserializer asks each record for its fields), so a
//! field added, renamed or retyped in Rust changes the schema and fails `checked_in_schema_is_current` until the
//! file is regenerated (`cargo xtask manifest-schema`).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::de::value::{Error, StrDeserializer};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde::Serialize;

use super::schema::{Ir3Meta, KernelMeta};
use modelrt_hal::target::{AmdKernelMeta, CpuKernelMeta};

/// The checked-in schema, relative to the workspace root.
pub const SCHEMA_PATH: &str = "xtask/exporter/mrt/manifest_schema.json";

/// A field's type as the schema spells it: an integer type (`u8` … `i64`, range checked by the exporter), `bool`,
/// `str`, or a list of one of those with an optional maximum length.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum FieldType {
    Scalar(&'static str),
    List {
        list: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_len: Option<usize>,
    },
}

/// A record's fields by name.
pub type Record = BTreeMap<&'static str, FieldType>;

/// How a record's fields are derived: [`record`] of the Rust type it deserializes into.
pub type Fields = fn() -> Result<Record, Error>;

/// Every kernel-metadata record: its key in the manifest (`{"cpu": {...}}`) and the Rust type it deserializes into
/// (`None`: a record without fields).
pub const RECORDS: &[(&str, Option<Fields>)] = &[
    ("cpu", Some(record::<CpuKernelMeta>)),
    ("ir3", Some(record::<Ir3Meta>)),
    ("amd", Some(record::<AmdKernelMeta>)),
    ("qcomcl", None),
];

/// The manifest key of a [`KernelMeta`] variant (exhaustive: a new variant needs a row in [`RECORDS`]).
pub fn record_name(m: &KernelMeta) -> &'static str {
    match m {
        KernelMeta::Cpu(_) => "cpu",
        KernelMeta::Ir3(_) => "ir3",
        KernelMeta::Amd(_) => "amd",
        KernelMeta::QcomCl {} => "qcomcl",
    }
}

/// The whole schema document, as written to [`SCHEMA_PATH`].
pub fn schema() -> Result<serde_json::Value, Error> {
    let mut records = serde_json::Map::new();
    for (name, rec) in RECORDS {
        let fields = match rec {
            Some(f) => serde_json::to_value(f()?).map_err(de::Error::custom)?,
            None => serde_json::json!({}),
        };
        records.insert((*name).to_string(), fields);
    }
    Ok(serde_json::json!({
        "about": "kernel-metadata records of manifest.json; generated from the Rust declarations (xtask/src/manifest/meta_schema.rs) by `cargo xtask manifest-schema`: do not edit",
        "kernel_meta": records,
    }))
}

/// The schema document as text (pretty JSON, one trailing newline).
pub fn schema_text() -> anyhow::Result<String> {
    let v = schema().map_err(|e| anyhow::anyhow!("cannot derive the kernel-meta schema: {e}"))?;
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}

/// Write the schema into the workspace at `root`; returns its path.
pub fn write(root: &Path) -> anyhow::Result<PathBuf> {
    let p = root.join(SCHEMA_PATH);
    std::fs::write(&p, schema_text()?)?;
    Ok(p)
}

/// The fields of record type `T`, as serde deserializes it.
pub fn record<T: DeserializeOwned>() -> Result<Record, Error> {
    let mut fields = Vec::new();
    T::deserialize(Probe {
        out: &mut fields,
        long: None,
    })?;
    let mut rec = Record::new();
    for (name, ty) in fields {
        let ty = match ty {
            FieldType::List { list, .. } => FieldType::List {
                list,
                max_len: max_len::<T>(name),
            },
            t => t,
        };
        rec.insert(name, ty);
    }
    Ok(rec)
}

/// The longest list field `field` of `T` takes (`None`: no limit below 4096).
fn max_len<T: DeserializeOwned>(field: &'static str) -> Option<usize> {
    let ok = |n: usize| {
        T::deserialize(Probe {
            out: &mut Vec::new(),
            long: Some((field, n)),
        })
        .is_ok()
    };
    const CAP: usize = 4096;
    if ok(CAP) {
        return None;
    }
    let (mut lo, mut hi) = (0, CAP); // ok(lo), !ok(hi)
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// Deserializes a record, recording each field's name and type; list field `long.0` gets `long.1` elements
/// (every other list one).
struct Probe<'a> {
    out: &'a mut Vec<(&'static str, FieldType)>,
    long: Option<(&'static str, usize)>,
}

fn unsupported<T>(what: &str) -> Result<T, Error> {
    Err(de::Error::custom(format!(
        "the schema probe supports only structs of integers, bools, strings and lists of those, not {what}"
    )))
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        unsupported("a self-describing value")
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_map(FieldsOf {
            fields,
            next: 0,
            out: self.out,
            long: self.long,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

struct FieldsOf<'a> {
    fields: &'static [&'static str],
    next: usize,
    out: &'a mut Vec<(&'static str, FieldType)>,
    long: Option<(&'static str, usize)>,
}

impl<'de> MapAccess<'de> for FieldsOf<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.fields.get(self.next) {
            Some(name) => {
                let d: StrDeserializer<'_, Error> = name.into_deserializer();
                seed.deserialize(d).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let name = self.fields[self.next];
        self.next += 1;
        let len = match self.long {
            Some((f, n)) if f == name => n,
            _ => 1,
        };
        let mut ty = None;
        let v = seed.deserialize(Value { ty: &mut ty, len })?;
        match ty {
            Some(t) => self.out.push((name, t)),
            None => return unsupported(&format!("field {name}'s type")),
        }
        Ok(v)
    }
}

/// One field's value: records its type and hands the visitor a zero of it (a list: `len` zeros).
struct Value<'a> {
    ty: &'a mut Option<FieldType>,
    len: usize,
}

macro_rules! scalar {
    ($($de:ident $visit:ident $t:ident $zero:expr;)*) => {$(
        fn $de<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            *self.ty = Some(FieldType::Scalar(stringify!($t)));
            visitor.$visit($zero)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Value<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        unsupported("a self-describing value")
    }

    scalar! {
        deserialize_bool visit_bool bool false;
        deserialize_u8 visit_u8 u8 0;
        deserialize_u16 visit_u16 u16 0;
        deserialize_u32 visit_u32 u32 0;
        deserialize_u64 visit_u64 u64 0;
        deserialize_i8 visit_i8 i8 0;
        deserialize_i16 visit_i16 i16 0;
        deserialize_i32 visit_i32 i32 0;
        deserialize_i64 visit_i64 i64 0;
        deserialize_str visit_str str "";
        deserialize_string visit_str str "";
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let mut elem = None;
        let v = visitor.visit_seq(Elems {
            left: self.len,
            ty: &mut elem,
        })?;
        match elem {
            Some(FieldType::Scalar(list)) => {
                *self.ty = Some(FieldType::List {
                    list,
                    max_len: None,
                })
            }
            _ => return unsupported("a list of lists"),
        }
        Ok(v)
    }

    serde::forward_to_deserialize_any! {
        i128 u128 f32 f64 char bytes byte_buf option unit unit_struct newtype_struct tuple tuple_struct map
        struct enum identifier ignored_any
    }
}

struct Elems<'a> {
    left: usize,
    ty: &'a mut Option<FieldType>,
}

impl<'de> SeqAccess<'de> for Elems<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(Value {
            ty: self.ty,
            len: 1,
        })
        .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checked-in schema is what the Rust declarations produce (regenerate: `cargo xtask manifest-schema`).
    #[test]
    fn checked_in_schema_is_current() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let on_disk = std::fs::read_to_string(root.join(SCHEMA_PATH)).unwrap_or_default();
        assert!(
            on_disk == schema_text().unwrap(),
            "{SCHEMA_PATH} differs from the Rust declarations of the kernel-meta records: run `cargo xtask manifest-schema` (and make the exporter write the new fields)"
        );
    }

    /// The probe sees hal's field types: the drifts this schema exists to catch are visible in it.
    #[test]
    fn records_carry_hal_field_types() {
        let amd = record::<AmdKernelMeta>().unwrap();
        assert_eq!(amd["descriptor_offset"], FieldType::Scalar("u32"));
        assert_eq!(amd["wavefront_size"], FieldType::Scalar("u8"));
        assert_eq!(amd["kernel_code_properties"], FieldType::Scalar("u16"));
        let ir3 = record::<Ir3Meta>().unwrap();
        assert_eq!(
            ir3["tex_to_image"],
            FieldType::List {
                list: "u8",
                max_len: Some(32)
            }
        );
        assert_eq!(ir3["immediates"], FieldType::Scalar("str"));
        assert_eq!(record::<CpuKernelMeta>().unwrap().len(), 1);
    }

    /// Every [`KernelMeta`] variant has a row in [`RECORDS`] under the key serde writes it with.
    #[test]
    fn every_variant_has_a_record() {
        let samples: Vec<KernelMeta> = vec![
            serde_json::from_value(serde_json::json!({"cpu": {"threads": 1}})).unwrap(),
            KernelMeta::QcomCl {},
        ];
        for m in &samples {
            let v = serde_json::to_value(m).unwrap();
            let key = v.as_object().unwrap().keys().next().unwrap().clone();
            assert_eq!(key, record_name(m));
        }
        let names: Vec<&str> = RECORDS.iter().map(|r| r.0).collect();
        for n in ["cpu", "ir3", "amd", "qcomcl"] {
            assert!(names.contains(&n), "{n}");
        }
    }
}
