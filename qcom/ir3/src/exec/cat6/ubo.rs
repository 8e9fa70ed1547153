//! Execution of the constant-file forms (docs/hw/adreno-kgsl-pm4.md §16.12): `ldc` reads dwords of a uniform
//! buffer into registers; `ldc.k`, `ldg.k` and `stc` write the constant file. The constant file is one for all
//! fibers: the interpreter gives each batch of work groups a writable copy of the dispatch's constants, made at
//! the first write, so every fiber of the batch sees every write made before its next issue (on the hardware
//! these writes sit in the shader preamble and their values are uniform). A UBO read past the descriptor's
//! size or a constant outside the file is an error naming the fiber, not a panic.
use crate::exec::group::Group;
use crate::exec::launch::Launch;
use crate::exec::memory::{GpuMemory, Ubo};
use crate::instr::*;

impl Group {
    pub(in crate::exec) fn ubo_ext(
        &mut self,
        kind: ExtKind,
        lanes: &[u32],
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        match kind {
            ExtKind::Ldc {
                dst,
                off,
                slot,
                comp,
                n,
            } => {
                for &i in lanes {
                    let ubo = self.ubo(slot, i, l, mem)?;
                    let first = self.opnd(off, i) as u64 * 4 + comp as u64;
                    let mut vals = [0u32; 4];
                    ubo_read(&ubo, first, &mut vals[..n as usize], mem)
                        .map_err(|e| format!("GPU fault in fiber {i}: ldc: {e}"))?;
                    for (c, v) in vals[..n as usize].iter().enumerate() {
                        self.set_reg_raw(dst + c as u16, i, *v, false);
                    }
                }
            }
            ExtKind::LdcK { off, slot, vec4s } => {
                for &i in lanes {
                    let ubo = self.ubo(slot, i, l, mem)?;
                    let (from, to) = (self.opnd(off, i), self.a1_of(i));
                    // The XML: UBO offset and constant offset are multiples of 4 vec4s.
                    if from % 4 != 0 || to % 16 != 0 {
                        return Err(format!(
                            "fiber {i}: ldc.k from vec4 {from} to c[{to}]: both must be multiples of 4 vec4s"
                        ));
                    }
                    let mut vals = vec![0u32; 4 * vec4s as usize];
                    ubo_read(&ubo, from as u64 * 4, &mut vals, mem)
                        .map_err(|e| format!("GPU fault in fiber {i}: ldc.k: {e}"))?;
                    self.const_write(to as i64, &vals, l)
                        .map_err(|e| format!("fiber {i}: {e}"))?;
                }
            }
            ExtKind::LdgK {
                dst,
                addr,
                off,
                size,
            } => {
                for &i in lanes {
                    let base = self.reg_raw(addr, i, false) as u64
                        | (self.reg_raw(addr + 1, i, false) as u64) << 32;
                    let a = base.wrapping_add(off as i64 as u64);
                    let mut buf = vec![0u8; 4 * size as usize];
                    mem.read(a, &mut buf)
                        .map_err(|e| format!("GPU fault in fiber {i}: {e}"))?;
                    let vals: Vec<u32> = buf
                        .chunks_exact(4)
                        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect();
                    let to = self.const_index(dst, i);
                    self.const_write(to, &vals, l)
                        .map_err(|e| format!("fiber {i}: {e}"))?;
                }
            }
            ExtKind::Stc { dst, src, size } => {
                for &i in lanes {
                    let vals: Vec<u32> = (0..size as u16)
                        .map(|c| self.reg_raw(src + c, i, false))
                        .collect();
                    let to = self.const_index(dst, i);
                    self.const_write(to, &vals, l)
                        .map_err(|e| format!("fiber {i}: {e}"))?;
                }
            }
            _ => return Err("not a constant-file instruction".into()),
        }
        Ok(())
    }

    pub(in crate::exec) fn opnd(&self, o: Opnd, lane: u32) -> u32 {
        match o {
            Opnd::Imm(v) => v as u32,
            Opnd::Reg(r) => self.reg_raw(r, lane, false),
        }
    }

    fn ubo(
        &self,
        slot: Desc,
        lane: u32,
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<Ubo, String> {
        let s = self.opnd(slot.index, lane);
        if let Some(set) = slot.base {
            let d = self.bindless_dwords(l, set, s, 2, mem)?;
            return Ok(Ubo::from_descriptor([d[0], d[1]]));
        }
        l.ubos.get(s as usize).copied().ok_or_else(|| {
            format!(
                "fiber {lane}: UBO {s} is not bound ({} loaded)",
                l.ubos.len()
            )
        })
    }

    fn const_index(&self, d: ConstDst, lane: u32) -> i64 {
        d.off as i64 + if d.a1 { self.a1_of(lane) as i64 } else { 0 }
    }

    /// Write `vals` into the batch's constant file from dword `at`.
    fn const_write(&mut self, at: i64, vals: &[u32], l: &Launch<'_>) -> Result<(), String> {
        let file = self.kfile.get_or_insert_with(|| l.consts.to_vec());
        let len = file.len();
        let range = usize::try_from(at)
            .ok()
            .filter(|&a| a + vals.len() <= len)
            .ok_or_else(|| {
                format!(
                    "constant write c[{at}]…c[{}] outside the {len}-dword constant file",
                    at + vals.len() as i64 - 1
                )
            })?;
        file[range..range + vals.len()].copy_from_slice(vals);
        Ok(())
    }
}

/// Read `out.len()` dwords of `ubo` from dword `first`; past the descriptor's size is an error.
fn ubo_read(ubo: &Ubo, first: u64, out: &mut [u32], mem: &mut dyn GpuMemory) -> Result<(), String> {
    let end = first + out.len() as u64;
    if end > ubo.size_vec4 as u64 * 4 {
        return Err(format!(
            "dwords {first}…{} past the end of the UBO at {:#x} ({} vec4)",
            end - 1,
            ubo.base,
            ubo.size_vec4
        ));
    }
    let mut buf = vec![0u8; 4 * out.len()];
    mem.read(ubo.base + 4 * first, &mut buf)?;
    for (o, b) in out.iter_mut().zip(buf.chunks_exact(4)) {
        *o = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    Ok(())
}
