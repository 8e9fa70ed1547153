//! [`AmdDevice`]: the hal [`Device`] over a booted AM driver. The arena lives in VRAM (identity
//! mapped, so an arena offset is `arena.va() + offset`); kernels are loaded as their code object's
//! image and dispatched at `entry_offset`; a recorded [`AmdQueue`] is a PM4 indirect buffer with its
//! kernargs in VRAM, uploaded on the first submit. Each [`Device::submit`] writes two packets to the
//! compute ring (INDIRECT_BUFFER + RELEASE_MEM of the submission number), rings one doorbell and
//! polls the signal block — a USB transfer count independent of the number of kernels — and never
//! allocates. Inputs/outputs up to [`BAR_COPY_MAX`] go through BAR0 streams (2 transfers each);
//! larger ones through the SDMA copy pipelines ([`super::transfer`]). Once a queue is recorded,
//! small dword-aligned uploads (a step's inputs) are held back and written by `WRITE_DATA` packets
//! in the next submission's ring write ([`super::inline`]): no transfer of their own. The recorded
//! schedule is [`super::queue`], scratch sizing [`super::scratch`]; the per-step transfer budget is
//! docs/hw/amd-driver.md §5.2.
use super::boot::Am;
use super::bus::{poll_until, DEFAULT_TIMEOUT};
use super::code_object::loaded_image;
use super::error::AmdError;
use super::inline::Inline;
use super::mem::Alloc;
use super::pm4::{self, Pm4};
pub use super::queue::{AmdQueue, LoadedKernel, IB_BYTES, KERNARG_BYTES, MAX_TIMESTAMPS};
use super::queue::{SIG_BYTES, SYNC_COMPUTE};
use super::regs;
use super::scratch::{Scratch, ScratchLayout, KCP_FLAT_SCRATCH_INIT, KCP_PRIVATE_SEGMENT_BUFFER};
use super::transfer::CopyEngine;
use modelrt_hal::device::{Device, KernelId, KernelImage, SubmitTiming};
use modelrt_hal::target::{KernelMeta, ParamKind, Target};
use modelrt_hal::usb::UsbTransport;

/// Host copies up to this size use one BAR0 stream (1 control + 1 bulk transfer, the bridge's 4 MiB
/// bulk buffer); larger ones the SDMA pipelines (≥ 2 control transfers per 256 KiB chunk;
/// docs/hw/amd-driver.md §5.2).
pub const BAR_COPY_MAX: usize = 4 << 20;
/// Load-time uploads are packed into groups of this many bytes (16 copy-in chunks) before they go
/// through the copy-in pipeline as one SDMA submission; larger ones are streamed from the caller's
/// bytes directly (docs/hw/amd-driver.md §6.1).
pub const LOAD_GROUP: usize = 16 * super::transfer::CHUNK;

/// GPU timestamp clock (RELEASE_MEM data_sel 3): 100 MHz → 10 ns per tick.
pub const TIMESTAMP_NS: u64 = 10;

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
    /// Uploads held back for the next submission (run phase only).
    inline: Inline,
    /// The compute ring image of one submission (capacity fixed at creation).
    ring: Vec<u32>,
    /// Queues created so far: uploads are held back only once one exists.
    queues: u32,
    /// A submission failed: the copy hand-off words may be stale, clear them before the next one.
    sync_dirty: bool,
    /// Load-time uploads go through the copy-in pipeline, packed ([`AmdDevice::stream_loads`]).
    load: Option<LoadStream>,
    clock: Box<dyn Fn() -> u64 + Send>,
    diagnose: Option<Box<dyn Fn() -> Option<String> + Send>>,
}

pub(super) fn invalid(step: &'static str, what: String) -> AmdError {
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
            inline: Inline::new(),
            ring: Vec::with_capacity(super::inline::RING_DWORDS_MAX),
            queues: 0,
            sync_dirty: false,
            load: None,
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

    /// From now until the first queue is created, send uploads (the bundle's weights) through the
    /// copy-in pipeline: small ones packed back to back into [`LOAD_GROUP`]-byte groups, large ones
    /// straight from the caller's bytes (a mapped bundle is read once, never copied whole);
    /// `progress` is told the bytes sent so far after every 256 KiB chunk. The data has reached
    /// VRAM when the next operation other than an upload returns (that operation drains the
    /// pipeline first; an error of the copy surfaces there).
    pub fn stream_loads(&mut self, progress: Option<Box<dyn FnMut(u64) + Send>>) {
        self.load = Some(LoadStream {
            staging: Vec::with_capacity(LOAD_GROUP),
            frags: Vec::new(),
            sent: 0,
            progress,
        });
    }

    /// Host → arena copy through a chosen path (for `modelrt usb copy-bench`; `upload` picks by
    /// size, §5): `offset` and the length must be dword multiples for [`CopyPath::Stream`].
    pub fn upload_via(&mut self, path: CopyPath, offset: u64, data: &[u8]) -> Result<(), AmdError> {
        let pa = self.range("upload", offset, data.len())?;
        self.flush_inline("upload")?;
        match path {
            CopyPath::Stream => self.am.bus.vram_write("upload", pa, data),
            CopyPath::Pipeline => self.stream_frags(&[(super::mem::VA_BASE + pa, data)]),
        }
    }

    /// Arena → host copy through a chosen path (as [`AmdDevice::upload_via`]).
    pub fn download_via(
        &mut self,
        path: CopyPath,
        offset: u64,
        out: &mut [u8],
    ) -> Result<(), AmdError> {
        let pa = self.range("download", offset, out.len())?;
        self.flush_inline("download")?;
        match path {
            CopyPath::Stream => self.am.bus.vram_read("download", pa, out),
            CopyPath::Pipeline => {
                let mut q = self
                    .am
                    .sdma
                    .take()
                    .ok_or_else(|| invalid("copy-out", "no SDMA queue".into()))?;
                let va = super::mem::VA_BASE + pa;
                let r = self.copies.copy_out(&mut self.am.bus, &mut q, va, out);
                self.am.sdma = Some(q);
                r
            }
        }
    }

    /// Bytes the load stream has sent so far.
    pub fn loaded_bytes(&self) -> u64 {
        self.load.as_ref().map_or(0, |l| l.sent)
    }

    /// The copy engine (e.g. to replay tinygrad's copy-in protocol for a comparison).
    pub fn copy_engine(&mut self) -> &mut CopyEngine {
        &mut self.copies
    }

    /// Send `frags` (destination VA, bytes) through the copy-in pipeline now.
    fn stream_frags(&mut self, frags: &[(u64, &[u8])]) -> Result<(), AmdError> {
        let Some(mut q) = self.am.sdma.take() else {
            return Err(invalid("copy-in", "no SDMA queue".into()));
        };
        let load = &mut self.load;
        let mut sent = |n: u64| {
            if let Some(l) = load.as_mut() {
                l.sent += n;
                let total = l.sent;
                if let Some(p) = l.progress.as_mut() {
                    p(total);
                }
            }
        };
        let r = self
            .copies
            .copy_in_frags(&mut self.am.bus, &mut q, frags, &mut sent);
        self.am.sdma = Some(q);
        r
    }

    /// Send the load stream's packed group.
    fn flush_load(&mut self) -> Result<(), AmdError> {
        let Some(l) = self.load.as_mut() else {
            return Ok(());
        };
        if l.frags.is_empty() {
            return Ok(());
        }
        let staging = std::mem::take(&mut l.staging);
        let frags = std::mem::take(&mut l.frags);
        let pieces: Vec<(u64, &[u8])> = frags
            .iter()
            .map(|&(va, start, len)| (va, &staging[start..start + len]))
            .collect();
        let r = self.stream_frags(&pieces);
        drop(pieces);
        if let Some(l) = self.load.as_mut() {
            l.staging = staging;
            l.staging.clear();
            l.frags = frags;
            l.frags.clear();
        }
        r
    }

    /// A load-time upload into the stream.
    fn stream_upload(&mut self, pa: u64, data: &[u8]) -> Result<(), AmdError> {
        let va = super::mem::VA_BASE + pa;
        if data.len() >= LOAD_GROUP {
            self.flush_load()?;
            return self.stream_frags(&[(va, data)]);
        }
        let full = self
            .load
            .as_ref()
            .is_some_and(|l| l.staging.len() + data.len() > LOAD_GROUP);
        if full {
            self.flush_load()?;
        }
        if let Some(l) = self.load.as_mut() {
            let start = l.staging.len();
            l.staging.extend_from_slice(data);
            l.frags.push((va, start, data.len()));
        }
        Ok(())
    }

    /// Write the held-back uploads through BAR0 (before anything that could observe VRAM), and
    /// drain the load stream.
    fn flush_inline(&mut self, step: &'static str) -> Result<(), AmdError> {
        self.flush_load().map_err(|e| self.diagnosed(e))?;
        if self.inline.is_empty() {
            return Ok(());
        }
        let r = self.inline.flush(&mut self.am.bus, step);
        self.inline.clear();
        r
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

    /// Add what an emulated GPU (its device model) says about a failure to submit errors.
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
                    what: format!("{e} [the GPU device model reports: {model}{named}]"),
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
        self.flush_inline("fini")?;
        self.am.fini()
    }
}

/// How a host copy travels (docs/hw/amd-driver.md §5, §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyPath {
    /// BAR0 0xF0 streams of up to 4 MiB (1 control + 1 bulk transfer each).
    Stream,
    /// The SDMA pipelines through the bridge SRAM windows.
    Pipeline,
}

/// The load stream's packed group: destination VA, start and length in `staging`.
struct LoadStream {
    staging: Vec<u8>,
    frags: Vec<(u64, usize, usize)>,
    sent: u64,
    progress: Option<Box<dyn FnMut(u64) + Send>>,
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
        if self.queues > 0 && self.inline.hold(pa, data) {
            return Ok(());
        }
        if self.queues == 0 && self.load.is_some() && self.am.sdma.is_some() {
            let r = self.stream_upload(pa, data);
            return r.map_err(|e| self.diagnosed(e));
        }
        self.flush_inline("upload")?;
        let r = self.write_vram("upload", pa, data);
        r.map_err(|e| self.diagnosed(e))
    }

    fn download(&mut self, offset: u64, out: &mut [u8]) -> Result<(), AmdError> {
        let pa = self.range("download", offset, out.len())?;
        self.flush_inline("download")?;
        let r = self.read_vram("download", pa, out);
        r.map_err(|e| self.diagnosed(e))
    }

    fn load_kernel(&mut self, k: &KernelImage<'_>) -> Result<KernelId, AmdError> {
        let step = "kernel load";
        self.flush_inline(step)?;
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
        self.flush_inline("create queue")?;
        self.queues += 1;
        // The load is over (later uploads are inputs): give the group's staging back.
        if let Some(l) = self.load.as_mut() {
            l.staging = Vec::new();
        }
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
            sync_reset: false,
        })
    }

    fn submit(&mut self, q: &mut AmdQueue) -> Result<SubmitTiming, AmdError> {
        let t0 = (self.clock)();
        let r = self.submit_inner(q, t0);
        if r.is_err() {
            // What the GPU left behind is unknown: held-back writes are dropped with the failed
            // step, and the copy hand-off words are cleared by the host next time.
            self.inline.clear();
            self.sync_dirty = true;
        }
        r
    }

    fn now_ns(&self) -> u64 {
        (self.clock)()
    }
}

impl<T: UsbTransport> AmdDevice<T> {
    /// The body of [`Device::submit`].
    fn submit_inner(&mut self, q: &mut AmdQueue, t0: u64) -> Result<SubmitTiming, AmdError> {
        let step = "submit";
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
            // Arena copies run on SDMA, handed off through two words the previous submission left
            // at 0 (docs/hw/amd-driver.md §5); only after a failure does the host clear them.
            if self.sync_dirty {
                self.am
                    .bus
                    .vram_write(step, self.sig.paddr + SYNC_COMPUTE, &[0u8; 16])?;
                self.sync_dirty = false;
            }
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
        // The held-back uploads (WRITE_DATA), then INDIRECT_BUFFER + RELEASE_MEM of the submission
        // number, encoded into the preallocated ring image.
        let mut ib_packet = [0u32; pm4::INDIRECT_BUFFER_DWORDS];
        let mut release = [0u32; pm4::RELEASE_MEM_DWORDS];
        pm4::write_indirect_buffer(&mut ib_packet, ib, q.pm4.dw.len() as u32);
        pm4::write_release_mem(&mut release, sig, self.epoch, pm4::DATA_SEL_64);
        self.ring.clear();
        self.inline.encode(&mut self.ring);
        self.inline.clear();
        self.ring.extend_from_slice(&ib_packet);
        self.ring.extend_from_slice(&release);
        let mut cq = self
            .am
            .compute
            .take()
            .ok_or_else(|| invalid(step, "no compute queue".into()))?;
        let r = cq.submit(&mut self.am.bus, &self.ring);
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
}
