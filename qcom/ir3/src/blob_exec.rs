//! Execution of the blob-compiler forms decoded by `blob_decode` (docs/hw/adreno-kgsl-pm4.md §16.9):
//! indexed global accesses and the tessellation-named local accesses go through the plain load/store paths of
//! `mem`; `ldib` reads a texel like `isam` does; local atomics update the work group's shared memory fiber by fiber, in fiber order.
use super::exec::Group;
use super::instr::*;
use super::launch::Launch;
use super::mem::read_texel;
use super::memory::GpuMemory;
use modelrt_core::half::f32_to_f16;

impl Group {
    pub(super) fn ext(
        &mut self,
        e: &Ext,
        lanes: &[u32],
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        match e.kind {
            ExtKind::Mem { m, index } if m.store => self.store(m, index, lanes, mem),
            ExtKind::Mem { m, index } => self.load(m, index, lanes, mem),
            ExtKind::Ldib {
                ty,
                dst,
                coord,
                slot,
            } => {
                let img = *l
                    .uavs
                    .get(slot as usize)
                    .ok_or_else(|| format!("UAV {slot} is not bound ({} loaded)", l.uavs.len()))?;
                for &i in lanes {
                    let x = self.reg_raw(coord, i, false) as i32;
                    let y = self.reg_raw(coord + 1, i, false) as i32;
                    let texel = read_texel(&img, x, y, mem)
                        .map_err(|e| format!("GPU fault in fiber {i}: {e}"))?;
                    for (c, v) in texel.iter().enumerate() {
                        let raw = match ty {
                            Ty::F16 => f32_to_f16(*v) as u32,
                            _ => v.to_bits(),
                        };
                        self.set_reg_raw(dst + c as u16, i, raw, ty == Ty::F16);
                    }
                }
                Ok(())
            }
            ExtKind::AtomicLocal {
                op,
                signed,
                dst,
                addr,
                src,
            } => {
                for &i in lanes {
                    let a = self.local_addr(addr, 0, i, 4)?;
                    let b = &mut self.shared[a..a + 4];
                    let old = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    let v = self.reg_raw(src, i, false);
                    let new = atomic(op, signed, old, v);
                    self.shared[a..a + 4].copy_from_slice(&new.to_le_bytes());
                    self.set_reg_raw(dst, i, old, false);
                }
                Ok(())
            }
        }
    }
}

/// The value an atomic leaves in memory, from the old value and the operand.
fn atomic(op: AtomicOp, signed: bool, old: u32, v: u32) -> u32 {
    match op {
        AtomicOp::Add => old.wrapping_add(v),
        AtomicOp::Sub => old.wrapping_sub(v),
        AtomicOp::Xchg => v,
        AtomicOp::Min if signed => (old as i32).min(v as i32) as u32,
        AtomicOp::Max if signed => (old as i32).max(v as i32) as u32,
        AtomicOp::Min => old.min(v),
        AtomicOp::Max => old.max(v),
        AtomicOp::And => old & v,
        AtomicOp::Or => old | v,
        AtomicOp::Xor => old ^ v,
    }
}
