//! Execution of the blob-compiler forms decoded by `blob_decode` (docs/hw/adreno-kgsl-pm4.md §16.9):
//! indexed global accesses and the tessellation-named local accesses go through the plain load/store paths of
//! `mem`; `ldib` reads a texel like `isam` does; `dp2acc`/`dp4acc` are byte dot products; local atomics update the work group's shared memory fiber by fiber, in fiber order.
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
            ExtKind::Dot {
                four,
                mixed,
                high,
                sat,
                neg3,
                dst,
                src,
            } => {
                for &i in lanes {
                    let [a, b, c] = src.map(|r| self.reg_raw(r, i, false));
                    let v = dot((four, high), (mixed, sat, neg3), [a, b, c]);
                    self.set_reg_raw(dst, i, v, false);
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
            ExtKind::Wave(op) => self.wave_op(op, lanes),
            ExtKind::Atomic { .. } => self.atomic_rmw(e.kind, lanes, mem),
            ExtKind::Resinfo { .. } | ExtKind::Ldib1d { .. } => self.ibo_ext(e.kind, lanes, l, mem),
            ExtKind::Sam(s) => self.sam(&s, lanes, l, mem),
            ExtKind::NoEffect => Ok(()),
            ExtKind::Ibo(_) | ExtKind::ResinfoB { .. } => self.bindless_ext(e.kind, lanes, l, mem),
            ExtKind::Ldc { .. }
            | ExtKind::LdcK { .. }
            | ExtKind::LdgK { .. }
            | ExtKind::Stc { .. } => self.ubo_ext(e.kind, lanes, l, mem),
        }
    }
}

/// The value an atomic leaves in memory, from the old value and the operand.
pub(super) fn atomic(op: AtomicOp, signed: bool, old: u32, v: u32) -> u32 {
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

/// `dp2acc`/`dp4acc` on one fiber's register values (see [`ExtKind::Dot`]).
/// `shape` = (four, high), `mode` = (mixed, sat, neg3), `v` = the three source values.
fn dot(shape: (bool, bool), mode: (bool, bool, bool), v: [u32; 3]) -> u32 {
    let ((four, high), (mixed, sat, neg3), [a, b, c]) = (shape, mode, v);
    let bytes: &[usize] = match (four, high) {
        (true, _) => &[0, 1, 2, 3],
        (false, false) => &[0, 1],
        (false, true) => &[2, 3],
    };
    let byte = |v: u32, k: usize| (v >> (8 * k)) as u8;
    let mut sum: i64 = bytes
        .iter()
        .map(|&k| {
            let x = if mixed {
                byte(a, k) as i8 as i64
            } else {
                byte(a, k) as i64
            };
            x * byte(b, k) as i64
        })
        .sum();
    let acc = if mixed { c as i32 as i64 } else { c as i64 };
    sum += if neg3 { -acc } else { acc };
    match (sat, mixed) {
        (true, true) => sum.clamp(i32::MIN as i64, i32::MAX as i64) as u32,
        (true, false) => sum.clamp(0, u32::MAX as i64) as u32,
        _ => sum as u32,
    }
}
