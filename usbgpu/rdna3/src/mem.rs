//! Memory instructions: SMEM scalar loads, GLOBAL loads/stores and DS (LDS) accesses (docs/hw/rdna3-isa.md
//! §9). Memory is synchronous here, so `s_waitcnt` has nothing to wait for.
//!
//! - SMEM: address = 64-bit SBASE pair + signed 21-bit offset (+ SOFFSET register), low 2 bits
//!   ignored; the dwords land in consecutive SGPRs.
//! - GLOBAL: with SADDR = off the address is the lane's 64-bit VGPR pair + the signed 13-bit
//!   offset; with an SGPR pair it is that pair + the lane's 32-bit VGPR (zero-extended) + offset.
//!   Only active lanes access memory. Sub-dword loads zero- or sign-extend; `d16` loads replace one
//!   half of the VGPR and keep the other.
//! - SCRATCH: the GLOBAL operations on per-lane private memory held by the wave (§9).
//! - DS: address = the lane's VGPR + offset (offset1:offset0 as one 16-bit value); an access
//!   outside the workgroup's LDS allocation reads 0 and drops writes (the LDS bounds rule).
//!
//! Any GPU page fault stops the wave with the faulting address.
use super::decode::Inst;
use super::operand::{Src, NULL};
use super::ops::Op;
use super::wave::{Wave, LANES};
use crate::shader::{GpuMemory, MemFault};

/// Execute an SMEM load.
pub fn smem(w: &mut Wave, i: &Inst, mem: &mut dyn GpuMemory) -> Result<(), MemFault> {
    let base = w.scalar64(i.src[0]);
    let soff = match i.src[1] {
        Src::S(NULL) => 0,
        s => u64::from(w.scalar(s)),
    };
    let addr = base.wrapping_add(i.imm as i64 as u64).wrapping_add(soff) & !3;
    let n = usize::from(i.op.dst_dwords());
    let mut buf = [0u8; 64];
    mem.read(addr, &mut buf[..n * 4])?;
    for k in 0..n {
        let v = u32::from_le_bytes(buf[k * 4..k * 4 + 4].try_into().unwrap_or([0; 4]));
        w.set_s(i.dst.wrapping_add(k as u8) & 127, v);
    }
    Ok(())
}

/// Bytes a GLOBAL/DS operation moves per lane.
fn size(op: Op) -> usize {
    use Op::*;
    match op {
        GlobalLoadU8 | GlobalLoadI8 | GlobalStoreB8 | DsStoreB8 | DsLoadU8 => 1,
        GlobalLoadU16 | GlobalLoadI16 | GlobalStoreB16 | GlobalLoadD16B16 | GlobalLoadD16HiB16
        | GlobalStoreD16HiB16 | DsStoreB16 | DsLoadU16 => 2,
        _ => usize::from(op.dst_dwords()) * 4,
    }
}

/// The bytes a store takes from the lane's data VGPRs.
fn store_bytes(w: &Wave, i: &Inst, l: usize, out: &mut [u8; 16]) -> usize {
    let Src::V(d) = i.src[1] else { return 0 };
    let n = size(i.op);
    let dwords = n.div_ceil(4);
    for k in 0..dwords {
        let mut v = w.v[(usize::from(d) + k) & 255][l];
        if i.op == Op::GlobalStoreD16HiB16 {
            v >>= 16;
        }
        out[k * 4..k * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    n
}

/// Write loaded bytes of lane `l` into the destination VGPRs, extending as the op asks.
fn load_into(w: &mut Wave, i: &Inst, l: usize, data: &[u8]) {
    use Op::*;
    let d = usize::from(i.dst);
    let v = match i.op {
        GlobalLoadU8 | DsLoadU8 => u32::from(data[0]),
        GlobalLoadI8 => data[0] as i8 as i32 as u32,
        GlobalLoadU16 | DsLoadU16 => u32::from(u16::from_le_bytes([data[0], data[1]])),
        GlobalLoadI16 => i16::from_le_bytes([data[0], data[1]]) as i32 as u32,
        GlobalLoadD16B16 => {
            (w.v[d][l] & 0xffff_0000) | u32::from(u16::from_le_bytes([data[0], data[1]]))
        }
        GlobalLoadD16HiB16 => {
            (w.v[d][l] & 0xffff) | u32::from(u16::from_le_bytes([data[0], data[1]])) << 16
        }
        _ => {
            for (k, c) in data.chunks_exact(4).enumerate() {
                w.v[(d + k) & 255][l] = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
            return;
        }
    };
    w.v[d][l] = v;
}

/// Execute a GLOBAL load or store for every active lane.
pub fn global(w: &mut Wave, i: &Inst, mem: &mut dyn GpuMemory) -> Result<(), MemFault> {
    let exec = w.exec();
    let Src::V(a) = i.src[0] else { return Ok(()) };
    let a = usize::from(a);
    let base = match i.src[2] {
        Src::S(NULL) => None,
        s => Some(w.scalar64(s)),
    };
    let n = size(i.op);
    let store = i.op.is_store();
    let mut buf = [0u8; 16];
    for l in 0..LANES {
        if exec >> l & 1 == 0 {
            continue;
        }
        let addr = match base {
            None => u64::from(w.v[a][l]) | u64::from(w.v[(a + 1) & 255][l]) << 32,
            Some(b) => b.wrapping_add(u64::from(w.v[a][l])),
        }
        .wrapping_add(i.imm as i64 as u64);
        if store {
            let n = store_bytes(w, i, l, &mut buf);
            mem.write(addr, &buf[..n])?;
        } else {
            mem.read(addr, &mut buf[..n])?;
            load_into(w, i, l, &buf[..n]);
        }
    }
    Ok(())
}

/// Execute a SCRATCH load or store for every active lane: the address (the lane's VGPR when SVE
/// is set, plus the SGPR offset when SADDR is not `off`, plus the instruction offset) is a byte
/// offset into the lane's own private memory; outside it, loads read 0 and stores are dropped.
pub fn scratch(w: &mut Wave, i: &Inst) {
    let base = match i.src[2] {
        Src::S(NULL) => 0,
        s => w.scalar(s),
    };
    let per_lane = w.scratch_lane;
    let mut private = core::mem::take(&mut w.scratch);
    for l in active(w) {
        let v = match i.src[0] {
            Src::V(a) => w.v[usize::from(a)][l],
            _ => 0,
        };
        let addr = v.wrapping_add(base).wrapping_add(i.imm as u32) as usize;
        let lane = &mut private[l * per_lane..(l + 1) * per_lane];
        bounded(w, i, l, lane, addr);
    }
    w.scratch = private;
}

/// Execute a DS (LDS) load or store for every active lane.
pub fn ds(w: &mut Wave, i: &Inst, lds: &mut [u8]) {
    let Src::V(a) = i.src[0] else { return };
    let off = u32::from(i.imm as u8) | u32::from(i.imm1) << 8;
    for l in active(w) {
        let addr = w.v[usize::from(a)][l].wrapping_add(off) as usize;
        bounded(w, i, l, lds, addr);
    }
}

/// The active lanes of `w`.
fn active(w: &Wave) -> impl Iterator<Item = usize> {
    let exec = w.exec();
    (0..LANES).filter(move |l| exec >> l & 1 == 1)
}

/// One lane's load or store at byte `addr` of `space` (LDS, or the lane's private memory):
/// outside `space` a load reads 0 and a store is dropped.
fn bounded(w: &mut Wave, i: &Inst, l: usize, space: &mut [u8], addr: usize) {
    let n = size(i.op);
    let inside = addr.checked_add(n).is_some_and(|end| end <= space.len());
    let mut buf = [0u8; 16];
    if i.op.is_store() {
        let n = store_bytes(w, i, l, &mut buf);
        if inside {
            space[addr..addr + n].copy_from_slice(&buf[..n]);
        }
    } else {
        if inside {
            buf[..n].copy_from_slice(&space[addr..addr + n]);
        }
        load_into(w, i, l, &buf[..n]);
    }
}
