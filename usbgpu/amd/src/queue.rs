//! [`AmdQueue`]: a recorded schedule — a PM4 indirect buffer of dispatches, waits, signals and
//! timestamps with its kernargs, plus the SDMA program of its arena copies — and the signal-page
//! layout it writes to (docs/hw/amd-driver.md §5). [`super::device::AmdDevice`] uploads and submits it.
use super::device::invalid;
use super::error::AmdError;
use super::mem::Alloc;
use super::pm4::{self, Pm4};
use super::regs;
use super::scratch::{Scratch, SCRATCH_RSRC_WORD3};
use modelrt_hal::device::{Arg, KernelId, Queue};

/// Timestamps a queue may record.
pub const MAX_TIMESTAMPS: usize = 15;
/// Signal block: submission number (u64) then the timestamps.
pub(super) const SIG_BYTES: usize = 8 * (1 + MAX_TIMESTAMPS);
/// Timeline word written by [`Queue::signal`] (inside the signal page, after the block).
const TIMELINE: u64 = 0x100;
/// Copy hand-off words: compute → SDMA ("dispatches before copy k are done") and SDMA → compute
/// ("copy k is done"). Each submission leaves both at 0 for the next one: SDMA clears the first after
/// its last poll, the indirect buffer clears the second after its last wait (so the host writes
/// neither per step; docs/hw/amd-driver.md §5); the host clears them only after a failed submission.
pub(super) const SYNC_COMPUTE: u64 = 0x110;
/// SDMA → compute.
const SYNC_SDMA: u64 = 0x118;
/// Dwords of the SDMA FENCE that ends each copy.
const SDMA_FENCE_DWORDS: usize = 4;
/// Indirect-buffer and kernarg capacity per queue.
pub const IB_BYTES: u64 = 1 << 20;
/// Kernarg pool per queue.
pub const KERNARG_BYTES: u64 = 1 << 20;
/// Kernarg alignment per dispatch.
const KERNARG_ALIGN: usize = 256;

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

/// A recorded PM4 schedule.
pub struct AmdQueue {
    pub(super) pm4: Pm4,
    pub(super) kernargs: Vec<u8>,
    pub(super) kernels: Vec<LoadedKernel>,
    pub(super) scratch: Option<Scratch>,
    pub(super) arena_va: u64,
    pub(super) ib: Alloc,
    pub(super) kernarg_pool: Alloc,
    pub(super) sig_va: u64,
    pub(super) timestamps: usize,
    pub(super) uploaded: bool,
    /// SDMA program of the schedule's arena copies (empty when there are none).
    pub(super) sdma: Vec<u32>,
    pub(super) sdma_wire: Vec<u8>,
    pub(super) copies: u32,
    /// Whether [`Queue::signal`] has recorded the hand-off words' reset.
    pub(super) sync_reset: bool,
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
        if self.copies > 0 && !self.sync_reset {
            // Leave both hand-off words at 0 for the next submission. SDMA: after its last poll
            // (compute writes `to_sdma` no more) and before its last fence (so the reset is done
            // when compute sees that fence). Compute: after its last wait (SDMA writes `from_sdma`
            // no more), before the end-of-run signal.
            let fence_at = self.sdma.len() - SDMA_FENCE_DWORDS;
            let fence: Vec<u32> = self.sdma.drain(fence_at..).collect();
            super::sdma::write64(&mut self.sdma, self.sig_va + SYNC_COMPUTE, 0);
            self.sdma.extend_from_slice(&fence);
            self.pm4.write_data(self.sig_va + SYNC_SDMA, &[0, 0]);
            self.sdma_wire.reserve(4 * self.sdma.len());
            self.sync_reset = true;
        }
        self.pm4
            .release_mem(self.sig_va + TIMELINE, value, pm4::DATA_SEL_64);
        self.check_room()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::{Ip, IpTable};
    use crate::scratch::tests::navi31_gc;
    use crate::scratch::ScratchLayout;

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
            sync_reset: false,
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
