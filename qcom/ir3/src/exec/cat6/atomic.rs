//! cat6 atomics (docs/hw/adreno-kgsl-pm4.md §16.10): the blob's local `atomic.OP…l` add…xor
//! ([`ExtKind::AtomicLocal`]), local `inc`/`dec`/`cmpxchg` on the work group's shared memory and every global
//! `atomic.g.OP` on a 64-bit address pair ([`ExtKind::Atomic`]), and the value every atomic leaves in memory
//! ([`atomic`], also for `atomic.b` on bindless buffers). Fibers update the word one after another in fiber order,
//! each getting the old word back. A dispatch whose shader has a global or UAV atomic runs its work groups on one
//! thread ([`needs_serial`]), so every atomic sees every earlier one.
use crate::exec::group::Group;
use crate::exec::memory::GpuMemory;
use crate::instr::*;
use crate::program::Program;

/// Whether `prog` must run serially: global and UAV atomics read what other work groups wrote.
pub(in crate::exec) fn needs_serial(prog: &Program) -> bool {
    prog.instrs.iter().any(|i| {
        matches!(
            i.op,
            Op::Ext(Ext {
                kind: ExtKind::Atomic { global: true, .. }
                    | ExtKind::Ibo(IboArgs {
                        op: IboOp::Atomic(_),
                        ..
                    }),
                ..
            })
        )
    })
}

/// The value an atomic leaves in memory, from the old value and the operand.
pub(in crate::exec) fn atomic(op: AtomicOp, signed: bool, old: u32, v: u32) -> u32 {
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

/// The word an atomic leaves in memory; `v` = the operand, `cmp` = the compare value of `cmpxchg`.
fn rmw(op: RmwOp, signed: bool, old: u32, v: u32, cmp: u32) -> u32 {
    match op {
        RmwOp::Basic(b) => atomic(b, signed, old, v),
        // Our reading (no public ISA text): OpenCL's atomic_inc/atomic_dec, the operand unused.
        RmwOp::Inc => old.wrapping_add(1),
        RmwOp::Dec => old.wrapping_sub(1),
        RmwOp::CmpXchg if old == cmp => v,
        RmwOp::CmpXchg => old,
    }
}

impl Group {
    /// Local `atomic.OP…l` add…xor on 32-bit words of shared memory, fiber by fiber.
    pub(in crate::exec) fn atomic_local(
        &mut self,
        kind: ExtKind,
        lanes: &[u32],
    ) -> Result<(), String> {
        let ExtKind::AtomicLocal {
            op,
            signed,
            dst,
            addr,
            src,
        } = kind
        else {
            return Err("not a local atomic".into());
        };
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

    pub(in crate::exec) fn atomic_rmw(
        &mut self,
        kind: ExtKind,
        lanes: &[u32],
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        let ExtKind::Atomic {
            op,
            signed,
            global,
            dst,
            addr,
            src,
        } = kind
        else {
            return Err("not an atomic".into());
        };
        for &i in lanes {
            let v = self.reg_raw(src, i, false);
            let cmp = self.reg_raw(src + 1, i, false);
            let old = if global {
                let a = self.reg_raw(addr, i, false) as u64
                    | (self.reg_raw(addr + 1, i, false) as u64) << 32;
                let mut b = [0u8; 4];
                let fault = |e: String| format!("GPU fault in fiber {i}: {e}");
                mem.read(a, &mut b).map_err(fault)?;
                let old = u32::from_le_bytes(b);
                mem.write(a, &rmw(op, signed, old, v, cmp).to_le_bytes())
                    .map_err(fault)?;
                old
            } else {
                let a = self.local_addr(addr, 0, i, 4)?;
                let b = &self.shared[a..a + 4];
                let old = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                let new = rmw(op, signed, old, v, cmp);
                self.shared[a..a + 4].copy_from_slice(&new.to_le_bytes());
                old
            };
            self.set_reg_raw(dst, i, old, false);
        }
        Ok(())
    }
}
