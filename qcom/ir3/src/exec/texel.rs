//! Texel access on the 2-D RGBA32F / RGBA16F images of a dispatch (docs/hw/adreno-kgsl-pm4.md §16.4): reads
//! outside the image return the (zero) border colour of the clamp-to-border sampler, stores outside it are
//! dropped. `isam`, `sam`, `ldib` and `stib` read and write through here.
use crate::exec::memory::{GpuMemory, Image};
use crate::float::f16_to_f32;
use modelrt_core::half::f32_to_f16;

impl Image {
    fn texel_bytes(&self) -> u32 {
        if self.half {
            8
        } else {
            16
        }
    }
}

/// Fetch texel (x, y); outside the image the clamp-to-border sampler returns the (zero) border colour.
pub(in crate::exec) fn read_texel(
    img: &Image,
    x: i32,
    y: i32,
    mem: &mut dyn GpuMemory,
) -> Result<[f32; 4], String> {
    if x < 0 || y < 0 || x as u32 >= img.width || y as u32 >= img.height {
        return Ok([0.0; 4]);
    }
    let a = img.base + y as u64 * img.pitch as u64 + x as u64 * img.texel_bytes() as u64;
    let mut b = [0u8; 16];
    let b = &mut b[..img.texel_bytes() as usize];
    mem.read(a, b)
        .map_err(|e| format!("texel ({x}, {y}): {e}"))?;
    let mut v = [0f32; 4];
    for (c, o) in v.iter_mut().enumerate() {
        *o = if img.half {
            f16_to_f32(u16::from_le_bytes([b[2 * c], b[2 * c + 1]]))
        } else {
            f32::from_le_bytes([b[4 * c], b[4 * c + 1], b[4 * c + 2], b[4 * c + 3]])
        };
    }
    Ok(v)
}

/// Store texel (x, y) converted to the image format; stores outside the image are dropped.
pub(in crate::exec) fn write_texel(
    img: &Image,
    x: i32,
    y: i32,
    v: [f32; 4],
    mem: &mut dyn GpuMemory,
) -> Result<(), String> {
    if x < 0 || y < 0 || x as u32 >= img.width || y as u32 >= img.height {
        return Ok(());
    }
    let a = img.base + y as u64 * img.pitch as u64 + x as u64 * img.texel_bytes() as u64;
    let mut b = [0u8; 16];
    for (c, x) in v.iter().enumerate() {
        if img.half {
            b[2 * c..2 * c + 2].copy_from_slice(&f32_to_f16(*x).to_le_bytes());
        } else {
            b[4 * c..4 * c + 4].copy_from_slice(&x.to_le_bytes());
        }
    }
    mem.write(a, &b[..img.texel_bytes() as usize])
        .map_err(|e| format!("texel ({x}, {y}): {e}"))
}
