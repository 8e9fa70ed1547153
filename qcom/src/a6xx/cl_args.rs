//! The kernel-argument region of one Qualcomm-compiled (CL) dispatch, as tinygrad's `QCOMArgsState` fills it for
//! `DEV=QCOM` (docs/hw/adreno-kgsl-pm4.md §18): the container's constants, the samplers, each buffer's u64 address
//! (then each int var) at the offset its argument record names, then IBO descriptors at 2048 followed by texture
//! descriptors.
use super::args::{image_descriptor, AddrSlot, AddrSlots, ArgsError, GpuArg, SlotKind};
use super::layout::{KernelLayout, DESC_BYTES, SAMPLER_BYTES};
use super::regs::tex;
use modelrt_hal::target::{DType, ParamDesc, ParamKind};

/// What the args writer needs from a container, copied out at load (so the container bytes need not be kept).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClArgs {
    /// (value, byte offset, size 2 or 4) per constant record.
    pub consts: std::vec::Vec<(u32, u32, u32)>,
    /// Byte offsets of the buffer/scalar argument records, in record order.
    pub buf_offs: std::vec::Vec<u32>,
}

impl ClArgs {
    /// The constants and buffer offsets of a parsed container.
    pub fn of(c: &super::cl_container::ClContainer<'_>) -> Self {
        ClArgs {
            consts: c
                .consts()
                .map(|k| (k.value, k.offset_bytes, k.size))
                .collect(),
            buf_offs: c
                .args()
                .filter(|a| a.kind == super::cl_container::ArgKind::Buffer)
                .map(|a| a.offset_bytes)
                .collect(),
        }
    }
}

fn put(region: &mut [u8], at: u32, bytes: &[u8]) -> Result<(), ArgsError> {
    let at = at as usize;
    let dst = region
        .get_mut(at..at + bytes.len())
        .ok_or(ArgsError::Region {
            need: (at + bytes.len()) as u32,
            have: 0,
        })?;
    dst.copy_from_slice(bytes);
    Ok(())
}

/// Fill `region` (zeroed first) for one CL dispatch; returns where GPU addresses were written.
pub fn fill_cl(
    layout: &KernelLayout,
    cl: &ClArgs,
    params: &[ParamDesc],
    args: &[GpuArg],
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

    for &(value, at, size) in &cl.consts {
        put(region, at, &value.to_le_bytes()[..size as usize])?;
    }
    if layout.samp_cnt > 0 {
        // tinygrad writes one clamp-to-border sampler and zeros for the extra one it reserves.
        let s = [
            tex::SAMP_0_CLAMP_TO_BORDER,
            tex::SAMP_1_UNNORM,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        let n = (layout.samp_cnt * SAMPLER_BYTES / 4) as usize;
        for (i, d) in s.iter().take(n).enumerate() {
            put(region, layout.samp_off + 4 * i as u32, &d.to_le_bytes())?;
        }
    }

    // Buffers take the first record offsets in parameter order; int vars the ones after.
    let mut next = cl.buf_offs.iter();
    let mut images: heapless::Vec<
        (usize, u32, u32, DType, u64),
        { modelrt_hal::target::MAX_PARAMS },
    > = heapless::Vec::new();
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        match (p.kind, *a) {
            (ParamKind::Buffer, GpuArg::Addr(va)) => {
                let &at = next.next().ok_or(ArgsError::Unsupported { index: i })?;
                put(region, at, &va.to_le_bytes())
                    .map_err(|_| ArgsError::Unsupported { index: i })?;
                slots
                    .push(AddrSlot {
                        at,
                        arg: i as u8,
                        kind: SlotKind::Ptr64,
                    })
                    .map_err(|_| ArgsError::Slots)?;
            }
            (ParamKind::Image { height, width }, GpuArg::Addr(va)) => {
                let _ = images.push((i, height, width, p.dtype, va));
            }
            (ParamKind::Buffer | ParamKind::Image { .. }, GpuArg::Int(_))
            | (ParamKind::Var | ParamKind::CoreId, GpuArg::Addr(_)) => {
                return Err(ArgsError::Kind { index: i })
            }
            _ => {}
        }
    }
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        match (p.kind, *a) {
            (ParamKind::Var, GpuArg::Int(v)) => {
                let &at = next.next().ok_or(ArgsError::Unsupported { index: i })?;
                match p.dtype {
                    DType::I32 | DType::U32 => put(region, at, &v.to_le_bytes())
                        .map_err(|_| ArgsError::Unsupported { index: i })?,
                    _ => return Err(ArgsError::Unsupported { index: i }),
                }
            }
            (ParamKind::CoreId, _) => return Err(ArgsError::Unsupported { index: i }),
            _ => {}
        }
    }

    // Image parameters in order: the first `ibo_cnt` are IBOs, the rest textures (no remapping on this path).
    let needed = (layout.ibo_cnt + layout.tex_cnt) as usize;
    if images.len() < needed {
        return Err(ArgsError::Images {
            images: images.len(),
            needed,
        });
    }
    for (n, &(index, h, w, dt, va)) in images.iter().take(needed).enumerate() {
        let n = n as u32;
        let (at, uav) = if n < layout.ibo_cnt {
            (layout.ibo_off + n * DESC_BYTES, true)
        } else {
            (layout.tex_off + (n - layout.ibo_cnt) * DESC_BYTES, false)
        };
        let d = image_descriptor(h, w, dt, va, uav).ok_or(ArgsError::ImageShape { index })?;
        for (k, dw) in d.iter().enumerate() {
            put(region, at + 4 * k as u32, &dw.to_le_bytes())?;
        }
        slots
            .push(AddrSlot {
                at: at + 16,
                arg: index as u8,
                kind: SlotKind::DescBase,
            })
            .map_err(|_| ArgsError::Slots)?;
    }
    Ok(slots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a6xx::cl_container::ClContainer;

    /// A container (docs/hw/adreno-kgsl-pm4.md §9.1) with one sampler and three argument records: a buffer at
    /// dword 0x50, an IBO and a texture; one 16-bit constant.
    fn container() -> std::vec::Vec<u8> {
        let mut b = std::vec![0u8; 0x400];
        let put = |b: &mut [u8], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put(&mut b, 0x34, 0x120);
        put(&mut b, 0x120 + 0x14, 4);
        put(&mut b, 0xAC, 0x140);
        put(&mut b, 0xB0, 40);
        put(&mut b, 0x140, 0xABCD_1234);
        put(&mut b, 0x140 + 16, 0x101); // 16-bit: bytes 0x202..0x204
        put(&mut b, 0xC0, 0x168);
        put(&mut b, 0x100, 16);
        put(&mut b, 0x110, 0x178);
        let d = 0x178;
        put(&mut b, d + 0xB0, 3);
        put(&mut b, d + 0xDC, 1);
        put(&mut b, d + 0xE4, 1);
        b[d + 0x158] = b'k';
        let mut a = d + 0x15C + 8; // name padded to 4, then one 8-byte sampler entry
        for (i, (words, kind)) in [(0x50u32, 0u32), (0, 2), (0, 1)].into_iter().enumerate() {
            put(&mut b, a, 32);
            put(&mut b, a + 4, i as u32);
            put(&mut b, a + 12, words);
            put(&mut b, a + 28, kind);
            a += 32;
        }
        b
    }

    /// Placement as tinygrad's QCOMArgsState/_parse_lib define it for the CL path: constants at their offsets,
    /// buffer VAs at the record offsets, IBO descriptors at 2048, textures after the IBOs, then the two samplers.
    #[test]
    fn ibos_come_before_textures_and_samplers_follow() {
        let bytes = container();
        let c = ClContainer::parse(&bytes).unwrap();
        let l = KernelLayout::from_cl(&c).unwrap();
        assert_eq!((l.ibo_off, l.tex_off, l.samp_off), (2048, 2112, 2176));
        assert_eq!((l.ibo_cnt, l.tex_cnt, l.samp_cnt), (1, 1, 2));
        assert_eq!(l.args_size, 2304); // round_up(2048 + 2·64 + 2·16, 256)
        let params = [
            ParamDesc {
                kind: ParamKind::Buffer,
                dtype: DType::U8,
            },
            ParamDesc {
                kind: ParamKind::Image {
                    height: 4,
                    width: 16,
                },
                dtype: DType::F32,
            },
            ParamDesc {
                kind: ParamKind::Image {
                    height: 2,
                    width: 16,
                },
                dtype: DType::F32,
            },
        ];
        let args = [
            GpuArg::Addr(0x1_2345_6780),
            GpuArg::Addr(0x2_0000_0000),
            GpuArg::Addr(0x3_0000_0000),
        ];
        let mut r = std::vec![0xEEu8; 2304];
        let slots = fill_cl(&l, &ClArgs::of(&c), &params, &args, &mut r).unwrap();
        let dw = |at: usize| u32::from_le_bytes(r[at..at + 4].try_into().unwrap());
        assert_eq!(&r[0x140..0x148], &0x1_2345_6780u64.to_le_bytes());
        assert_eq!(&r[0x202..0x204], &[0x34, 0x12]);
        // IBO: dword 0 is the format alone; texture: swizzle + the 0x8 bit (args.rs image_descriptor, §8.3).
        assert_eq!(dw(2048), tex::FMT6_32_32_32_32_FLOAT << 22);
        assert_eq!((dw(2048 + 16), dw(2048 + 20)), (0, 2));
        assert_eq!(dw(2112) & 0xFF, 0x88);
        assert_eq!((dw(2112 + 16), dw(2112 + 20)), (0, 3));
        assert_eq!(
            (dw(2176), dw(2180), dw(2184), dw(2192)),
            (tex::SAMP_0_CLAMP_TO_BORDER, tex::SAMP_1_UNNORM, 0, 0)
        );
        assert_eq!(
            slots
                .iter()
                .map(|s| (s.at, s.arg))
                .collect::<std::vec::Vec<_>>(),
            [(0x140, 0), (2048 + 16, 1), (2112 + 16, 2)]
        );
        // Too few image parameters for the container's image records.
        assert!(matches!(
            fill_cl(&l, &ClArgs::of(&c), &params[..2], &args[..2], &mut r),
            Err(ArgsError::Images { .. })
        ));
    }
}
