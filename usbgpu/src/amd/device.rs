//! [`AmdDevice`]: the hal [`Device`] over a booted AM driver. The arena lives in VRAM (identity
//! mapped, so an arena offset is `arena.va() + offset`); kernels are loaded as their code object's
//! image and dispatched at `entry_offset`; a recorded [`AmdQueue`] is a PM4 indirect buffer with its
//! kernargs in VRAM, uploaded on the first submit. Each [`Device::submit`] writes two packets to the
//! compute ring (INDIRECT_BUFFER + RELEASE_MEM of the submission number), rings one doorbell and
//! polls the signal block — a USB transfer count independent of the number of kernels — and never
//! allocates. Inputs/outputs up to [`BAR_COPY_MAX`] go through BAR0 streams (2 transfers each);
//! larger ones through the SDMA copy pipelines ([`super::transfer`]).
use super::boot::Am;
use super::bus::{poll_until, DEFAULT_TIMEOUT};
use super::code_object::loaded_image;
use super::discovery::GcInfo;
use super::error::AmdError;
use super::mem::Alloc;
use super::pm4::{self, Pm4};
use super::regs;
use super::transfer::CopyEngine;
use modelrt_hal::device::{Arg, Device, KernelId, KernelImage, Queue, SubmitTiming};
use modelrt_hal::target::{KernelMeta, ParamKind, Target};
use modelrt_hal::usb::UsbTransport;

/// Host copies up to this size use BAR0 streams; larger ones SDMA.
pub const BAR_COPY_MAX: usize = 1 << 20;
/// GPU timestamp clock (RELEASE_MEM data_sel 3): 100 MHz → 10 ns per tick.
pub const TIMESTAMP_NS: u64 = 10;
/// Timestamps a queue may record.
pub const MAX_TIMESTAMPS: usize = 15;
/// Signal block: submission number (u64) then the timestamps.
const SIG_BYTES: usize = 8 * (1 + MAX_TIMESTAMPS);
/// Timeline word written by [`Queue::signal`] (inside the signal page, after the block).
const TIMELINE: u64 = 0x100;
/// Copy hand-off words: compute → SDMA ("dispatches before copy k are done") and SDMA → compute
/// ("copy k is done"), reset to 0 by the host before each submission.
const SYNC_COMPUTE: u64 = 0x110;
/// SDMA → compute.
const SYNC_SDMA: u64 = 0x118;
/// Indirect-buffer and kernarg capacity per queue.
pub const IB_BYTES: u64 = 1 << 20;
/// Kernarg pool per queue.
pub const KERNARG_BYTES: u64 = 1 << 20;
/// Kernarg alignment per dispatch.
const KERNARG_ALIGN: usize = 256;

/// Kernel descriptor `kernel_code_properties` bits (AMDGPUUsage, tinygrad `ops_amd.py`).
const KCP_PRIVATE_SEGMENT_BUFFER: u16 = 1 << 0;
/// Flat-scratch-init user SGPRs: not provided (GC 11 scratch is architected, §5.1).
const KCP_FLAT_SCRATCH_INIT: u16 = 1 << 5;
/// Scratch is sized for wave64 lanes and a 256-byte granule (docs/hw/amd-driver.md §5.1).
const SCRATCH_LANES: u64 = 64;
/// `COMPUTE_TMPRING_SIZE.WAVESIZE` unit in bytes.
const SCRATCH_GRANULE: u64 = 256;
/// The private-segment buffer descriptor's word 3 on GC 11: FORMAT 32_UINT (20) at 17:12,
/// INDEX_STRIDE 2 (32 lanes) at 22:21, ADD_TID_ENABLE bit 23, OOB_SELECT 2 at 29:28
/// (docs/hw/amd-driver.md §5.1).
const SCRATCH_RSRC_WORD3: u32 = 20 << 12 | 2 << 21 | 1 << 23 | 2 << 28;

/// The scratch (private segment) area and what a dispatch that uses it programs
/// (docs/hw/amd-driver.md §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchLayout {
    /// Private bytes per lane the area was sized for (the largest kernel's, rounded up to 4).
    pub per_thread: u64,
    /// `COMPUTE_TMPRING_SIZE.WAVESIZE`: bytes per wave / 256.
    pub wavesize: u32,
    /// `COMPUTE_TMPRING_SIZE.WAVES`: waves per shader engine that may hold scratch at once.
    pub waves: u32,
    /// Bytes of the area: every scratch slot of every CU.
    pub bytes: u64,
}

impl ScratchLayout {
    /// The layout for `private_size` bytes per lane on a GPU with `gc`'s counts.
    pub fn new(private_size: u32, gc: &GcInfo) -> Result<ScratchLayout, String> {
        let cus = u64::from(gc.num_cu_per_sa) * u64::from(gc.num_sa_per_se) * u64::from(gc.num_se);
        let slots = u64::from(gc.max_scratch_slots_per_cu);
        if cus == 0 || slots == 0 || gc.num_se == 0 {
            return Err(format!(
                "the GC info table lists {cus} CUs, {slots} scratch slots per CU, {} SEs",
                gc.num_se
            ));
        }
        let per_thread = u64::from(private_size).next_multiple_of(SCRATCH_GRANULE / SCRATCH_LANES);
        let wavesize = (SCRATCH_LANES * per_thread).div_ceil(SCRATCH_GRANULE);
        let bytes = per_thread * SCRATCH_LANES * slots * cus;
        let waves = (bytes / (wavesize * SCRATCH_GRANULE) / u64::from(gc.num_se)).min(cus * slots);
        if wavesize > 0x7FFF || waves > 0xFFF {
            return Err(format!(
                "{private_size} private bytes per lane do not fit COMPUTE_TMPRING_SIZE \
                 (WAVESIZE {wavesize}, WAVES {waves})"
            ));
        }
        Ok(ScratchLayout {
            per_thread,
            wavesize: wavesize as u32,
            waves: waves as u32,
            bytes,
        })
    }

    /// `COMPUTE_TMPRING_SIZE`: WAVES at bits 11:0, WAVESIZE at bits 26:12.
    pub fn tmpring_size(&self) -> u32 {
        self.waves | self.wavesize << 12
    }
}

/// An allocated scratch area.
#[derive(Clone, Copy, Debug)]
struct Scratch {
    layout: ScratchLayout,
    va: u64,
}

/// What a dispatch needs to know about a loaded kernel.
#[derive(Clone, Debug)]
pub struct LoadedKernel {
    /// Name (for messages).
    pub name: String,
    /// GPU VA of the first instruction.
    pub code_va: u64,
    /// Kernel descriptor fields.
    pub rsrc: [u32; 3],
    /// Kernarg segment bytes.
    pub kernarg_size: u32,
    /// LDS bytes.
    pub lds: u32,
    /// Parameter kinds in order (buffer or int).
    pub params: Vec<bool>,
    /// Private (scratch) bytes per lane; 0 when the kernel uses none.
    pub private_size: u32,
    /// The kernel wants the private-segment buffer descriptor in its first 4 user SGPRs.
    pub private_segment_buffer: bool,
}

/// The device.
pub struct AmdDevice<T> {
    /// The booted driver.
    pub am: Am<T>,
    copies: CopyEngine,
    arena: Option<Alloc>,
    kernels: Vec<LoadedKernel>,
    scratch: Option<Scratch>,
    sig: Alloc,
    epoch: u64,
    clock: Box<dyn Fn() -> u64 + Send>,
    diagnose: Option<Box<dyn Fn() -> Option<String> + Send>>,
}

/// A recorded PM4 schedule.
pub struct AmdQueue {
    pm4: Pm4,
    kernargs: Vec<u8>,
    kernels: Vec<LoadedKernel>,
    scratch: Option<Scratch>,
    arena_va: u64,
    ib: Alloc,
    kernarg_pool: Alloc,
    sig_va: u64,
    timestamps: usize,
    uploaded: bool,
    /// SDMA program of the schedule's arena copies (empty when there are none).
    sdma: Vec<u32>,
    sdma_wire: Vec<u8>,
    copies: u32,
}

fn invalid(step: &'static str, what: String) -> AmdError {
    AmdError::Invalid { step, what }
}

impl<T: UsbTransport> AmdDevice<T> {
    /// Wrap a booted driver; `clock` is the host's monotonic clock in ns.
    pub fn new(mut am: Am<T>, clock: Box<dyn Fn() -> u64 + Send>) -> Result<Self, AmdError> {
        let sig = am.alloc.alloc("signal page", 4096, 4096)?;
        am.bus.vram_write("signal page", sig.paddr, &[0u8; 4096])?;
        Ok(AmdDevice {
            am,
            copies: CopyEngine::new(),
            arena: None,
            kernels: Vec::new(),
            scratch: None,
            sig,
            epoch: 0,
            clock,
            diagnose: None,
        })
    }

    fn arena(&self, step: &'static str) -> Result<Alloc, AmdError> {
        self.arena
            .ok_or_else(|| invalid(step, "no arena allocated".into()))
    }

    fn range(&self, step: &'static str, offset: u64, len: usize) -> Result<u64, AmdError> {
        let a = self.arena(step)?;
        if offset.checked_add(len as u64).is_none_or(|e| e > a.size) {
            return Err(invalid(
                step,
                format!(
                    "{len} bytes at arena offset {offset:#x} outside the {}-byte arena",
                    a.size
                ),
            ));
        }
        Ok(a.paddr + offset)
    }

    /// Host → VRAM at physical `pa`: BAR0 for small or unaligned copies, SDMA for large ones.
    fn write_vram(&mut self, step: &'static str, pa: u64, data: &[u8]) -> Result<(), AmdError> {
        let head = ((4 - (pa % 4) as usize) % 4).min(data.len());
        let body_len = (data.len() - head) / 4 * 4;
        if head > 0 {
            self.merge_dword(step, pa, &data[..head])?;
        }
        let body = &data[head..head + body_len];
        let body_pa = pa + head as u64;
        if body.len() > BAR_COPY_MAX && self.am.sdma.is_some() {
            let va = super::mem::VA_BASE + body_pa;
            let mut q = self.am.sdma.take().expect("checked");
            let r = self.copies.copy_in(&mut self.am.bus, &mut q, va, body);
            self.am.sdma = Some(q);
            r?;
        } else {
            self.am.bus.vram_write(step, body_pa, body)?;
        }
        let tail = &data[head + body_len..];
        if !tail.is_empty() {
            self.merge_dword(step, body_pa + body_len as u64, tail)?;
        }
        Ok(())
    }

    /// Write 1–3 bytes at `pa` (inside one dword) by read-modify-write.
    fn merge_dword(&mut self, step: &'static str, pa: u64, bytes: &[u8]) -> Result<(), AmdError> {
        let base = pa & !3;
        let mut w = self.am.bus.vram_read32(step, base)?.to_le_bytes();
        let o = (pa - base) as usize;
        w[o..o + bytes.len()].copy_from_slice(bytes);
        self.am.bus.vram_write(step, base, &w)
    }

    fn read_vram(&mut self, step: &'static str, pa: u64, out: &mut [u8]) -> Result<(), AmdError> {
        let head = ((4 - (pa % 4) as usize) % 4).min(out.len());
        let body_len = (out.len() - head) / 4 * 4;
        if head > 0 {
            let w = self.am.bus.vram_read32(step, pa & !3)?.to_le_bytes();
            let o = (pa % 4) as usize;
            out[..head].copy_from_slice(&w[o..o + head]);
        }
        let body_pa = pa + head as u64;
        let (_, rest) = out.split_at_mut(head);
        let (body, tail) = rest.split_at_mut(body_len);
        if body.len() > BAR_COPY_MAX && self.am.sdma.is_some() {
            let va = super::mem::VA_BASE + body_pa;
            let mut q = self.am.sdma.take().expect("checked");
            let r = self.copies.copy_out(&mut self.am.bus, &mut q, va, body);
            self.am.sdma = Some(q);
            r?;
        } else {
            self.am.bus.vram_read(step, body_pa, body)?;
        }
        if !tail.is_empty() {
            let w = self
                .am
                .bus
                .vram_read32(step, body_pa + body_len as u64)?
                .to_le_bytes();
            let n = tail.len();
            tail.copy_from_slice(&w[..n]);
        }
        Ok(())
    }

    /// Add what an emulated GPU can say about a failure (its own error log) to submit errors.
    pub fn set_diagnosis(&mut self, f: Box<dyn Fn() -> Option<String> + Send>) {
        self.diagnose = Some(f);
    }

    /// `e` with the emulated GPU's own diagnosis appended, when there is one.
    fn diagnosed(&self, e: AmdError) -> AmdError {
        match self.diagnose.as_ref().and_then(|d| d()) {
            Some(model) => {
                // The model names a failing shader by its code address: add the kernel's name.
                let names: Vec<&str> = self
                    .kernels
                    .iter()
                    .filter(|k| mentions(&model, k.code_va))
                    .map(|k| k.name.as_str())
                    .collect();
                let named = if names.is_empty() {
                    String::new()
                } else {
                    format!(" (kernel {})", names.join(", "))
                };
                AmdError::Device {
                    step: "GPU",
                    what: format!("{e} [the GPU model reports: {model}{named}]"),
                }
            }
            None => e,
        }
    }

    /// Loaded kernels (for tests and reports).
    pub fn kernels(&self) -> &[LoadedKernel] {
        &self.kernels
    }

    /// The arena's GPU VA.
    pub fn arena_va(&self) -> Option<u64> {
        self.arena.map(|a| a.va())
    }

    /// Shut the GPU down cleanly (dequeue, SDMA off, clocks down).
    pub fn fini(&mut self) -> Result<(), AmdError> {
        self.am.fini()
    }
}

/// Whether `text` contains the address `va` as a whole `0x…` hex number.
fn mentions(text: &str, va: u64) -> bool {
    let hex = format!("{va:#x}");
    text.match_indices(&hex).any(|(at, _)| {
        !text[at + hex.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_hexdigit())
    })
}

impl<T: UsbTransport> Device for AmdDevice<T> {
    type Error = AmdError;
    type Queue = AmdQueue;

    fn check_target(&self, target: &Target<'_>) -> Result<(), AmdError> {
        let gc = self.am.bus.ips().version(super::ip::Ip::Gc);
        match (target, gc) {
            (Target::Amd { gfx: 0x1100 }, Some(v)) if v.0 == 11 && v.1 == 0 && v.2 == 0 => Ok(()),
            (Target::Amd { gfx }, _) => Err(invalid(
                "check target",
                format!(
                    "bundle is for gfx{gfx:x}, this GPU is GC {} (gfx1100)",
                    gc.map(|v| v.to_string()).unwrap_or_default()
                ),
            )),
            (t, _) => Err(invalid(
                "check target",
                format!("bundle is for {}, not an AMD GPU", t.family()),
            )),
        }
    }

    fn alloc_arena(&mut self, bytes: u64) -> Result<(), AmdError> {
        self.arena = Some(self.am.alloc.alloc("arena", bytes, 1 << 21)?);
        Ok(())
    }

    fn upload(&mut self, offset: u64, data: &[u8]) -> Result<(), AmdError> {
        let pa = self.range("upload", offset, data.len())?;
        let r = self.write_vram("upload", pa, data);
        r.map_err(|e| self.diagnosed(e))
    }

    fn download(&mut self, offset: u64, out: &mut [u8]) -> Result<(), AmdError> {
        let pa = self.range("download", offset, out.len())?;
        let r = self.read_vram("download", pa, out);
        r.map_err(|e| self.diagnosed(e))
    }

    fn load_kernel(&mut self, k: &KernelImage<'_>) -> Result<KernelId, AmdError> {
        let step = "kernel load";
        let KernelMeta::Amd(m) = k.meta else {
            return Err(invalid(
                step,
                format!("kernel {} has no AMD metadata", k.name),
            ));
        };
        if m.wavefront_size != 32 {
            return Err(invalid(
                step,
                format!(
                    "kernel {}: wave{} (only wave32 is dispatched)",
                    k.name, m.wavefront_size
                ),
            ));
        }
        if m.kernel_code_properties & KCP_FLAT_SCRATCH_INIT != 0 {
            return Err(invalid(
                step,
                format!(
                    "kernel {}: asks for flat-scratch-init SGPRs, which this driver does not \
                     provide (GC 11 scratch is architected; docs/hw/amd-driver.md §5.1)",
                    k.name
                ),
            ));
        }
        if m.private_segment_fixed_size != 0 {
            // The area is allocated at queue creation, sized for the largest kernel; check now
            // that this GPU can give it one.
            let gc = self.am.gc_info.as_ref().ok_or_else(|| {
                invalid(
                    step,
                    format!(
                        "kernel {}: uses scratch ({} bytes) and the GPU's GC info (CU and \
                         scratch-slot counts) is unknown",
                        k.name, m.private_segment_fixed_size
                    ),
                )
            })?;
            ScratchLayout::new(m.private_segment_fixed_size, gc)
                .map_err(|e| invalid(step, format!("kernel {}: {e}", k.name)))?;
        }
        let (mut image, align) =
            loaded_image(k.binary).map_err(|e| invalid(step, format!("kernel {}: {e}", k.name)))?;
        if m.entry_offset as usize >= image.len() || m.descriptor_offset as usize + 64 > image.len()
        {
            return Err(invalid(
                step,
                format!(
                    "kernel {}: entry/descriptor offset outside its {}-byte image",
                    k.name,
                    image.len()
                ),
            ));
        }
        image.resize(image.len().next_multiple_of(4), 0);
        let code = self
            .am
            .alloc
            .alloc("kernel code", image.len() as u64, align.max(4096))?;
        let code_va = code.va() + m.entry_offset as u64;
        if !code_va.is_multiple_of(256) {
            return Err(invalid(
                step,
                format!(
                    "kernel {}: entry at image offset {:#x} is not 256-byte aligned",
                    k.name, m.entry_offset
                ),
            ));
        }
        self.am.bus.vram_write(step, code.paddr, &image)?;
        let lds_blocks = m.group_segment_fixed_size.div_ceil(512);
        self.kernels.push(LoadedKernel {
            name: k.name.to_string(),
            code_va,
            rsrc: [
                m.compute_pgm_rsrc1 | (1 << 20),
                m.compute_pgm_rsrc2 | (lds_blocks << 15),
                m.compute_pgm_rsrc3,
            ],
            kernarg_size: m.kernarg_size,
            lds: m.group_segment_fixed_size,
            params: k
                .params
                .iter()
                .map(|p| p.kind == ParamKind::Buffer)
                .collect(),
            private_size: m.private_segment_fixed_size,
            private_segment_buffer: m.kernel_code_properties & KCP_PRIVATE_SEGMENT_BUFFER != 0,
        });
        Ok(KernelId(self.kernels.len() as u32 - 1))
    }

    fn create_queue(&mut self) -> Result<AmdQueue, AmdError> {
        let gc_base = self.am.bus.ips().get(super::ip::Ip::Gc).bases[0];
        // Scratch for the largest kernel, allocated once (again only if a later queue needs
        // more: the bump allocator cannot grow it) — docs/hw/amd-driver.md §5.1.
        let need = self
            .kernels
            .iter()
            .map(|k| k.private_size)
            .max()
            .unwrap_or(0);
        let have = self.scratch.map_or(0, |s| s.layout.per_thread);
        if need != 0 && u64::from(need) > have {
            let step = "scratch";
            let gc = self
                .am
                .gc_info
                .ok_or_else(|| invalid(step, "the GPU's GC info is unknown".into()))?;
            let layout = ScratchLayout::new(need, &gc).map_err(|e| invalid(step, e))?;
            let area = self.am.alloc.alloc("scratch", layout.bytes, 1 << 16)?;
            self.scratch = Some(Scratch {
                layout,
                va: area.va(),
            });
        }
        Ok(AmdQueue {
            pm4: Pm4::new(gc_base),
            kernargs: Vec::new(),
            kernels: self.kernels.clone(),
            scratch: self.scratch,
            arena_va: self.arena("create queue")?.va(),
            ib: self.am.alloc.alloc("indirect buffer", IB_BYTES, 4096)?,
            kernarg_pool: self.am.alloc.alloc("kernargs", KERNARG_BYTES, 4096)?,
            sig_va: self.sig.va(),
            timestamps: 0,
            uploaded: false,
            sdma: Vec::new(),
            sdma_wire: Vec::new(),
            copies: 0,
        })
    }

    fn submit(&mut self, q: &mut AmdQueue) -> Result<SubmitTiming, AmdError> {
        let step = "submit";
        let t0 = (self.clock)();
        if !q.uploaded {
            self.am.bus.vram_write_dwords(step, q.ib.paddr, &q.pm4.dw)?;
            if !q.kernargs.is_empty() {
                self.am
                    .bus
                    .vram_write(step, q.kernarg_pool.paddr, &q.kernargs)?;
            }
            q.uploaded = true;
        }
        if !q.sdma.is_empty() {
            // Arena copies run on SDMA, handed off through two words reset here.
            self.am
                .bus
                .vram_write(step, self.sig.paddr + SYNC_COMPUTE, &[0u8; 16])?;
            let mut sq = self
                .am
                .sdma
                .take()
                .ok_or_else(|| invalid(step, "no SDMA queue".into()))?;
            let r = sq.submit(&mut self.am.bus, &q.sdma, &mut q.sdma_wire);
            self.am.sdma = Some(sq);
            r?;
        }
        self.epoch += 1;
        let sig = self.sig.va();
        let ib = q.ib.va();
        // INDIRECT_BUFFER (4 dwords) + RELEASE_MEM of the submission number (8 dwords).
        let mut ring = [0u32; 12];
        ring[0] = pm4::header(pm4::op::INDIRECT_BUFFER, 3);
        ring[1] = ib as u32;
        ring[2] = (ib >> 32) as u32;
        ring[3] = q.pm4.dw.len() as u32 | pm4::IB_VALID;
        ring[4] = pm4::header(pm4::op::RELEASE_MEM, 7);
        ring[5] = pm4::EVENT_CACHE_FLUSH_AND_INV_TS | (5 << 8);
        ring[6] = pm4::DATA_SEL_64 << 29;
        ring[7] = sig as u32;
        ring[8] = (sig >> 32) as u32;
        ring[9] = self.epoch as u32;
        ring[10] = (self.epoch >> 32) as u32;
        let mut cq = self
            .am
            .compute
            .take()
            .ok_or_else(|| invalid(step, "no compute queue".into()))?;
        let r = cq.submit(&mut self.am.bus, &ring);
        self.am.compute = Some(cq);
        r?;
        let t1 = (self.clock)();
        let mut block = [0u8; SIG_BYTES];
        let n = 8 * (1 + q.timestamps);
        let (pa, epoch) = (self.sig.paddr, self.epoch);
        let polled = poll_until(
            &mut self.am.bus,
            step,
            "RELEASE_MEM signal",
            DEFAULT_TIMEOUT,
            |b| {
                b.vram_read(step, pa, &mut block[..n])?;
                Ok(u64::from_le_bytes(block[..8].try_into().expect("8 bytes")))
            },
            |v| v == epoch,
        );
        if let Err(e) = polled {
            if !matches!(e, AmdError::Timeout { .. }) {
                return Err(self.diagnosed(e));
            }
            let fault = self
                .am
                .bus
                .rreg(step, regs::GCVM_L2_PROTECTION_FAULT_STATUS)?;
            let why = if fault != 0 {
                format!("GPU page fault (GCVM_L2_PROTECTION_FAULT_STATUS = {fault:#x})")
            } else {
                "the compute queue stopped (hang or a dispatch the GPU refused)".to_string()
            };
            return Err(self.diagnosed(AmdError::Device {
                step: "compute queue",
                what: format!(
                    "no RELEASE_MEM signal within {} ms: {why}; outputs were not computed",
                    DEFAULT_TIMEOUT.as_millis()
                ),
            }));
        }
        let ts = |i: usize| {
            u64::from_le_bytes(block[8 + 8 * i..16 + 8 * i].try_into().expect("8 bytes"))
        };
        let device_ns = if q.timestamps >= 2 {
            ts(q.timestamps - 1).saturating_sub(ts(0)) * TIMESTAMP_NS
        } else {
            0
        };
        Ok(SubmitTiming {
            enqueue_ns: t1.saturating_sub(t0),
            device_ns,
        })
    }

    fn now_ns(&self) -> u64 {
        (self.clock)()
    }
}

impl AmdQueue {
    /// The recorded indirect buffer (dwords).
    pub fn ib(&self) -> &[u32] {
        &self.pm4.dw
    }

    fn check_room(&self) -> Result<(), AmdError> {
        if 4 * self.pm4.dw.len() as u64 > IB_BYTES - 256 {
            return Err(invalid(
                "record",
                format!("the schedule exceeds the {IB_BYTES}-byte indirect buffer"),
            ));
        }
        Ok(())
    }
}

impl Queue for AmdQueue {
    type Error = AmdError;

    fn wait(&mut self, value: u64) -> Result<(), AmdError> {
        let at = self.sig_va + TIMELINE;
        self.pm4.wait_mem(at, value as u32, !0, pm4::FUNC_GEQ);
        self.check_room()
    }

    fn timestamp(&mut self) -> Result<(), AmdError> {
        if self.timestamps == MAX_TIMESTAMPS {
            return Err(invalid(
                "record",
                format!("more than {MAX_TIMESTAMPS} timestamps"),
            ));
        }
        let at = self.sig_va + 8 + 8 * self.timestamps as u64;
        self.pm4.release_mem(at, 0, pm4::DATA_SEL_TIMESTAMP);
        self.timestamps += 1;
        self.check_room()
    }

    fn exec(
        &mut self,
        kernel: KernelId,
        args: &[Arg],
        global: [u32; 3],
        local: [u32; 3],
    ) -> Result<(), AmdError> {
        let step = "record";
        let k = self
            .kernels
            .get(kernel.0 as usize)
            .ok_or_else(|| invalid(step, format!("kernel id {} not loaded", kernel.0)))?;
        if args.len() != k.params.len() {
            return Err(invalid(
                step,
                format!(
                    "kernel {}: {} arguments for {} parameters",
                    k.name,
                    args.len(),
                    k.params.len()
                ),
            ));
        }
        // Kernargs: buffers as 64-bit VAs, ints as 32-bit, each at its natural alignment.
        let start = self.kernargs.len().next_multiple_of(KERNARG_ALIGN);
        self.kernargs.resize(start, 0);
        for (a, is_buf) in args.iter().zip(&k.params) {
            match (a, is_buf) {
                (Arg::Buffer { offset, .. }, true) => {
                    let at = self.kernargs.len().next_multiple_of(8);
                    self.kernargs.resize(at, 0);
                    self.kernargs
                        .extend_from_slice(&(self.arena_va + offset).to_le_bytes());
                }
                (Arg::Int(v), false) => {
                    let at = self.kernargs.len().next_multiple_of(4);
                    self.kernargs.resize(at, 0);
                    self.kernargs.extend_from_slice(&v.to_le_bytes());
                }
                _ => {
                    return Err(invalid(
                        step,
                        format!(
                            "kernel {}: argument kinds do not match its parameters",
                            k.name
                        ),
                    ))
                }
            }
        }
        let used = self.kernargs.len() - start;
        if used > k.kernarg_size as usize {
            return Err(invalid(
                step,
                format!(
                    "kernel {}: {used} bytes of arguments for a {}-byte kernarg segment",
                    k.name, k.kernarg_size
                ),
            ));
        }
        self.kernargs
            .resize(start + (k.kernarg_size as usize).max(used), 0);
        if self.kernargs.len() as u64 > KERNARG_BYTES {
            return Err(invalid(
                step,
                format!("kernargs exceed the {KERNARG_BYTES}-byte pool"),
            ));
        }
        let kernarg_va = self.kernarg_pool.va() + start as u64;
        let code = k.code_va >> 8;
        let rsrc = k.rsrc;
        // Scratch (docs/hw/amd-driver.md §5.1): TMPRING_SIZE and the base (>> 8) for kernels
        // that use it, and the private-segment buffer descriptor ahead of the kernarg pointer
        // when the kernel asks for it.
        let (tmpring, base, user) = match (k.private_size, self.scratch) {
            (0, _) => (0, 0, None),
            (_, Some(s)) if u64::from(k.private_size) <= s.layout.per_thread => {
                // Word 1: BASE_ADDRESS_HI | SWIZZLE_ENABLE (31:30) = 2.
                let desc = k.private_segment_buffer.then_some([
                    s.va as u32,
                    (s.va >> 32) as u32 | 1 << 31,
                    0xFFFF_FFFF,
                    SCRATCH_RSRC_WORD3,
                ]);
                (s.layout.tmpring_size(), s.va >> 8, desc)
            }
            _ => {
                return Err(invalid(
                    step,
                    format!(
                        "kernel {}: {} scratch bytes per lane and no scratch area that large \
                         (the kernel was loaded after the queue was created)",
                        k.name, k.private_size
                    ),
                ))
            }
        };
        let p = &mut self.pm4;
        p.acquire_mem();
        p.set_sh(regs::COMPUTE_PGM_LO, &[code as u32, (code >> 32) as u32]);
        p.set_sh(regs::COMPUTE_PGM_RSRC1, &[rsrc[0], rsrc[1]]);
        p.set_sh(regs::COMPUTE_PGM_RSRC3, &[rsrc[2]]);
        p.set_sh(regs::COMPUTE_TMPRING_SIZE, &[tmpring]);
        p.set_sh(
            regs::COMPUTE_DISPATCH_SCRATCH_BASE_LO,
            &[base as u32, (base >> 32) as u32],
        );
        p.set_sh(regs::COMPUTE_RESTART_X, &[0, 0, 0]);
        let karg = [kernarg_va as u32, (kernarg_va >> 32) as u32];
        match user {
            Some(d) => p.set_sh(
                regs::COMPUTE_USER_DATA_0,
                &[d[0], d[1], d[2], d[3], karg[0], karg[1]],
            ),
            None => p.set_sh(regs::COMPUTE_USER_DATA_0, &karg),
        }
        p.set_sh(regs::COMPUTE_RESOURCE_LIMITS, &[0]);
        p.set_sh(
            regs::COMPUTE_START_X,
            &[0, 0, 0, local[0], local[1], local[2]],
        );
        p.dispatch_direct(global, pm4::INITIATOR_WAVE32);
        p.event_write(pm4::EVENT_CS_PARTIAL_FLUSH, 4);
        self.check_room()
    }

    /// An arena copy runs on SDMA between the dispatches before and after it: the compute
    /// queue signals copy `k` at end of pipe and waits for SDMA's fence `k`; SDMA waits for the
    /// signal, copies, and fences.
    fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), AmdError> {
        self.copies += 1;
        let k = self.copies;
        let to_sdma = self.sig_va + SYNC_COMPUTE;
        let from_sdma = self.sig_va + SYNC_SDMA;
        self.pm4.release_mem(to_sdma, k as u64, pm4::DATA_SEL_32);
        self.pm4.wait_mem(from_sdma, k, !0, pm4::FUNC_GEQ);
        super::sdma::poll_mem(&mut self.sdma, to_sdma, k, !0, super::sdma::FUNC_GEQ);
        super::sdma::copy(
            &mut self.sdma,
            self.arena_va + dst,
            self.arena_va + src,
            len,
        );
        super::sdma::fence(&mut self.sdma, from_sdma, k);
        if 4 * self.sdma.len() as u64 > super::boot::sdma::RING_BYTES / 2 {
            return Err(invalid(
                "record",
                "the schedule's copies exceed the SDMA ring".into(),
            ));
        }
        self.sdma_wire.reserve(4 * self.sdma.len());
        self.check_room()
    }

    fn signal(&mut self, value: u64) -> Result<(), AmdError> {
        self.pm4
            .release_mem(self.sig_va + TIMELINE, value, pm4::DATA_SEL_64);
        self.check_room()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::amd::ip::{Ip, IpTable};

    /// Navi31 as its GC info table describes it (the GPU model's v1.0 table, a 7900 XTX: 6 SE ×
    /// 2 SA × 4 WGP of 2 CUs, 32 scratch slots per CU).
    fn navi31_gc() -> GcInfo {
        GcInfo {
            version_major: 1,
            version_minor: 0,
            num_se: 6,
            num_cu_per_sa: 8,
            num_sa_per_se: 2,
            num_rb_per_se: 4,
            num_gprs: 1536,
            wave_size: 32,
            max_waves_per_simd: 16,
            max_scratch_slots_per_cu: 32,
            lds_size: 64,
        }
    }

    /// SET_SH_REG writes of an indirect buffer, in order: (dword offset from 0x2C00, values).
    fn sh_writes(ib: &[u32]) -> Vec<(u32, Vec<u32>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < ib.len() {
            let h = ib[i];
            assert_eq!(h >> 30, 3, "type-3 header at dword {i}");
            let n = (h >> 16 & 0x3FFF) as usize + 1;
            if h >> 8 & 0xFF == 0x76 {
                out.push((ib[i + 1], ib[i + 2..i + 1 + n].to_vec()));
            }
            i += 1 + n;
        }
        out
    }

    fn kernel(name: &str, private_size: u32, psb: bool) -> LoadedKernel {
        LoadedKernel {
            name: name.into(),
            code_va: 0x2000_0000_4000,
            rsrc: [0, 1 | 2 << 1, 0],
            kernarg_size: 16,
            lds: 0,
            params: vec![true],
            private_size,
            private_segment_buffer: psb,
        }
    }

    #[test]
    fn scratch_layout_matches_the_documented_sizing() {
        // 228 bytes per lane (inception_v1's r_8_7_7_2_16_4_4_4_3_7_7), by hand (§5.1):
        // per thread = 228 (already a multiple of 256 / 64 = 4); WAVESIZE = 64 × 228 / 256 = 57;
        // bytes = 228 × 64 lanes × 32 slots × 96 CUs; WAVES = (96 × 32 waves) / 6 SEs = 512.
        let l = ScratchLayout::new(228, &navi31_gc()).unwrap();
        assert_eq!(l.per_thread, 228);
        assert_eq!(l.wavesize, 57);
        assert_eq!(l.bytes, 44_826_624);
        assert_eq!(l.waves, 512);
        // 57 << 12 | 512.
        assert_eq!(l.tmpring_size(), 0x0003_9200);
        // 5 bytes round up to 8 per thread: WAVESIZE = 64 × 8 / 256 = 2.
        let l = ScratchLayout::new(5, &navi31_gc()).unwrap();
        assert_eq!((l.per_thread, l.wavesize, l.waves), (8, 2, 512));
        assert_eq!(l.bytes, 8 * 64 * 32 * 96);
        // WAVESIZE beyond its 15 bits is refused.
        assert!(ScratchLayout::new(0x8000 * 4, &navi31_gc()).is_err());
    }

    #[test]
    fn scratch_dispatch_packets_carry_tmpring_base_and_descriptor() {
        let layout = ScratchLayout::new(228, &navi31_gc()).unwrap();
        let scratch_va = 0x2000_0100_0000u64;
        let gc_base = IpTable::navi31().get(Ip::Gc).bases[0];
        let mut q = AmdQueue {
            pm4: Pm4::new(gc_base),
            kernargs: Vec::new(),
            kernels: vec![
                kernel("psb", 228, true),
                kernel("architected", 100, false),
                kernel("none", 0, false),
            ],
            scratch: Some(Scratch {
                layout,
                va: scratch_va,
            }),
            arena_va: 0x2000_0020_0000,
            ib: Alloc {
                paddr: 0x10_0000,
                size: IB_BYTES,
            },
            kernarg_pool: Alloc {
                paddr: 0x30_0000,
                size: KERNARG_BYTES,
            },
            sig_va: 0x2000_0000_1000,
            timestamps: 0,
            uploaded: false,
            sdma: Vec::new(),
            sdma_wire: Vec::new(),
            copies: 0,
        };
        let arg = [Arg::Buffer { offset: 0, size: 4 }];
        for k in 0..3 {
            q.exec(KernelId(k), &arg, [1, 1, 1], [32, 1, 1]).unwrap();
        }
        let w = sh_writes(q.ib());
        // SH offsets = GC base 0x1260 + Linux GC 11.0.0 offset − 0x2C00: TMPRING_SIZE 0x1BB8 →
        // 0x218, DISPATCH_SCRATCH_BASE_LO 0x1BB0 → 0x210, USER_DATA_0 0x1BE0 → 0x240 (the GPU
        // model reads TMPRING_SIZE at byte 0xB860 and USER_DATA_0 at 0xB900: the same dwords).
        let get = |n: usize, off: u32| -> Vec<u32> {
            w.iter()
                .filter(|(o, _)| *o == off)
                .nth(n)
                .unwrap_or_else(|| panic!("dispatch {n}: no write of SH {off:#x}"))
                .1
                .clone()
        };
        let tmpring = 57 << 12 | 512;
        // Base = VA >> 8 = 0x20_0001_0000: LO 0x1_0000, HI 0x20.
        let (lo, hi) = (0x0001_0000, 0x20);
        let kernarg0 = 0x2000_0030_0000u64;
        let kernarg1 = kernarg0 + 256;
        let kernarg2 = kernarg0 + 512;
        // Descriptor: base lo, base hi | swizzle (bit 31), num_records all ones, word 3 =
        // FORMAT 20 << 12 | INDEX_STRIDE 2 << 21 | ADD_TID 1 << 23 | OOB_SELECT 2 << 28.
        let word3 = 0x14 << 12 | 2 << 21 | 1 << 23 | 2 << 28;
        assert_eq!(word3, 0x20C1_4000);
        assert_eq!(get(0, 0x218), vec![tmpring]);
        assert_eq!(get(0, 0x210), vec![lo, hi]);
        assert_eq!(
            get(0, 0x240),
            vec![
                0x0100_0000,
                0x8000_2000,
                0xFFFF_FFFF,
                word3,
                kernarg0 as u32,
                (kernarg0 >> 32) as u32
            ]
        );
        // Architected flat scratch only: TMPRING and base, no descriptor.
        assert_eq!(get(1, 0x218), vec![tmpring]);
        assert_eq!(get(1, 0x210), vec![lo, hi]);
        assert_eq!(
            get(1, 0x240),
            vec![kernarg1 as u32, (kernarg1 >> 32) as u32]
        );
        // No scratch: both zero.
        assert_eq!(get(2, 0x218), vec![0]);
        assert_eq!(get(2, 0x210), vec![0, 0]);
        assert_eq!(
            get(2, 0x240),
            vec![kernarg2 as u32, (kernarg2 >> 32) as u32]
        );
        // A kernel needing more than the area holds is refused, not dispatched.
        q.kernels.push(kernel("too big", 232, false));
        let e = q.exec(KernelId(3), &arg, [1, 1, 1], [32, 1, 1]);
        assert!(e.is_err());
    }
}
