//! The SDMA 6.0 engine, queue 0: packets from the ring (pointers in bytes) moving real bytes
//! between VRAM and system pages through the GC hub's page tables (docs/hw/amd-gpu.md §8).
//! An unknown packet or a faulting address stops the queue and is reported; a poll that is not
//! yet satisfied is re-evaluated on the next service call (e.g. after a bulk OUT into SRAM).
use super::pm4::compare;
use super::state::{Engine, GpuError, GpuState};
use modelrt_asm24::emu::SystemBus;

pub const OP_NOP: u32 = 0;
pub const OP_COPY: u32 = 1;
pub const OP_WRITE: u32 = 2;
pub const OP_FENCE: u32 = 5;
pub const OP_TRAP: u32 = 6;
pub const OP_POLL_REGMEM: u32 = 8;
pub const OP_TIMESTAMP: u32 = 13;
pub const SUB_COPY_LINEAR: u32 = 0;
pub const SUB_TIMESTAMP_GET_GLOBAL: u32 = 2;

/// Bytes moved per step of a COPY_LINEAR.
const COPY_CHUNK: usize = 64 << 10;

/// The active SDMA queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SdmaQueue {
    pub ring_va: u64,
    pub ring_bytes: u64,
    /// Read/write pointers in bytes (free-running).
    pub rptr: u64,
    pub wptr: u64,
    pub doorbell: Option<u64>,
    /// Where the read pointer is written back (u64, bytes).
    pub rptr_addr: u64,
    pub hung: bool,
    pub blocked_since: Option<u64>,
}

enum Step {
    Done(u64),
    Blocked,
}

impl GpuState {
    /// Run the SDMA queue until it empties, blocks or hangs; `true` if it made progress.
    pub fn run_sdma(&mut self, bus: &mut dyn SystemBus) -> bool {
        if self.config.faults.hang_queue == Some(Engine::Sdma) {
            return false;
        }
        let mut progress = false;
        loop {
            let Some(q) = self.sdma.clone() else {
                return progress;
            };
            if q.hung || q.rptr >= q.wptr {
                return progress;
            }
            let at = |i: u64| q.ring_va + (q.rptr + 4 * i) % q.ring_bytes.max(4);
            self.clock_ns += self.config.packet_ns;
            match self.exec_sdma(bus, &at) {
                Ok(Step::Done(dwords)) => {
                    progress = true;
                    let rptr = q.rptr + 4 * dwords;
                    if let Some(s) = self.sdma.as_mut() {
                        s.rptr = rptr;
                        s.blocked_since = None;
                    }
                    if q.rptr_addr != 0 {
                        let _ = self.mem_write(bus, Engine::Sdma, q.rptr_addr, &rptr.to_le_bytes());
                    }
                }
                Ok(Step::Blocked) => {
                    let now = self.clock_ns;
                    let since = self
                        .sdma
                        .as_mut()
                        .map_or(now, |s| *s.blocked_since.get_or_insert(now));
                    if now.saturating_sub(since) > self.config.hang_ns {
                        self.hang_sdma(at(0), 0, "POLL_REGMEM never satisfied (watchdog)".into());
                    }
                    return progress;
                }
                Err((header, why)) => {
                    self.hang_sdma(at(0), header, why);
                    return progress;
                }
            }
        }
    }

    fn hang_sdma(&mut self, va: u64, header: u32, why: String) {
        if let Some(s) = self.sdma.as_mut() {
            s.hung = true;
        }
        self.errors.push(GpuError::QueueHang {
            engine: Engine::Sdma,
            va,
            header,
            why,
        });
    }

    fn sdma_dword(&mut self, bus: &mut dyn SystemBus, va: u64) -> Result<u32, String> {
        let mut b = [0u8; 4];
        self.mem_read(bus, Engine::Sdma, va, &mut b)
            .map_err(|f| format!("SDMA read faulted at {:#x}", f.va))?;
        Ok(u32::from_le_bytes(b))
    }

    /// Execute the packet at the read pointer; `at(i)` = address of its dword `i`.
    fn exec_sdma(
        &mut self,
        bus: &mut dyn SystemBus,
        at: &dyn Fn(u64) -> u64,
    ) -> Result<Step, (u32, String)> {
        let h = self.sdma_dword(bus, at(0)).map_err(|e| (0, e))?;
        self.exec_sdma_packet(bus, at, h).map_err(|e| (h, e))
    }

    fn exec_sdma_packet(
        &mut self,
        bus: &mut dyn SystemBus,
        at: &dyn Fn(u64) -> u64,
        h: u32,
    ) -> Result<Step, String> {
        let (op, sub) = (h & 0xFF, (h >> 8) & 0xFF);
        let avail = self.sdma.as_ref().map_or(0, |q| (q.wptr - q.rptr) / 4);
        let need = |n: u64| {
            if n > avail {
                Err(format!(
                    "SDMA packet op {op} of {n} dwords runs past the write pointer"
                ))
            } else {
                Ok(())
            }
        };
        let d = |s: &mut Self, bus: &mut dyn SystemBus, i: u64| s.sdma_dword(bus, at(i));
        let addr = |lo: u32, hi: u32| (hi as u64) << 32 | lo as u64;
        match (op, sub) {
            (OP_NOP, _) => {
                let n = 1 + ((h >> 16) & 0x3FFF) as u64;
                need(n)?;
                Ok(Step::Done(n))
            }
            (OP_COPY, SUB_COPY_LINEAR) => {
                need(7)?;
                let count = (d(self, bus, 1)? & 0x3FFF_FFFF) as u64 + 1;
                let src = addr(d(self, bus, 3)?, d(self, bus, 4)?);
                let dst = addr(d(self, bus, 5)?, d(self, bus, 6)?);
                let mut buf = vec![0u8; COPY_CHUNK.min(count as usize)];
                let mut done = 0u64;
                while done < count {
                    let n = (count - done).min(COPY_CHUNK as u64) as usize;
                    self.mem_read(bus, Engine::Sdma, src + done, &mut buf[..n])
                        .map_err(|f| format!("COPY_LINEAR source faulted at {:#x}", f.va))?;
                    self.mem_write(bus, Engine::Sdma, dst + done, &buf[..n])
                        .map_err(|f| format!("COPY_LINEAR destination faulted at {:#x}", f.va))?;
                    done += n as u64;
                }
                Ok(Step::Done(7))
            }
            (OP_WRITE, 0) => {
                need(4)?;
                let dst = addr(d(self, bus, 1)?, d(self, bus, 2)?);
                let ndw = (d(self, bus, 3)? & 0xF_FFFF) as u64 + 1;
                need(4 + ndw)?;
                for i in 0..ndw {
                    let v = d(self, bus, 4 + i)?;
                    self.mem_write(bus, Engine::Sdma, dst + 4 * i, &v.to_le_bytes())
                        .map_err(|f| format!("WRITE faulted at {:#x}", f.va))?;
                }
                Ok(Step::Done(4 + ndw))
            }
            (OP_FENCE, _) => {
                need(4)?;
                let dst = addr(d(self, bus, 1)?, d(self, bus, 2)?);
                let v = d(self, bus, 3)?;
                self.mem_write(bus, Engine::Sdma, dst, &v.to_le_bytes())
                    .map_err(|f| format!("FENCE faulted at {:#x}", f.va))?;
                Ok(Step::Done(4))
            }
            (OP_TRAP, _) => {
                need(2)?;
                self.traps += 1;
                Ok(Step::Done(2))
            }
            (OP_POLL_REGMEM, _) => {
                need(6)?;
                let function = (h >> 28) & 7;
                let memory = h & (1 << 31) != 0;
                let (lo, hi, reference, mask) = (
                    d(self, bus, 1)?,
                    d(self, bus, 2)?,
                    d(self, bus, 3)?,
                    d(self, bus, 4)?,
                );
                let value = if memory {
                    self.sdma_dword(bus, addr(lo & !3, hi))?
                } else {
                    self.reg_read((lo & 0x3FFFF) as u64 * 4)
                };
                match compare(function, value & mask, reference) {
                    Some(true) => Ok(Step::Done(6)),
                    Some(false) => Ok(Step::Blocked),
                    None => Err(format!("POLL_REGMEM function {function}")),
                }
            }
            (OP_TIMESTAMP, SUB_TIMESTAMP_GET_GLOBAL) => {
                need(3)?;
                let dst = addr(d(self, bus, 1)?, d(self, bus, 2)?);
                let t = self.timestamp();
                self.mem_write(bus, Engine::Sdma, dst, &t.to_le_bytes())
                    .map_err(|f| format!("TIMESTAMP faulted at {:#x}", f.va))?;
                Ok(Step::Done(3))
            }
            _ => Err(format!(
                "unsupported SDMA packet op {op} sub-op {sub} (header {h:#010x})"
            )),
        }
    }
}
