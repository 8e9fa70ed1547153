//! cat6 execution on the UAVs of immediate slots (docs/hw/adreno-kgsl-pm4.md §16.4, §16.10): Mesa's typed
//! `stib.b` stores an RGBA texel (1-D stores write row 0), the blob's typed `ldib` reads one (2-D, or 1-D at
//! (x, 0); zeros outside the image), and `resinfo` returns a UAV's dimensions as its descriptor gives them.
use crate::exec::group::{fault, Group};
use crate::exec::launch::Launch;
use crate::exec::memory::GpuMemory;
use crate::exec::texel::{read_texel, write_texel};
use crate::float::f16_to_f32;
use crate::instr::*;
use modelrt_core::half::f32_to_f16;

impl Group {
    /// `ldib` (2-D and 1-D) and `resinfo` on the UAV of an immediate slot.
    pub(in crate::exec) fn uav_ext(
        &mut self,
        kind: ExtKind,
        lanes: &[u32],
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        let slot = match kind {
            ExtKind::Resinfo { slot, .. }
            | ExtKind::Ldib { slot, .. }
            | ExtKind::Ldib1d { slot, .. } => slot,
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
            ExtKind::Ldib { ty, dst, coord, .. } | ExtKind::Ldib1d { ty, dst, coord, .. } => {
                // A 1-D load reads row 0.
                let two_d = matches!(kind, ExtKind::Ldib { .. });
                for &i in lanes {
                    let x = self.reg_raw(coord, i, false) as i32;
                    let y = if two_d {
                        self.reg_raw(coord + 1, i, false) as i32
                    } else {
                        0
                    };
                    let texel = read_texel(&img, x, y, mem).map_err(|e| fault(i, e))?;
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

    /// `stib.b.typed`: an RGBA texel stored at the coordinates of every issued fiber.
    pub(in crate::exec) fn stib(
        &mut self,
        ins: &Instr,
        lanes: &[u32],
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        let Op::Stib {
            ty,
            d,
            comps,
            src,
            coord,
            slot,
        } = ins.op
        else {
            return Err("not Stib".into());
        };
        let img = *l
            .uavs
            .get(slot as usize)
            .ok_or_else(|| format!("UAV {slot} is not bound ({} loaded)", l.uavs.len()))?;
        if d > 2 || comps != 4 {
            return Err(format!(
                "stib of {comps} components in {d} dimensions is not supported"
            ));
        }
        for &i in lanes {
            let x = self.reg_raw(coord, i, false) as i32;
            // A 1-D store writes row 0 (docs/hw/adreno-kgsl-pm4.md §16.10).
            let y = if d == 2 {
                self.reg_raw(coord + 1, i, false) as i32
            } else {
                0
            };
            let mut v = [0f32; 4];
            for (c, o) in v.iter_mut().enumerate() {
                let raw = self.reg_raw(src + c as u16, i, ty.is_half());
                *o = match ty {
                    Ty::F32 => f32::from_bits(raw),
                    Ty::F16 => f16_to_f32(raw as u16),
                    _ => return Err(format!("stib value type {} is not supported", ty.name())),
                };
            }
            write_texel(&img, x, y, v, mem).map_err(|e| fault(i, e))?;
        }
        Ok(())
    }
}
