//! Execution of [`ExtKind::Atomic`] (docs/hw/adreno-kgsl-pm4.md §16.10): local `inc`/`dec`/`cmpxchg` on the
//! work group's shared memory and every global `atomic.g.OP` on a 64-bit address pair. Fibers update the word
//! one after another in fiber order, each getting the old word back. A dispatch whose shader has a global
//! atomic runs its work groups on one thread ([`needs_serial`]), so every atomic sees every earlier one.
use super::exec::Group;
use super::instr::*;
use super::memory::GpuMemory;
use super::program::Program;

/// Whether `prog` must run serially: global and UAV atomics read what other work groups wrote.
pub(super) fn needs_serial(prog: &Program) -> bool {
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

/// The word an atomic leaves in memory; `v` = the operand, `cmp` = the compare value of `cmpxchg`.
fn rmw(op: RmwOp, signed: bool, old: u32, v: u32, cmp: u32) -> u32 {
    match op {
        RmwOp::Basic(b) => super::blob_exec::atomic(b, signed, old, v),
        // Our reading (no public ISA text): OpenCL's atomic_inc/atomic_dec, the operand unused.
        RmwOp::Inc => old.wrapping_add(1),
        RmwOp::Dec => old.wrapping_sub(1),
        RmwOp::CmpXchg if old == cmp => v,
        RmwOp::CmpXchg => old,
    }
}

impl Group {
    pub(super) fn atomic_rmw(
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
