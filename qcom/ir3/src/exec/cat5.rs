//! cat5 execution, texture fetches (docs/hw/adreno-kgsl-pm4.md §16.4, §16.10): `isam` reads the texel at integer
//! coordinates (slot `t#`, or per fiber with `.s2en`), and the blob compiler's `sam` ([`ExtKind::Sam`]) samples a
//! 2-D texture at float coordinates under its sampler descriptor (A6XX_TEX_SAMP_0/1 of Mesa's a6xx register XML):
//! unnormalised or normalised coordinates, nearest or bilinear filtering (the same for magnification and
//! minification: a compute kernel has no derivatives, and the textures have one level), and per axis REPEAT,
//! CLAMP_TO_EDGE or CLAMP_TO_BORDER with a zero border colour. Anything else in the sampler is refused with an
//! error.
use crate::exec::group::{fault, Group};
use crate::exec::launch::Launch;
use crate::exec::memory::{GpuMemory, Image};
use crate::exec::texel::read_texel;
use crate::float::f16_to_f32;
use crate::instr::*;
use modelrt_core::half::f32_to_f16;

/// What `sam` needs of a sampler descriptor.
struct Sampler {
    linear: bool,
    /// WRAP_S, WRAP_T (0 repeat, 1 clamp to edge, 3 clamp to border).
    wrap: [u32; 2],
    unnorm: bool,
}

fn sampler(d: &[u32; 4]) -> Result<Sampler, String> {
    let (mag, min) = ((d[0] >> 1) & 3, (d[0] >> 3) & 3);
    if mag != min || mag > 1 {
        return Err(format!(
            "sampler {:#010x}: filters (mag {mag}, min {min}) other than nearest/linear for both are not modelled",
            d[0]
        ));
    }
    let wrap = [(d[0] >> 5) & 7, (d[0] >> 8) & 7];
    if wrap.iter().any(|&w| !matches!(w, 0 | 1 | 3)) {
        return Err(format!(
            "sampler {:#010x}: mirrored wrap modes are not modelled",
            d[0]
        ));
    }
    Ok(Sampler {
        linear: mag == 1,
        wrap,
        unnorm: d[1] & 0x20 != 0,
    })
}

/// The texel index of `i` on an axis of `n` texels under wrap mode `w`; None = the border.
fn wrap(i: i64, n: u32, w: u32) -> Option<i32> {
    let n = n as i64;
    match w {
        0 => Some(i.rem_euclid(n) as i32),
        1 => Some(i.clamp(0, n - 1) as i32),
        _ => (0..n).contains(&i).then_some(i as i32),
    }
}

fn texel(
    img: &Image,
    s: &Sampler,
    i: i64,
    j: i64,
    mem: &mut dyn GpuMemory,
) -> Result<[f32; 4], String> {
    match (
        wrap(i, img.width, s.wrap[0]),
        wrap(j, img.height, s.wrap[1]),
    ) {
        (Some(x), Some(y)) => read_texel(img, x, y, mem),
        _ => Ok([0.0; 4]),
    }
}

impl Group {
    /// `isam`: the texel at the integer coordinates of every issued fiber.
    pub(in crate::exec) fn isam(
        &mut self,
        ins: &Instr,
        lanes: &[u32],
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        let Op::Isam {
            ty,
            wrmask,
            dst,
            coord,
            coord_half,
            tex,
            s2en,
            ..
        } = ins.op
        else {
            return Err("not Isam".into());
        };
        for &i in lanes {
            // `.s2en`: this fiber's texture index is the half register after the sampler's.
            let t = match s2en {
                Some(s) => self.reg_raw(s.reg + 1, i, true),
                None => u32::from(tex),
            };
            // Slots past the 16 loaded inline come from SP_CS_TEXMEMOBJ_BASE
            // (docs/hw/adreno-kgsl-pm4.md §8.6).
            let img = *l.textures.get(t as usize).ok_or_else(|| {
                fault(
                    i,
                    format!("texture t#{t} is not bound ({} loaded)", l.textures.len()),
                )
            })?;
            let x = self.reg_raw(coord, i, coord_half) as i32;
            let y = self.reg_raw(coord + 1, i, coord_half) as i32;
            let texel = read_texel(&img, x, y, mem).map_err(|e| fault(i, e))?;
            let mut out = 0u16;
            for (c, v) in texel.iter().enumerate() {
                if wrmask >> c & 1 == 0 {
                    continue;
                }
                let raw = match ty {
                    Ty::F32 => v.to_bits(),
                    Ty::F16 => f32_to_f16(*v) as u32,
                    _ => return Err(format!("isam result type {} is not supported", ty.name())),
                };
                self.set_reg_raw(dst + out, i, raw, ty.is_half());
                out += 1;
            }
        }
        Ok(())
    }

    pub(in crate::exec) fn sam(
        &mut self,
        a: &SamArgs,
        lanes: &[u32],
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        for &i in lanes {
            let fault = |e: String| format!("GPU fault in fiber {i}: {e}");
            let (si, ti) = match a.s2en {
                Some(s) => (
                    self.reg_raw(s.reg, i, true),
                    self.reg_raw(s.reg + 1, i, true),
                ),
                None => (u32::from(a.samp), u32::from(a.tex)),
            };
            let (img, s) = match a.bindless {
                Some(b) => {
                    let ti = if b.tex_a1 { self.a1_of(i) as u32 } else { ti };
                    self.bindless_texture(l, b.base, ti, si, mem)
                        .map_err(fault)?
                }
                None => {
                    let img = *l.textures.get(ti as usize).ok_or_else(|| {
                        fault(format!(
                            "texture t#{ti} is not bound ({} loaded)",
                            l.textures.len()
                        ))
                    })?;
                    let s = *l.samplers.get(si as usize).ok_or_else(|| {
                        fault(format!(
                            "sampler s#{si} is not bound ({} loaded)",
                            l.samplers.len()
                        ))
                    })?;
                    (img, s)
                }
            };
            let s = sampler(&s).map_err(fault)?;
            let coord = |k: u16| {
                let raw = self.reg_raw(a.coord + k, i, a.coord_half);
                if a.coord_half {
                    f16_to_f32(raw as u16)
                } else {
                    f32::from_bits(raw)
                }
            };
            let (mut x, mut y) = (coord(0) as f64, coord(1) as f64);
            if !s.unnorm {
                x *= img.width as f64;
                y *= img.height as f64;
            }
            let v = if s.linear {
                // Bilinear: the four texels around (x − ½, y − ½), weighted by the fractions.
                let (x, y) = (x - 0.5, y - 0.5);
                let (i0, j0) = (x.floor() as i64, y.floor() as i64);
                let (fx, fy) = (x - x.floor(), y - y.floor());
                let mut acc = [0f64; 4];
                for (di, dj, w) in [
                    (0, 0, (1.0 - fx) * (1.0 - fy)),
                    (1, 0, fx * (1.0 - fy)),
                    (0, 1, (1.0 - fx) * fy),
                    (1, 1, fx * fy),
                ] {
                    let t = texel(&img, &s, i0 + di, j0 + dj, mem).map_err(fault)?;
                    for c in 0..4 {
                        acc[c] += w * t[c] as f64;
                    }
                }
                acc.map(|v| v as f32)
            } else {
                texel(&img, &s, x.floor() as i64, y.floor() as i64, mem).map_err(fault)?
            };
            let mut out = 0u16;
            for (c, v) in v.iter().enumerate() {
                if a.wrmask >> c & 1 == 0 {
                    continue;
                }
                let raw = match a.ty {
                    Ty::F16 => f32_to_f16(*v) as u32,
                    _ => v.to_bits(),
                };
                self.set_reg_raw(a.dst + out, i, raw, a.ty == Ty::F16);
                out += 1;
            }
        }
        Ok(())
    }
}
