//! The HAL [`Device`] implementation of [`AdrenoDevice`]: target check, arena, host transfers, kernel
//! loading, queue creation and `submit` (timeline patching, IB submission, CPU copies between IBs, hang
//! reporting).
use super::queue::{Patch, Segment};
use super::PROGRESS_OFF;
use super::{kern_err, AdrenoDevice, AdrenoError, AdrenoQueue, LoadedKernel, Shared};
use crate::a6xx::cl_args::ClArgs;
use crate::a6xx::cl_container::{ArgKind, ClContainer};
use crate::a6xx::layout::KernelLayout;
use crate::kgsl::{abi, alloc_obj, CommandObject, KgslError, KgslIo};
use modelrt_hal::device::{Device, KernelId, KernelImage, SubmitTiming};
use modelrt_hal::target::{KernelMeta, ParamDesc, ParamKind, Target};
use std::rc::Rc;

impl<K: KgslIo> Device for AdrenoDevice<K> {
    type Error = AdrenoError;
    type Queue = AdrenoQueue<K>;

    fn check_target(&self, target: &Target<'_>) -> Result<(), AdrenoError> {
        match target {
            Target::Adreno { chip, .. } if *chip == self.gpu() => Ok(()),
            Target::Adreno { chip, .. } => Err(AdrenoError::WrongChip {
                bundle: *chip,
                gpu: self.gpu(),
            }),
            other => Err(AdrenoError::WrongTarget(other.family().to_string())),
        }
    }

    fn alloc_arena(&mut self, bytes: u64) -> Result<(), AdrenoError> {
        let mut s = self.sh.borrow_mut();
        let obj = alloc_obj(&mut s.k, bytes)?;
        if let Some(old) = s.arena.replace(obj) {
            s.retired.push(old);
        }
        Ok(())
    }

    fn upload(&mut self, offset: u64, data: &[u8]) -> Result<(), AdrenoError> {
        self.sh
            .borrow()
            .arena_range(offset, data.len() as u64)?
            .write(offset, data)?;
        Ok(())
    }

    fn download(&mut self, offset: u64, out: &mut [u8]) -> Result<(), AdrenoError> {
        self.sh
            .borrow()
            .arena_range(offset, out.len() as u64)?
            .read(offset, out)?;
        Ok(())
    }

    fn load_kernel(&mut self, kernel: &KernelImage<'_>) -> Result<KernelId, AdrenoError> {
        let (layout, image, immediates, tex_to_image, cl): (_, &[u8], &[u8], &[u8], _) =
            match kernel.meta {
                KernelMeta::Ir3(meta) => {
                    let layout = KernelLayout::new(meta).map_err(|e| kern_err(kernel.name, e))?;
                    if kernel.binary.len() != meta.image_size as usize {
                        return Err(kern_err(
                            kernel.name,
                            format_args!(
                                "ISA is {} bytes, metadata says {}",
                                kernel.binary.len(),
                                meta.image_size
                            ),
                        ));
                    }
                    (
                        layout,
                        kernel.binary,
                        meta.immediates,
                        &meta.tex_to_image[..],
                        None,
                    )
                }
                KernelMeta::QcomCl => {
                    // docs/hw/adreno-kgsl-pm4.md §9.1, §18: the container carries the layout; only its image is loaded.
                    let c =
                        ClContainer::parse(kernel.binary).map_err(|e| kern_err(kernel.name, e))?;
                    let layout = KernelLayout::from_cl(&c).map_err(|e| kern_err(kernel.name, e))?;
                    check_cl_params(&c, kernel.params).map_err(|e| kern_err(kernel.name, e))?;
                    (layout, c.image(), &[][..], &[][..], Some(ClArgs::of(&c)))
                }
                _ => {
                    return Err(kern_err(
                        kernel.name,
                        "metadata is not IR3 or Qualcomm CL (Adreno bundles carry one of them)",
                    ))
                }
            };
        let mut s = self.sh.borrow_mut();
        let lib = alloc_obj(&mut s.k, image.len() as u64)?;
        lib.write(0, image)?;
        s.k.label_shader(lib.gpu_addr(), kernel.name);
        let need_stack = layout.hw_stack_offset as u64 * 4;
        if s.stack.as_ref().is_none_or(|st| st.size() < need_stack) {
            let st = alloc_obj(&mut s.k, need_stack)?;
            if let Some(old) = s.stack.replace(st) {
                s.retired.push(old);
            }
        }
        let id = s.kernels.len() as u32;
        s.kernels.push(LoadedKernel {
            name: kernel.name.to_string(),
            layout,
            lib,
            params: kernel.params.to_vec(),
            immediates: immediates.to_vec(),
            tex_to_image: tex_to_image.to_vec(),
            cl,
        });
        Ok(KernelId(id))
    }

    fn create_queue(&mut self) -> Result<AdrenoQueue<K>, AdrenoError> {
        Ok(AdrenoQueue::new(self.sh.clone()))
    }

    fn submit(&mut self, q: &mut AdrenoQueue<K>) -> Result<SubmitTiming, AdrenoError> {
        if !Rc::ptr_eq(&self.sh, &q.sh) {
            return Err(AdrenoError::ForeignQueue);
        }
        let t0 = self.now_ns();
        let mut s = self.sh.borrow_mut();
        let s = &mut *s;
        let Some(ib) = q.ib.as_ref() else {
            return Ok(SubmitTiming::default());
        };
        if s.timeline > s.opts.timeline_wrap {
            s.signals.write_u32(0, 0)?;
            s.timeline = 0;
        }
        let base = s.timeline;
        for p in &q.patches {
            let Patch::Timeline { at, rel } = *p;
            ib.write_u32(at as u64 * 4, base.wrapping_add(rel))?;
        }
        s.dummy.write_u32(PROGRESS_OFF, 0)?;
        let timeout_ms = s.opts.timeout_ms;
        let mut last_ts = None;
        let mut enqueue_ns = 0;
        let n_segments = q.segments.len() + usize::from(q.seg_start < q.dw.len());
        for i in 0..n_segments {
            let seg = q.segments.get(i).copied().unwrap_or(Segment::Ib {
                start: q.seg_start,
                end: q.dw.len(),
            });
            match seg {
                Segment::Ib { start, end } => {
                    q.cmd.clear();
                    q.cmd.push(CommandObject {
                        offset: 0,
                        gpuaddr: ib.gpu_addr() + start as u64 * 4,
                        size: (end - start) as u64 * 4,
                        flags: abi::CMDLIST_IB,
                        id: 0,
                    });
                    last_ts = Some(s.k.gpu_command(s.ctx, &q.cmd)?);
                    enqueue_ns = now_ns().saturating_sub(t0);
                }
                Segment::Copy { dst, src, len } => {
                    if let Some(ts) = last_ts {
                        wait_retired(s, q, ts, timeout_ms)?;
                    }
                    let arena = s.arena.as_ref().ok_or(AdrenoError::NoArena)?;
                    arena.copy_within(dst, src, len)?;
                }
            }
        }
        if let Some(ts) = last_ts {
            wait_retired(s, q, ts, timeout_ms)?;
        }
        let want = base.wrapping_add(q.max_signal);
        let got = s.signals.read_u32(0)?;
        if got != want {
            return Err(AdrenoError::Timeline { got, want });
        }
        s.timeline = want;
        let device_ns = match (&q.ts, q.n_ts) {
            (Some(ts), n) if n >= 2 => {
                let ticks = ts
                    .read_u64(8 * (n as u64 - 1))?
                    .saturating_sub(ts.read_u64(0)?);
                ticks * 625 / 12 // 19.2 MHz → ns
            }
            _ => 0,
        };
        Ok(SubmitTiming {
            enqueue_ns,
            device_ns,
        })
    }

    fn now_ns(&self) -> u64 {
        now_ns()
    }
}

fn now_ns() -> u64 {
    use std::sync::OnceLock;
    static T0: OnceLock<std::time::Instant> = OnceLock::new();
    T0.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}

fn wait_retired<K: KgslIo>(
    s: &mut Shared<K>,
    q: &AdrenoQueue<K>,
    ts: u32,
    timeout_ms: u32,
) -> Result<(), AdrenoError> {
    match s.k.wait_timestamp(s.ctx, ts, timeout_ms) {
        Ok(()) => Ok(()),
        Err(KgslError::Timeout { .. }) => {
            let done = s.dummy.read_u32(PROGRESS_OFF)? as usize;
            match q.dispatches.get(done) {
                Some(&kid) => Err(AdrenoError::Hang {
                    index: done as u32,
                    kernel: s
                        .kernels
                        .get(kid as usize)
                        .map_or_else(|| "?".into(), |k| k.name.clone()),
                    timeout_ms,
                }),
                None => Err(AdrenoError::Stuck { timeout_ms }),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// A CL kernel's parameters must match its container: one buffer/scalar record per buffer or int parameter, one
/// image record (texture or IBO) per image parameter.
fn check_cl_params(c: &ClContainer<'_>, params: &[ParamDesc]) -> Result<(), String> {
    let images = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Image { .. }))
        .count() as u32;
    let plain = params.len() as u32 - images;
    let (bufs, imgs) = (
        c.count(ArgKind::Buffer),
        c.count(ArgKind::Texture) + c.count(ArgKind::Ibo),
    );
    if bufs != plain || imgs != images {
        return Err(format!(
            "the container has {bufs} buffer and {imgs} image arguments, the bundle lists {plain} and {images}"
        ));
    }
    Ok(())
}
