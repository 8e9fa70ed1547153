//! Bindless descriptors and the UAV accesses on them (docs/hw/adreno-kgsl-pm4.md §16.13): a `.baseN`
//! instruction's descriptor is entry `index` of the descriptor set at SP_CS_BINDLESS_BASE[N] (entry size
//! 2 << DESC_SIZE dwords), read from GPU memory when the instruction executes; a slot form takes the dispatch's
//! loaded UAV instead. Untyped `ldib.b`/`stib.b` move N elements of the instruction's type from element x of a
//! buffer; `atomic.b.OP` updates one 32-bit word (x of a buffer, or texel (x, y) of a 2-D image for the typed
//! 2-D form) and returns the old word in its value register; bindless `resinfo.b` returns the descriptor's width,
//! height and depth. Every access outside the resource is a GPU fault naming the fiber.
use super::atomic::atomic;
use crate::exec::group::Group;
use crate::exec::launch::Launch;
use crate::exec::memory::{GpuMemory, Image};
use crate::instr::*;

/// A UAV as its descriptor (A6XX_TEX_CONST layout, §8.3) describes it.
#[derive(Clone, Copy, Debug)]
struct Resource {
    base: u64,
    width: u32,
    height: u32,
    depth: u32,
    pitch: u32,
    /// TYPE = A6XX_TEX_BUFFER: `width | height << 15` elements, no pitch.
    buffer: bool,
}

/// TEX_CONST_2 TYPE of a buffer descriptor (a6xx_tex_type: 1D 0, 2D 1, CUBE 2, 3D 3, BUFFER 4).
const TEX_BUFFER: u32 = 4;

fn resource(d: &[u32]) -> Resource {
    Resource {
        base: d[4] as u64 | ((d[5] & 0x1_FFFF) as u64) << 32,
        width: d[1] & 0x7FFF,
        height: (d[1] >> 15) & 0x7FFF,
        depth: (d[5] >> 17) & 0x1FFF,
        pitch: (d[2] >> 7) & 0x3F_FFFF,
        buffer: d[2] >> 29 == TEX_BUFFER,
    }
}

impl Group {
    /// `n` dwords of descriptor `index` of bindless set `set`.
    pub(in crate::exec) fn bindless_dwords(
        &self,
        l: &Launch<'_>,
        set: u8,
        index: u32,
        n: usize,
        mem: &mut dyn GpuMemory,
    ) -> Result<Vec<u32>, String> {
        let reg = l.bindless.get(set as usize).copied().unwrap_or(0);
        let addr = reg & !3;
        if addr == 0 {
            return Err(format!(
                "bindless base {set} (SP_CS_BINDLESS_BASE[{set}]) is not set"
            ));
        }
        // The XML's a6xx_bindless_descriptor_size: 1 = 16-byte, 3 = 64-byte descriptors (2 << N dwords).
        if !matches!(reg & 3, 1 | 3) {
            return Err(format!(
                "bindless base {set}: DESC_SIZE {} is neither 1 (16-byte) nor 3 (64-byte descriptors)",
                reg & 3
            ));
        }
        let size = 8u64 << (reg & 3);
        if 4 * n as u64 > size {
            return Err(format!(
                "bindless base {set}: {size}-byte descriptors, {} bytes needed",
                4 * n
            ));
        }
        let mut buf = vec![0u8; 4 * n];
        let at = addr.wrapping_add(index as u64 * size);
        mem.read(at, &mut buf)
            .map_err(|e| format!("bindless descriptor {index} of base {set}: {e}"))?;
        Ok(buf
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    /// Texture descriptor `tex` and sampler descriptor `samp` of bindless set `set`, for `sam`: the texture
    /// must be a 2-D RGBA32F/RGBA16F image (what the model samples, §16.10).
    pub(in crate::exec) fn bindless_texture(
        &self,
        l: &Launch<'_>,
        set: u8,
        tex: u32,
        samp: u32,
        mem: &mut dyn GpuMemory,
    ) -> Result<(Image, [u32; 4]), String> {
        let d = self.bindless_dwords(l, set, tex, 6, mem)?;
        let r = resource(&d);
        let fmt = (d[0] >> 22) & 0xFF;
        let half = match fmt {
            0x82 => false,
            0x62 => true,
            _ => {
                return Err(format!(
                    "bindless texture {tex} of base {set}: format {fmt:#x} is not RGBA32F/RGBA16F"
                ))
            }
        };
        if d[2] >> 29 != 1 {
            return Err(format!(
                "bindless texture {tex} of base {set}: type {} is not 2-D",
                d[2] >> 29
            ));
        }
        let s = self.bindless_dwords(l, set, samp, 4, mem)?;
        let img = Image {
            base: r.base,
            width: r.width,
            height: r.height,
            pitch: r.pitch,
            half,
        };
        Ok((img, [s[0], s[1], s[2], s[3]]))
    }

    fn resource_of(
        &self,
        d: Desc,
        lane: u32,
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<Resource, String> {
        let index = self.opnd(d.index, lane);
        match d.base {
            Some(set) => Ok(resource(&self.bindless_dwords(l, set, index, 6, mem)?)),
            None => {
                let img = l
                    .uavs
                    .get(index as usize)
                    .ok_or_else(|| format!("UAV {index} is not bound ({} loaded)", l.uavs.len()))?;
                Ok(Resource {
                    base: img.base,
                    width: img.width,
                    height: img.height,
                    depth: 1,
                    pitch: img.pitch,
                    buffer: false,
                })
            }
        }
    }

    pub(in crate::exec) fn bindless_ext(
        &mut self,
        kind: ExtKind,
        lanes: &[u32],
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        match kind {
            ExtKind::ResinfoB { dst, desc } => {
                for &i in lanes {
                    let r = self
                        .resource_of(desc, i, l, mem)
                        .map_err(|e| format!("fiber {i}: {e}"))?;
                    for (c, v) in [r.width, r.height, r.depth].into_iter().enumerate() {
                        self.set_reg_raw(dst + c as u16, i, v, false);
                    }
                }
                Ok(())
            }
            ExtKind::Ibo(a) => {
                for &i in lanes {
                    let r = self
                        .resource_of(a.desc, i, l, mem)
                        .map_err(|e| format!("fiber {i}: {e}"))?;
                    let addr = self
                        .element_addr(&a, &r, i)
                        .map_err(|e| format!("GPU fault in fiber {i}: {e}"))?;
                    self.ibo_access(&a, addr, i, mem)
                        .map_err(|e| format!("GPU fault in fiber {i}: {e}"))?;
                }
                Ok(())
            }
            _ => Err("not a bindless/UAV instruction".into()),
        }
    }

    /// The address of the access, checked against the resource's extent.
    fn element_addr(&self, a: &IboArgs, r: &Resource, lane: u32) -> Result<u64, String> {
        let eb = a.ty.bytes() as u64;
        let x = self.reg_raw(a.coord, lane, false) as u64;
        if a.dims == 2 {
            // Typed 2-D (atomics): texel (x, y) of a 32-bit single-component image.
            let y = self.reg_raw(a.coord + 1, lane, false) as u64;
            if r.buffer || x >= r.width as u64 || y >= r.height as u64 {
                return Err(format!(
                    "texel ({x}, {y}) outside the {}x{} image at {:#x}",
                    r.width, r.height, r.base
                ));
            }
            return Ok(r.base + y * r.pitch as u64 + x * eb);
        }
        // 1-D: element x of N elements (untyped) or of one texel (typed, one component here).
        let bytes = if r.buffer {
            (r.width as u64 | (r.height as u64) << 15) * eb
        } else {
            r.pitch as u64 * r.height as u64
        };
        let (off, len) = (x * eb, a.n as u64 * eb);
        if off + len > bytes {
            return Err(format!(
                "bytes {off}…{} outside the {bytes}-byte buffer at {:#x}",
                off + len - 1,
                r.base
            ));
        }
        Ok(r.base + off)
    }

    fn ibo_access(
        &mut self,
        a: &IboArgs,
        addr: u64,
        lane: u32,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        let eb = a.ty.bytes() as usize;
        let half = a.ty.is_half();
        match a.op {
            IboOp::Load => {
                let mut buf = vec![0u8; eb * a.n as usize];
                mem.read(addr, &mut buf)?;
                for (c, e) in buf.chunks_exact(eb).enumerate() {
                    let v = if eb == 4 {
                        u32::from_le_bytes([e[0], e[1], e[2], e[3]])
                    } else {
                        u16::from_le_bytes([e[0], e[1]]) as u32
                    };
                    self.set_reg_raw(a.val + c as u16, lane, v, half);
                }
            }
            IboOp::Store => {
                let mut buf = Vec::with_capacity(eb * a.n as usize);
                for c in 0..a.n as u16 {
                    let v = self.reg_raw(a.val + c, lane, half);
                    buf.extend_from_slice(&v.to_le_bytes()[..eb]);
                }
                mem.write(addr, &buf)?;
            }
            IboOp::Atomic(op) => {
                let mut b = [0u8; 4];
                mem.read(addr, &mut b)?;
                let old = u32::from_le_bytes(b);
                let v = self.reg_raw(a.val, lane, false);
                let new = atomic(op, a.ty == Ty::S32, old, v);
                mem.write(addr, &new.to_le_bytes())?;
                self.set_reg_raw(a.val, lane, old, false);
            }
        }
        Ok(())
    }
}
