//! The model's memory: GPU objects backed by zeroed host allocations (mapped at their host address, as
//! KGSL's USE_CPU_MAP makes GPU and CPU addresses equal), user-memory imports, and the checked address
//! lookups the validator reads and writes through. Nothing here trusts an address from a stream.
use super::{KgslModel, R};

/// One GPU object; `mem` is its host allocation once mapped. A mapped object's memory is released only
/// by `munmap`: the model has no `Drop` that frees it, so a [`crate::kgsl::GpuObj`] that outlives the
/// model stays valid (its memory is leaked instead), as a real `mmap` outlives its file descriptor.
pub(super) struct Obj {
    pub(super) size: u64,
    pub(super) mem: Option<(*mut u8, std::alloc::Layout)>,
}

impl KgslModel {
    pub(super) fn find(&self, addr: u64, len: u64) -> Option<(u32, u64)> {
        let (&va, &id) = self.by_va.range(..=addr).next_back()?;
        let o = self.objs.get(&id)?;
        (addr.checked_add(len)? <= va + o.size).then_some((id, addr - va))
    }

    pub(super) fn in_user_map(&self, addr: u64, len: u64) -> bool {
        self.user_maps
            .range(..=addr)
            .next_back()
            .is_some_and(|(&b, &l)| {
                addr.checked_add(len)
                    .is_some_and(|end| b.checked_add(l).is_some_and(|map_end| end <= map_end))
            })
    }

    pub(super) fn check_range(&self, what: &str, addr: u64, len: u64) -> R<()> {
        if self.find(addr, len).is_some() || self.in_user_map(addr, len) {
            Ok(())
        } else {
            Err(format!(
                "{what} {addr:#x}+{len:#x} is not inside a live GPU object"
            ))
        }
    }

    pub(super) fn ptr(&self, addr: u64, len: u64, what: &str) -> R<*mut u8> {
        let (id, off) = self
            .find(addr, len)
            .ok_or_else(|| outside(what, addr, len))?;
        let (p, _) = self.objs[&id].mem.ok_or_else(|| unmapped(what, addr, id))?;
        // SAFETY: off+len ≤ object size (find checked), so the offset pointer stays inside the allocation.
        Ok(unsafe { p.add(off as usize) })
    }

    /// Read `len` bytes of GPU memory (only model-owned objects).
    pub fn read(&self, addr: u64, len: usize) -> R<Vec<u8>> {
        let mut v = vec![0u8; len];
        self.read_into(addr, &mut v)?;
        Ok(v)
    }

    /// Read `out.len()` bytes of GPU memory into `out` (only model-owned objects).
    pub fn read_into(&self, addr: u64, out: &mut [u8]) -> R<()> {
        let p = self.ptr(addr, out.len() as u64, "read")?;
        // SAFETY: `p..p+out.len()` lies inside a live allocation owned by the model; `out` is a distinct Rust
        // borrow, so the ranges do not overlap.
        unsafe { core::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    pub(super) fn write(&mut self, addr: u64, data: &[u8]) -> R<()> {
        let p = self.ptr(addr, data.len() as u64, "store")?;
        // SAFETY: inside a live allocation owned by the model (checked by `ptr`).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
        Ok(())
    }

    /// Every mapped object's bytes, borrowed for as long as the model is, for threads to read at once.
    pub(super) fn view(&self) -> ObjView<'_> {
        let objs = self
            .by_va
            .iter()
            .filter_map(|(&va, id)| {
                let o = self.objs.get(id)?;
                let bytes = o.mem.map(|(p, _)| {
                    // SAFETY: `p` is the start of the object's live host allocation of exactly `size` bytes
                    // (`mmap_obj`; freed only by `munmap`, which needs `&mut self`). The model writes objects
                    // only through `&mut self`, so not while this shared borrow lasts; the process's own
                    // mapping of the object (a `GpuObj`, not `Sync`) is not used while the model runs, since
                    // the model runs inside the process's ioctl call, as a GPU runs while the CPU waits.
                    unsafe { core::slice::from_raw_parts(p as *const u8, o.size as usize) }
                });
                Some((va, *id, o.size, bytes))
            })
            .collect();
        ObjView { objs }
    }

    pub(super) fn read_u32(&self, addr: u64) -> R<u32> {
        let b = self.read(addr, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(super) fn dwords(&self, addr: u64, n: usize) -> R<Vec<u32>> {
        let b = self.read(addr, n * 4)?;
        Ok(b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    pub(super) fn is_dummy(&self, addr: u64) -> bool {
        self.find(addr, 4)
            .is_some_and(|(id, _)| Some(id) == self.dummy)
    }
}

fn outside(what: &str, addr: u64, len: u64) -> String {
    format!("{what} {addr:#x}+{len:#x} outside GPU objects")
}

fn unmapped(what: &str, addr: u64, id: u32) -> String {
    format!("{what} {addr:#x}: object {id} is not mapped")
}

/// The model's objects as [`KgslModel::view`] borrowed them: `(va, id, size, bytes if mapped)` by address.
/// Lookups and error texts are those of [`KgslModel::read_into`] and the model's checked writes.
pub(super) struct ObjView<'a> {
    objs: Vec<(u64, u32, u64, Option<&'a [u8]>)>,
}

impl ObjView<'_> {
    /// The bytes `[addr, addr + len)` of one mapped object, or the model's error for an access `what`.
    fn slice(&self, addr: u64, len: u64, what: &str) -> R<&[u8]> {
        let i = self.objs.partition_point(|o| o.0 <= addr);
        let (va, id, size, bytes) = *i
            .checked_sub(1)
            .and_then(|i| self.objs.get(i))
            .filter(|o| addr.checked_add(len).is_some_and(|end| end <= o.0 + o.2))
            .ok_or_else(|| outside(what, addr, len))?;
        let bytes = bytes.ok_or_else(|| unmapped(what, addr, id))?;
        let off = (addr - va) as usize;
        debug_assert!(off as u64 + len <= size);
        Ok(&bytes[off..off + len as usize])
    }

    pub(super) fn read(&self, addr: u64, out: &mut [u8]) -> R<()> {
        out.copy_from_slice(self.slice(addr, out.len() as u64, "read")?);
        Ok(())
    }

    pub(super) fn check_write(&self, addr: u64, len: usize) -> R<()> {
        self.slice(addr, len as u64, "store").map(|_| ())
    }

    /// Every mapped object's address and bytes, in address order.
    pub(super) fn mapped(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.objs.iter().filter_map(|o| Some((o.0, o.3?)))
    }
}
