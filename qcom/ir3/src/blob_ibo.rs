//! Execution of the further UAV forms (docs/hw/adreno-kgsl-pm4.md §16.10): `resinfo` (a UAV's dimensions as its
//! descriptor gives them) and the typed 1-D `ldib` (texel (x, 0), zeros outside, like the 2-D form).
use super::exec::Group;
use super::instr::*;
use super::launch::Launch;
use super::mem::read_texel;
use super::memory::GpuMemory;
use modelrt_core::half::f32_to_f16;

impl Group {
    pub(super) fn ibo_ext(
        &mut self,
        kind: ExtKind,
        lanes: &[u32],
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        let slot = match kind {
            ExtKind::Resinfo { slot, .. } | ExtKind::Ldib1d { slot, .. } => slot,
            _ => return Err("not a UAV instruction".into()),
        };
        let img = *l
            .uavs
            .get(slot as usize)
            .ok_or_else(|| format!("UAV {slot} is not bound ({} loaded)", l.uavs.len()))?;
        match kind {
            ExtKind::Resinfo { dst, .. } => {
                for &i in lanes {
                    for (c, v) in [img.width, img.height, 1].into_iter().enumerate() {
                        self.set_reg_raw(dst + c as u16, i, v, false);
                    }
                }
            }
            ExtKind::Ldib1d { ty, dst, coord, .. } => {
                for &i in lanes {
                    let x = self.reg_raw(coord, i, false) as i32;
                    let texel = read_texel(&img, x, 0, mem)
                        .map_err(|e| format!("GPU fault in fiber {i}: {e}"))?;
                    for (c, v) in texel.iter().enumerate() {
                        let raw = match ty {
                            Ty::F16 => f32_to_f16(*v) as u32,
                            _ => v.to_bits(),
                        };
                        self.set_reg_raw(dst + c as u16, i, raw, ty == Ty::F16);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}
