//! Memory as an engine of the GPU sees it: virtual addresses through a hub's page tables (GC for
//! the command processor, SDMA and shaders; MM for the PSP), VRAM pages directly and SYSTEM pages
//! through the bridge's DMA windows (docs/hw/amd-gpu.md §3.2). Every access checks every page, so
//! an unmapped or out-of-window address is a [`MemFault`], never a host crash.
use super::vm::{walk, Context, Target, WalkError};
use super::vram::Vram;
use modelrt_asm24::emu::SystemBus;
use modelrt_rdna3::shader::{GpuMemory, MemFault};

/// The first fault of an access sequence, with the walk's reason (for the fault status registers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultRecord {
    pub fault: MemFault,
    /// `None`: the page translated but no bridge window covers the SYSTEM address.
    pub why: Option<WalkError>,
}

/// One engine's view of memory for the duration of a `service` call.
pub struct VmAccess<'a> {
    pub vram: &'a mut Vram,
    pub ctx: Context,
    pub bus: &'a mut dyn SystemBus,
    /// MC aperture `[base, top)`: addresses inside reach VRAM at `addr − base` without a walk
    /// (the PSP's view of the frame buffer); `None` for engines that only use page tables.
    pub fb: Option<(u64, u64)>,
    /// A VA page (4 KiB aligned) that faults whatever the tables say (fault injection).
    pub poisoned_page: Option<u64>,
    /// First fault seen.
    pub fault: Option<FaultRecord>,
}

impl VmAccess<'_> {
    fn translate(&self, va: u64, write: bool) -> Result<(Target, u64), FaultRecord> {
        let fault = MemFault { va, write };
        if self.poisoned_page == Some(va & !0xFFF) {
            return Err(FaultRecord {
                fault,
                why: Some(WalkError::Invalid),
            });
        }
        if let Some((base, top)) = self.fb {
            if va >= base && va < top {
                return Ok((Target::Vram(va - base), top - va));
            }
        }
        let t = walk(&self.ctx, self.vram, va, write).map_err(|why| FaultRecord {
            fault,
            why: Some(why),
        })?;
        Ok((t.target, t.remaining.min(0x1000 - (va & 0xFFF))))
    }

    fn access(
        &mut self,
        va: u64,
        len: usize,
        write: bool,
        mut f: impl FnMut(&mut Self, Target, usize, usize) -> bool,
    ) -> Result<(), MemFault> {
        let mut done = 0usize;
        while done < len {
            let a = va.wrapping_add(done as u64);
            let (target, left) = match self.translate(a, write) {
                Ok(t) => t,
                Err(rec) => return Err(self.note(rec)),
            };
            let n = (left.min((len - done) as u64)) as usize;
            let ok = match target {
                Target::Vram(p) => self.vram.contains(p, n) && f(self, target, done, n),
                Target::System(_) => f(self, target, done, n),
            };
            if !ok {
                return Err(self.note(FaultRecord {
                    fault: MemFault { va: a, write },
                    why: None,
                }));
            }
            done += n;
        }
        Ok(())
    }

    fn note(&mut self, rec: FaultRecord) -> MemFault {
        self.fault.get_or_insert(rec);
        rec.fault
    }

    /// Little-endian dword at `va`.
    pub fn read32(&mut self, va: u64) -> Result<u32, MemFault> {
        let mut b = [0u8; 4];
        self.read(va, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Store a little-endian dword at `va`.
    pub fn write32(&mut self, va: u64, value: u32) -> Result<(), MemFault> {
        self.write(va, &value.to_le_bytes())
    }
}

impl GpuMemory for VmAccess<'_> {
    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), MemFault> {
        let len = out.len();
        self.access(va, len, false, |s, target, done, n| {
            let dst = &mut out[done..done + n];
            match target {
                Target::Vram(p) => {
                    s.vram.read(p, dst);
                    true
                }
                Target::System(b) => s.bus.read(b, dst),
            }
        })
    }

    fn read_ahead(&mut self, va: u64, out: &mut [u8]) -> bool {
        let first = self.fault;
        let ok = self.read(va, out).is_ok();
        self.fault = first;
        ok
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        self.access(va, data.len(), true, |s, target, done, n| {
            let src = &data[done..done + n];
            match target {
                Target::Vram(p) => {
                    s.vram.write(p, src);
                    true
                }
                Target::System(b) => s.bus.write(b, src),
            }
        })
    }
}
