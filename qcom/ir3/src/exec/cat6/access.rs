//! cat6 loads and stores for the issued fibers, Mesa's `ldg`/`ldl`/`ldp`/`stg`/`stl`/`stp` and the blob's
//! `ldg.a`/`stg.a`/`ldlw`/`stlw` (docs/hw/adreno-kgsl-pm4.md §16.4, §16.9): global memory through [`GpuMemory`]
//! (64-bit register-pair addresses, every access checked by the memory, an indexed address adding its shifted
//! index), work-group shared memory and per-fiber private memory.
use crate::exec::group::{fault, Group};
use crate::exec::memory::GpuMemory;
use crate::instr::*;

impl Group {
    /// `ldg`/`ldl`/`ldp` for the issued fibers.
    pub(in crate::exec) fn load(
        &mut self,
        m: Access,
        index: Index,
        lanes: &[u32],
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        let eb = m.ty.bytes() as usize;
        let len = eb * m.size as usize;
        let addrs = self.global_addrs(m.space, m.addr, m.off, index, lanes);
        let span = Span::read(&addrs, len, mem);
        let mut buf = vec![0u8; len];
        for (k, &i) in lanes.iter().enumerate() {
            match (m.space, &span) {
                (Space::Global, Some(sp)) => buf.copy_from_slice(sp.at(addrs[k], len)),
                (Space::Global, None) => mem.read(addrs[k], &mut buf).map_err(|e| fault(i, e))?,
                (Space::Local, _) => {
                    let a = self.local_addr(m.addr, m.off, i, len)?;
                    buf.copy_from_slice(&self.shared[a..a + len]);
                }
                (Space::Private, _) => buf.copy_from_slice(self.private_at(m.addr, m.off, i, len)?),
            }
            for (c, e) in buf.chunks_exact(eb).enumerate() {
                let raw = match eb {
                    4 => u32::from_le_bytes([e[0], e[1], e[2], e[3]]),
                    2 => u16::from_le_bytes([e[0], e[1]]) as u32,
                    _ => e[0] as u32,
                };
                self.set_reg_raw(m.reg + c as u16, i, raw, m.ty.is_half_mem());
            }
        }
        Ok(())
    }

    /// `stg`/`stl`/`stp` for the issued fibers (in fiber order, so a later fiber's bytes win).
    pub(in crate::exec) fn store(
        &mut self,
        m: Access,
        index: Index,
        lanes: &[u32],
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        let eb = m.ty.bytes() as usize;
        let len = eb * m.size as usize;
        let addrs = self.global_addrs(m.space, m.addr, m.off, index, lanes);
        let mut span = if mem.span_stores() {
            Span::read(&addrs, len, mem)
        } else {
            None
        };
        let mut buf = vec![0u8; len];
        for (k, &i) in lanes.iter().enumerate() {
            for c in 0..m.size as usize {
                let raw = self.reg_raw(m.reg + c as u16, i, m.ty.is_half_mem());
                buf[c * eb..(c + 1) * eb].copy_from_slice(&raw.to_le_bytes()[..eb]);
            }
            match (m.space, &mut span) {
                (Space::Global, Some(sp)) => sp.at_mut(addrs[k], len).copy_from_slice(&buf),
                (Space::Global, None) => mem.write(addrs[k], &buf).map_err(|e| fault(i, e))?,
                (Space::Local, _) => {
                    let a = self.local_addr(m.addr, m.off, i, len)?;
                    self.shared[a..a + len].copy_from_slice(&buf);
                }
                (Space::Private, _) => self
                    .private_at(m.addr, m.off, i, len)?
                    .copy_from_slice(&buf),
            }
        }
        if let Some(sp) = span {
            mem.write(sp.lo, &sp.bytes)?;
        }
        Ok(())
    }

    /// The global address of every issued fiber (empty for other spaces).
    /// With `index` (`ldg.a`/`stg.a`), the fiber's index register shifted left, computed in 64 bits from the
    /// zero-extended 32-bit value, is added too.
    fn global_addrs(
        &self,
        space: Space,
        addr: RegNum,
        off: i32,
        index: Index,
        lanes: &[u32],
    ) -> Vec<u64> {
        if space != Space::Global {
            return Vec::new();
        }
        lanes
            .iter()
            .map(|&i| {
                let x = index.map_or(0, |(r, s)| (self.reg_raw(r, i, false) as u64) << s);
                self.addr64(addr, i)
                    .wrapping_add(off as i64 as u64)
                    .wrapping_add(x)
            })
            .collect()
    }

    fn addr64(&self, r: RegNum, lane: u32) -> u64 {
        self.reg_raw(r, lane, false) as u64 | (self.reg_raw(r + 1, lane, false) as u64) << 32
    }

    /// `len` bytes of fiber `lane`'s private memory at byte address `r + off` (what ir3 emits for scratch and
    /// spills); bytes never stored read as zero.
    fn private_at(
        &mut self,
        r: RegNum,
        off: i32,
        lane: u32,
        len: usize,
    ) -> Result<&mut [u8], String> {
        let a = self.reg_raw(r, lane, false) as i64 + off as i64;
        if a < 0 || a as usize + len > PRIVATE_MAX {
            return Err(format!(
                "fiber {lane}: private-memory access at {a}+{len} outside {PRIVATE_MAX} bytes"
            ));
        }
        let (a, end) = (a as usize, a as usize + len);
        let v = &mut self.private[lane as usize];
        if v.len() < end {
            v.resize(end, 0);
        }
        Ok(&mut v[a..end])
    }

    /// Index into the batch's shared memory of fiber `lane`'s work-group address `r + off`.
    pub(in crate::exec) fn local_addr(
        &self,
        r: RegNum,
        off: i32,
        lane: u32,
        len: usize,
    ) -> Result<usize, String> {
        let a = self.reg_raw(r, lane, false) as i64 + off as i64;
        if a < 0 || a as usize + len > self.shared_bytes {
            return Err(format!(
                "fiber {lane}: shared-memory access at {a}+{len} outside the {} bytes of the work group",
                self.shared_bytes
            ));
        }
        Ok(lane as usize / self.wg_n * self.shared_bytes + a as usize)
    }
}

/// The index register and shift of an `ldg.a`/`stg.a` address (None for plain accesses).
pub(in crate::exec) type Index = Option<(RegNum, u8)>;

/// Bound chosen here on one fiber's private memory, so a wild address is an error, not an allocation.
const PRIVATE_MAX: usize = 256 << 10;

/// Largest byte range read at once for the global accesses of one instruction.
const MAX_SPAN: u64 = 1 << 18;

/// The bytes between the lowest and highest address the issued fibers touch, read with one access when the range
/// is small, densely used and lies inside one object (otherwise every fiber accesses memory itself, so a fault
/// names its fiber). Stores patch the span in fiber order and write it back once: the same bytes as fiber-by-fiber stores.
struct Span {
    lo: u64,
    bytes: Vec<u8>,
}

impl Span {
    fn read(addrs: &[u64], len: usize, mem: &mut dyn GpuMemory) -> Option<Span> {
        let lo = *addrs.iter().min()?;
        let hi = addrs.iter().max()?.checked_add(len as u64)?;
        // Copying the range costs about a nanosecond per 8 bytes, a checked access per fiber some 40 ns: copy when
        // the range is below ~256 bytes per fiber (widely strided accesses go fiber by fiber).
        let dense = (addrs.len() * 256).max(4096) as u64;
        if hi - lo > MAX_SPAN.min(dense) {
            return None;
        }
        let mut bytes = vec![0u8; (hi - lo) as usize];
        mem.read(lo, &mut bytes).ok()?;
        Some(Span { lo, bytes })
    }
    fn at(&self, a: u64, len: usize) -> &[u8] {
        let o = (a - self.lo) as usize;
        &self.bytes[o..o + len]
    }
    fn at_mut(&mut self, a: u64, len: usize) -> &mut [u8] {
        let o = (a - self.lo) as usize;
        &mut self.bytes[o..o + len]
    }
}
