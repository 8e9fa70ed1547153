//! [`Table`]: a list of postcard records readable without an allocator.
//!
//! Encoding: `count` (varint), `index` (bytes: `count` little-endian u32 record offsets into `data`,
//! strictly increasing, first = 0), `data` (bytes: the records back to back). Lookup by index is O(1);
//! records borrow from the bundle bytes.
use core::marker::PhantomData;

use serde::de::Deserialize;
use serde::{Deserializer, Serialize, Serializer};

use super::BundleError;

/// A borrowed table of `T` records.
pub struct Table<'a, T> {
    count: u32,
    index: &'a [u8],
    data: &'a [u8],
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Table<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Table<'_, T> {}

impl<T> core::fmt::Debug for Table<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Table({} records, {} bytes)",
            self.count,
            self.data.len()
        )
    }
}

impl<'a, T: Deserialize<'a>> Table<'a, T> {
    /// Build a table view from already-encoded parts (used by the writer and tests).
    pub fn from_parts(count: u32, index: &'a [u8], data: &'a [u8]) -> Self {
        Table {
            count,
            index,
            data,
            _t: PhantomData,
        }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True if the table has no records.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The index and data without the record type: the checks below are compiled once, not once
    /// per record type (this keeps the `no_std` footprint down).
    pub(crate) fn raw(&self) -> RawIndex<'a> {
        RawIndex {
            count: self.count,
            index: self.index,
            data: self.data,
        }
    }

    /// Decode record `i`.
    pub fn get(&self, i: usize) -> Result<T, BundleError> {
        let err = BundleError::Table {
            table: core::any::type_name::<T>(),
            index: i as u32,
        };
        let rec = self.raw().record(i).ok_or(err)?;
        let (value, rest) = super::decode::take_from_bytes::<T>(rec).map_err(|_| err)?;
        if !rest.is_empty() {
            return Err(err);
        }
        Ok(value)
    }

    /// Iterate over all records in order.
    pub fn iter(&self) -> TableIter<'a, T> {
        TableIter {
            table: *self,
            next: 0,
        }
    }

    /// Check the index: right length, first offset 0, strictly increasing, inside `data`.
    pub(crate) fn check_index(&self, table: &'static str) -> Result<(), BundleError> {
        self.raw().check(table)
    }
}

/// A table's index and data, independent of the record type.
#[derive(Clone, Copy)]
pub(crate) struct RawIndex<'a> {
    count: u32,
    index: &'a [u8],
    data: &'a [u8],
}

impl<'a> RawIndex<'a> {
    fn offset(&self, i: usize) -> Option<usize> {
        let at = i.checked_mul(4)?;
        let b = self.index.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    /// The bytes of record `i`, if the index locates them.
    #[inline(never)]
    fn record(self, i: usize) -> Option<&'a [u8]> {
        let len = self.count as usize;
        if i >= len {
            return None;
        }
        let start = self.offset(i)?;
        let end = if i + 1 < len {
            self.offset(i + 1)?
        } else {
            self.data.len()
        };
        self.data.get(start..end)
    }

    #[inline(never)]
    pub(crate) fn check(self, table: &'static str) -> Result<(), BundleError> {
        let bad = |index| BundleError::Table { table, index };
        let len = self.count as usize;
        if Some(self.index.len()) != len.checked_mul(4) {
            return Err(bad(0));
        }
        let mut prev: Option<usize> = None;
        for i in 0..len {
            let off = self.offset(i).ok_or(bad(i as u32))?;
            let ok = match prev {
                None => off == 0,
                Some(p) => off > p,
            };
            if !ok || off >= self.data.len() {
                return Err(bad(i as u32));
            }
            prev = Some(off);
        }
        if len == 0 && !self.data.is_empty() {
            return Err(bad(0));
        }
        Ok(())
    }
}

/// Iterator over a [`Table`]'s records.
pub struct TableIter<'a, T> {
    table: Table<'a, T>,
    next: usize,
}

impl<'a, T: Deserialize<'a>> Iterator for TableIter<'a, T> {
    type Item = Result<T, BundleError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.table.len() {
            return None;
        }
        let item = self.table.get(self.next);
        self.next += 1;
        Some(item)
    }
}

#[derive(Serialize, serde::Deserialize)]
struct RawTable<'a> {
    count: u32,
    #[serde(borrow, with = "serde_bytes_compat")]
    index: &'a [u8],
    #[serde(borrow, with = "serde_bytes_compat")]
    data: &'a [u8],
}

/// Serialize `&[u8]` as bytes (postcard: varint length + raw), borrowing on the way back.
mod serde_bytes_compat {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &&[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<&'de [u8], D::Error> {
        <&'de [u8]>::deserialize(d)
    }
}

impl<T> Serialize for Table<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RawTable {
            count: self.count,
            index: self.index,
            data: self.data,
        }
        .serialize(s)
    }
}

impl<'de: 'a, 'a, T> Deserialize<'de> for Table<'a, T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawTable::deserialize(d)?;
        Ok(Table {
            count: raw.count,
            index: raw.index,
            data: raw.data,
            _t: PhantomData,
        })
    }
}
