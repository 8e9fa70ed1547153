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
