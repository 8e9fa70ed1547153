//! The kernel-argument region of one IR3 dispatch (docs/hw/adreno-kgsl-pm4.md §8, IR3 column): constant file with buffer VAs, int
//! vars, immediates and the work-group-size param, then texture descriptors, UAV descriptors and samplers.
use super::layout::{KernelLayout, DESC_BYTES, SAMPLER_BYTES};
use super::regs::tex;
use modelrt_hal::target::{DType, ParamDesc, ParamKind};

/// A launch argument with its GPU address resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuArg {
    /// GPU virtual address of a buffer or image base.
    Addr(u64),
    /// An int32 kernel variable.
    Int(i32),
}

/// Where a GPU address was written into the region, so it can be re-pointed later without re-filling
/// (zero-copy input binding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrSlot {
    /// Byte offset in the region.
    pub at: u32,
    /// Index of the argument that supplied the address.
    pub arg: u8,
    pub kind: SlotKind,
}

/// How an address is stored at an [`AddrSlot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    /// A plain little-endian u64 (buffer pointer in the constant file).
    Ptr64,
    /// Descriptor dwords 4 and 5 (image base low/high).
    DescBase,
}

impl SlotKind {
    /// Write `addr` into `region` at `at` in this slot's format.
    pub fn write(self, region: &mut [u8], at: u32, addr: u64) {
        let at = at as usize;
        if let Some(dst) = region.get_mut(at..at + 8) {
            dst.copy_from_slice(&addr.to_le_bytes());
        }
    }
}

/// Why arguments cannot be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgsError {
    /// Argument count differs from the parameter list.
    Count { params: usize, args: usize },
    /// Argument `index` has the wrong kind for its parameter.
    Kind { index: usize },
    /// Image parameters do not cover the texture/UAV slots of the kernel.
    Images { images: usize, needed: usize },
    /// The parameter kind or dtype cannot be used on Adreno.
    Unsupported { index: usize },
    /// The output slice is shorter than the layout's region.
    Region { need: u32, have: usize },
    /// An image's pitch is not a multiple of 64 bytes or its size exceeds the descriptor fields.
    ImageShape { index: usize },
    /// More patched addresses (buffer pointers plus descriptors) than an [`AddrSlots`] holds.
    Slots,
}

impl core::fmt::Display for ArgsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ArgsError::Count { params, args } => {
                write!(f, "kernel takes {params} arguments, got {args}")
            }
            ArgsError::Kind { index } => {
                write!(f, "argument {index} has the wrong kind (buffer vs int)")
            }
            ArgsError::Images { images, needed } => {
                write!(
                    f,
                    "kernel binds {needed} images but has {images} image parameters"
                )
            }
            ArgsError::Unsupported { index } => {
                write!(f, "parameter {index} is not supported on Adreno")
            }
            ArgsError::Region { need, have } => {
                write!(f, "args region needs {need} bytes, have {have}")
            }
            ArgsError::ImageShape { index } => {
                write!(f, "image parameter {index} has an unsupported shape")
            }
            ArgsError::Slots => write!(
                f,
                "kernel needs more than {} patched addresses",
                modelrt_hal::target::MAX_PARAMS
            ),
        }
    }
}

/// Address slots of one region (at most one per parameter).
pub type AddrSlots = heapless::Vec<AddrSlot, { modelrt_hal::target::MAX_PARAMS }>;

fn put(region: &mut [u8], at: u32, bytes: &[u8]) {
    let at = at as usize;
    region[at..at + bytes.len()].copy_from_slice(bytes);
}

fn put_u32s(region: &mut [u8], at: u32, dws: &[u32]) {
    for (i, d) in dws.iter().enumerate() {
        put(region, at + 4 * i as u32, &d.to_le_bytes());
    }
}

/// The 16-dword descriptor of an image `(height, width, 4)` of `dtype` at `addr` (docs/hw/adreno-kgsl-pm4.md §8.3).
pub fn image_descriptor(
    height: u32,
    width: u32,
    dtype: DType,
    addr: u64,
    uav: bool,
) -> Option<[u32; 16]> {
    let item = dtype.size() as u32;
    let fmt = if item == 4 {
        tex::FMT6_32_32_32_32_FLOAT
    } else {
        tex::FMT6_16_16_16_16_FLOAT
    };
    let pitch = width.checked_mul(4 * item)?;
    if width == 0
        || height == 0
        || width > 0x7FFF
        || height > 0x7FFF
        || pitch % 64 != 0
        || pitch >= 1 << 22
    {
        return None;
    }
    let d0 = if uav {
        fmt << 22
    } else {
        0x8 | 1 << 7 | 2 << 10 | 3 << 13 | fmt << 22
    };
    let mut d = [0u32; 16];
    d[0] = d0;
    d[1] = width | height << 15;
    d[2] = tex::TEX_2D << 29 | pitch << 7 | (pitch.trailing_zeros() - 6);
    d[4] = addr as u32;
    d[5] = (addr >> 32) as u32;
    d[6] = tex::CONST_6_PLANE_PITCH;
    d[7] = tex::CONST_7;
    Some(d)
}

/// Fill `region` (zeroed first) for one dispatch; returns where GPU addresses were written.
pub fn fill(
    layout: &KernelLayout,
    immediates: &[u8],
    tex_to_image: &[u8],
    params: &[ParamDesc],
    args: &[GpuArg],
    local: [u32; 3],
    region: &mut [u8],
) -> Result<AddrSlots, ArgsError> {
    if region.len() < layout.args_size as usize {
        return Err(ArgsError::Region {
            need: layout.args_size,
            have: region.len(),
        });
    }
    if params.len() != args.len() {
        return Err(ArgsError::Count {
            params: params.len(),
            args: args.len(),
        });
    }
    let region = &mut region[..layout.args_size as usize];
    region.fill(0);
    let mut slots = AddrSlots::new();

    put(region, layout.imm_off, immediates);
    for i in 0..layout.samp_cnt {
        put_u32s(
            region,
            layout.samp_off + i * SAMPLER_BYTES,
            &[tex::SAMP_0_CLAMP_TO_BORDER, tex::SAMP_1_UNNORM, 0, 0],
        );
    }

    // Buffers (non-image) become u64 VAs at buf_off + 8·i; vars follow, naturally aligned (TinyELF.iter_sig).
    let mut n_ubo = 0u32;
    let mut images: heapless::Vec<
        (usize, u32, u32, DType, u64),
        { modelrt_hal::target::MAX_PARAMS },
    > = heapless::Vec::new();
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        match (p.kind, *a) {
            (ParamKind::Buffer, GpuArg::Addr(va)) => {
                let at = layout.buf_off + 8 * n_ubo;
                if at + 8 > super::layout::CONST_FILE_BYTES {
                    return Err(ArgsError::Unsupported { index: i });
                }
                put(region, at, &va.to_le_bytes());
                slots
                    .push(AddrSlot {
                        at,
                        arg: i as u8,
                        kind: SlotKind::Ptr64,
                    })
                    .map_err(|_| ArgsError::Slots)?;
                n_ubo += 1;
            }
            (ParamKind::Image { height, width }, GpuArg::Addr(va)) => {
                let _ = images.push((i, height, width, p.dtype, va));
            }
            (ParamKind::Buffer | ParamKind::Image { .. }, GpuArg::Int(_)) => {
                return Err(ArgsError::Kind { index: i })
            }
            (ParamKind::Var | ParamKind::CoreId, GpuArg::Addr(_)) => {
                return Err(ArgsError::Kind { index: i })
            }
            _ => {}
        }
    }
    let mut off = 8 * n_ubo;
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        match (p.kind, *a) {
            (ParamKind::Var, GpuArg::Int(v)) => {
                let size = p.dtype.size() as u32;
                off = off.div_ceil(size) * size;
                let at = layout.buf_off + off;
                if at + size > super::layout::CONST_FILE_BYTES {
                    return Err(ArgsError::Unsupported { index: i });
                }
                match p.dtype {
                    DType::I32 | DType::U32 => put(region, at, &v.to_le_bytes()),
                    _ => return Err(ArgsError::Unsupported { index: i }),
                }
                off += size;
            }
            (ParamKind::CoreId, _) => return Err(ArgsError::Unsupported { index: i }),
            _ => {}
        }
    }

    let needed = (layout.ibo_cnt + layout.tex_cnt) as usize;
    let mut desc =
        |slot_at: u32, img: usize, uav: bool, slots: &mut AddrSlots| -> Result<(), ArgsError> {
            let Some(&(index, h, w, dt, va)) = images.get(img) else {
                return Err(ArgsError::Images {
                    images: images.len(),
                    needed,
                });
            };
            let d = image_descriptor(h, w, dt, va, uav).ok_or(ArgsError::ImageShape { index })?;
            put_u32s(region, slot_at, &d);
            slots
                .push(AddrSlot {
                    at: slot_at + 16,
                    arg: index as u8,
                    kind: SlotKind::DescBase,
                })
                .map_err(|_| ArgsError::Slots)
        };
    for t in 0..layout.tex_cnt {
        let img =
            layout.ibo_cnt as usize + tex_to_image.get(t as usize).copied().unwrap_or(0) as usize;
        desc(layout.tex_off + t * DESC_BYTES, img, false, &mut slots)?;
    }
    for u in 0..layout.ibo_cnt {
        desc(
            layout.ibo_off + u * DESC_BYTES,
            u as usize,
            true,
            &mut slots,
        )?;
    }
    if layout.wgsz != super::regs::REGID_UNUSED {
        put_u32s(region, layout.wgsz * 4, &local);
    }
    Ok(slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_match_spec_examples() {
        // §8.3: half image (1, 1536, 4) as texture → dword1 0x8600, dword2 0x20180006
        let d = image_descriptor(1, 1536, DType::F16, 0x1234_5000, false).unwrap();
        assert_eq!((d[0], d[1], d[2]), (0x1880_6888, 0x8600, 0x2018_0006));
        // float image (1, 1024, 4) as UAV → 0x20800000, 0x8400, 0x20200008
        let d = image_descriptor(1, 1024, DType::F32, 0xABCD_0000_1000, true).unwrap();
        assert_eq!((d[0], d[1], d[2]), (0x2080_0000, 0x8400, 0x2020_0008));
        assert_eq!((d[4], d[5], d[6], d[7]), (0x1000, 0xABCD, 0x4000_0000, 13));
        // pitch 3·4·4 = 48 is not 64-aligned
        assert_eq!(image_descriptor(1, 3, DType::F32, 0, false), None);
    }

    #[test]
    fn one_buffer_used_as_image_and_as_pointer_is_bound_in_both_slots() {
        // As in tinygrad's IMAGE=1 squeezenet: a kernel's signature lists one buffer twice, as a half image
        // (1, 1800, 4) read through a texture and as a plain (7200,) half buffer read through a pointer.
        let mut m = crate::selftest::kernel_meta();
        m.tex_cnt = 1;
        m.ibo_cnt = 0;
        m.tex_to_image = heapless::Vec::from_slice(&[0]).unwrap();
        let l = KernelLayout::new(&m).unwrap();
        let params = [
            ParamDesc {
                kind: ParamKind::Image {
                    height: 1,
                    width: 1800,
                },
                dtype: DType::F16,
            },
            ParamDesc {
                kind: ParamKind::Buffer,
                dtype: DType::F16,
            },
        ];
        let va = 0x1_2345_6000u64;
        let mut region = vec![0u8; l.args_size as usize];
        let slots = fill(
            &l,
            &[],
            &m.tex_to_image,
            &params,
            &[GpuArg::Addr(va), GpuArg::Addr(va)],
            [1, 1, 1],
            &mut region,
        )
        .unwrap();
        let u32_at = |o: u32| {
            let o = o as usize;
            u32::from_le_bytes([region[o], region[o + 1], region[o + 2], region[o + 3]])
        };
        // The pointer: the first (only) buffer VA at buf_off.
        assert_eq!(
            u32_at(l.buf_off) as u64 | (u32_at(l.buf_off + 4) as u64) << 32,
            va
        );
        // The texture descriptor (§8.3): width 1800 / height 1 in dword 1, base address in dwords 4–5.
        assert_eq!(u32_at(l.tex_off + 4), 1800 | 1 << 15);
        assert_eq!(u32_at(l.tex_off + 16) as u64, va & 0xFFFF_FFFF);
        assert_eq!(u32_at(l.tex_off + 20) as u64, va >> 32);
        // Both places are re-pointed with their own argument when the buffer moves.
        assert!(slots.contains(&AddrSlot {
            at: l.buf_off,
            arg: 1,
            kind: SlotKind::Ptr64
        }));
        assert!(slots.contains(&AddrSlot {
            at: l.tex_off + 16,
            arg: 0,
            kind: SlotKind::DescBase
        }));
    }
}
