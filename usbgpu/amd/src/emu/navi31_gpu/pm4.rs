//! The compute queue's PM4 processor (MEC 1 pipe 0 queue 0): type-3 packets from the ring and
//! from indirect buffers, register state for dispatches, fences, waits (docs/hw/amd-gpu.md §7).
//! Anything it cannot execute stops the queue ("hung"): CP_STAT shows busy, the read pointer stays
//! on the packet, and the host side gets a [`GpuError::QueueHang`].
use super::regs::*;
use super::state::{Engine, GpuError, GpuState};
use modelrt_asm24::emu::SystemBus;
use modelrt_rdna3::shader::DispatchRequest;

pub const OP_NOP: u32 = 0x10;
pub const OP_DISPATCH_DIRECT: u32 = 0x15;
pub const OP_WRITE_DATA: u32 = 0x37;
pub const OP_WAIT_REG_MEM: u32 = 0x3C;
pub const OP_INDIRECT_BUFFER: u32 = 0x3F;
pub const OP_EVENT_WRITE: u32 = 0x46;
pub const OP_RELEASE_MEM: u32 = 0x49;
pub const OP_ACQUIRE_MEM: u32 = 0x58;
pub const OP_SET_SH_REG: u32 = 0x76;
pub const OP_SET_UCONFIG_REG: u32 = 0x79;

/// Register-space bases of SET_SH_REG / SET_UCONFIG_REG (dword indices).
const SH_BASE: u64 = 0x2C00;
const UCONFIG_BASE: u64 = 0xC000;
/// Largest packet the processor accepts (the 14-bit count field allows more; nothing legitimate
/// in a compute stream is this long).
const MAX_PACKET_DWORDS: usize = 1024;

/// An indirect buffer being executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ib {
    pub va: u64,
    pub dwords: u64,
    pub pos: u64,
}

/// The active compute HQD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComputeQueue {
    pub ring_va: u64,
    pub ring_dwords: u64,
    /// Read/write pointers in dwords (free-running; the ring index is `ptr % ring_dwords`).
    pub rptr: u64,
    pub wptr: u64,
    /// BAR2 byte offset of its doorbell.
    pub doorbell: Option<u64>,
    pub rptr_report: u64,
    pub ib: Option<Ib>,
    pub hung: bool,
    /// Emulated time the queue started waiting on the current packet.
    pub blocked_since: Option<u64>,
}

/// What one packet did.
enum Step {
    Done,
    Blocked,
    Enter(Ib),
}

type Hang = String;

impl GpuState {
    /// Run the compute queue until it empties, blocks or hangs; `true` if it made progress.
    pub fn run_compute(&mut self, bus: &mut dyn SystemBus) -> bool {
        let Some(q) = self.compute.as_ref() else {
            return false;
        };
        if q.hung || self.config.faults.hang_queue == Some(Engine::Compute) {
            return false;
        }
        let mut progress = false;
        loop {
            let Some(q) = self.compute.clone() else {
                return progress;
            };
            let (va, in_ib) = match q.ib {
                Some(ib) if ib.pos < ib.dwords => (ib.va + 4 * ib.pos, true),
                Some(_) => {
                    self.set_ib(None);
                    continue;
                }
                None if q.rptr < q.wptr => (q.ring_va + 4 * (q.rptr % q.ring_dwords.max(1)), false),
                None => return progress,
            };
            let packet = match self.fetch_packet(bus, &q, va, in_ib) {
                Ok(p) => p,
                Err(why) => {
                    self.hang_compute(va, 0, why);
                    return progress;
                }
            };
            self.clock_ns += self.config.packet_ns;
            match self.exec_pm4(bus, &packet, in_ib) {
                Ok(Step::Blocked) => {
                    let now = self.clock_ns;
                    let since = self
                        .compute
                        .as_mut()
                        .map_or(now, |q| *q.blocked_since.get_or_insert(now));
                    if now.saturating_sub(since) > self.config.hang_ns {
                        self.hang_compute(va, packet[0], "WAIT_REG_MEM never satisfied".into());
                    }
                    return progress;
                }
                Ok(step) => {
                    progress = true;
                    self.advance_compute(bus, packet.len() as u64, in_ib);
                    if let Step::Enter(ib) = step {
                        self.set_ib(Some(ib));
                    }
                }
                Err(why) => {
                    self.hang_compute(va, packet[0], why);
                    return progress;
                }
            }
        }
    }

    fn set_ib(&mut self, ib: Option<Ib>) {
        if let Some(q) = self.compute.as_mut() {
            q.ib = ib;
        }
    }

    fn advance_compute(&mut self, bus: &mut dyn SystemBus, n: u64, in_ib: bool) {
        let Some(q) = self.compute.as_mut() else {
            return;
        };
        q.blocked_since = None;
        if in_ib {
            if let Some(ib) = q.ib.as_mut() {
                ib.pos += n;
            }
            return;
        }
        q.rptr += n;
        let (report, rptr) = (q.rptr_report, q.rptr);
        if report != 0 {
            let _ = self.mem_write(bus, Engine::Compute, report, &(rptr as u32).to_le_bytes());
        }
    }

    fn hang_compute(&mut self, va: u64, header: u32, why: String) {
        if let Some(q) = self.compute.as_mut() {
            q.hung = true;
        }
        self.errors.push(GpuError::QueueHang {
            engine: Engine::Compute,
            va,
            header,
            why,
        });
    }

    /// Read the whole packet whose header is at `va` (ring wrap handled for ring packets).
    fn fetch_packet(
        &mut self,
        bus: &mut dyn SystemBus,
        q: &ComputeQueue,
        va: u64,
        in_ib: bool,
    ) -> Result<Vec<u32>, Hang> {
        let read = |s: &mut Self, bus: &mut dyn SystemBus, i: u64| -> Result<u32, Hang> {
            let at = if in_ib {
                va + 4 * i
            } else {
                q.ring_va + 4 * ((q.rptr + i) % q.ring_dwords.max(1))
            };
            let mut b = [0u8; 4];
            s.mem_read(bus, Engine::Compute, at, &mut b)
                .map_err(|f| format!("packet fetch faulted at {:#x}", f.va))?;
            Ok(u32::from_le_bytes(b))
        };
        let h = read(self, bus, 0)?;
        let len = match h >> 30 {
            3 => ((h >> 16) & 0x3FFF) as usize + 2,
            2 => 1,
            t => return Err(format!("type-{t} packet header {h:#010x}")),
        };
        if len > MAX_PACKET_DWORDS {
            return Err(format!("packet of {len} dwords"));
        }
        let available = if in_ib {
            q.ib.map_or(0, |ib| ib.dwords - ib.pos)
        } else {
            q.wptr - q.rptr
        };
        if len as u64 > available {
            return Err(format!(
                "packet of {len} dwords runs past the write pointer"
            ));
        }
        let mut p = vec![h];
        for i in 1..len as u64 {
            p.push(read(self, bus, i)?);
        }
        Ok(p)
    }

    /// Execute one packet.
    fn exec_pm4(&mut self, bus: &mut dyn SystemBus, p: &[u32], in_ib: bool) -> Result<Step, Hang> {
        if p[0] >> 30 == 2 {
            return Ok(Step::Done);
        }
        let op = (p[0] >> 8) & 0xFF;
        let addr = |lo: u32, hi: u32| (hi as u64) << 32 | (lo & !3) as u64;
        match op {
            OP_NOP | OP_ACQUIRE_MEM => Ok(Step::Done),
            OP_SET_SH_REG | OP_SET_UCONFIG_REG => {
                let base = if op == OP_SET_SH_REG {
                    SH_BASE
                } else {
                    UCONFIG_BASE
                };
                let first = base + (p[1] & 0xFFFF) as u64;
                for (i, v) in p[2..].iter().enumerate() {
                    self.reg_write((first + i as u64) * 4, *v);
                }
                Ok(Step::Done)
            }
            OP_DISPATCH_DIRECT if p.len() >= 5 => self.dispatch(bus, [p[1], p[2], p[3]], p[4]),
            OP_EVENT_WRITE => Ok(Step::Done),
            OP_RELEASE_MEM if p.len() >= 8 => {
                let data_sel = p[2] >> 29;
                let at = addr(p[3], p[4]);
                let value = (p[6] as u64) << 32 | p[5] as u64;
                let bytes: Vec<u8> = match data_sel {
                    0 => return Ok(Step::Done),
                    1 => p[5].to_le_bytes().to_vec(),
                    2 => value.to_le_bytes().to_vec(),
                    3 => self.timestamp().to_le_bytes().to_vec(),
                    s => return Err(format!("RELEASE_MEM data_sel {s}")),
                };
                self.mem_write(bus, Engine::Compute, at, &bytes)
                    .map_err(|f| format!("RELEASE_MEM write faulted at {:#x}", f.va))?;
                Ok(Step::Done)
            }
            OP_WAIT_REG_MEM if p.len() >= 7 => self.wait_reg_mem(bus, p),
            OP_WRITE_DATA if p.len() >= 4 => {
                let dst_sel = (p[1] >> 8) & 0xF;
                let no_incr = p[1] & (1 << 16) != 0;
                match dst_sel {
                    0 => {
                        for (i, v) in p[4..].iter().enumerate() {
                            let reg = p[2] as u64 + if no_incr { 0 } else { i as u64 };
                            self.reg_write(reg * 4, *v);
                        }
                    }
                    5 => {
                        let at = addr(p[2], p[3]);
                        for (i, v) in p[4..].iter().enumerate() {
                            let a = at + if no_incr { 0 } else { 4 * i as u64 };
                            self.mem_write(bus, Engine::Compute, a, &v.to_le_bytes())
                                .map_err(|f| format!("WRITE_DATA faulted at {:#x}", f.va))?;
                        }
                    }
                    d => return Err(format!("WRITE_DATA dst_sel {d}")),
                }
                Ok(Step::Done)
            }
            OP_INDIRECT_BUFFER if p.len() >= 4 => {
                if in_ib {
                    return Err("INDIRECT_BUFFER inside an indirect buffer".into());
                }
                if p[3] & (1 << 23) == 0 {
                    return Err("INDIRECT_BUFFER without the valid bit".into());
                }
                Ok(Step::Enter(Ib {
                    va: addr(p[1], p[2]),
                    dwords: (p[3] & 0xF_FFFF) as u64,
                    pos: 0,
                }))
            }
            _ => Err(format!(
                "unsupported PM4 opcode {op:#x} ({} dwords)",
                p.len()
            )),
        }
    }

    fn wait_reg_mem(&mut self, bus: &mut dyn SystemBus, p: &[u32]) -> Result<Step, Hang> {
        let function = p[1] & 7;
        let memory = (p[1] >> 4) & 3 == 1;
        let write_then_wait = (p[1] >> 6) & 3 == 1;
        let (reference, mask) = (p[4], p[5]);
        let value = if memory {
            let at = (p[3] as u64) << 32 | (p[2] & !3) as u64;
            let mut b = [0u8; 4];
            self.mem_read(bus, Engine::Compute, at, &mut b)
                .map_err(|f| format!("WAIT_REG_MEM read faulted at {:#x}", f.va))?;
            u32::from_le_bytes(b)
        } else {
            if write_then_wait {
                self.reg_write((p[2] & 0x3FFFF) as u64 * 4, reference);
            }
            let poll = if write_then_wait { p[3] } else { p[2] };
            self.reg_read((poll & 0x3FFFF) as u64 * 4)
        };
        match compare(function, value & mask, reference) {
            Some(true) => Ok(Step::Done),
            Some(false) => Ok(Step::Blocked),
            None => Err(format!("WAIT_REG_MEM function {function}")),
        }
    }

    /// DISPATCH_DIRECT: build the request from the COMPUTE_* registers and run the executor.
    fn dispatch(
        &mut self,
        bus: &mut dyn SystemBus,
        grid: [u32; 3],
        initiator: u32,
    ) -> Result<Step, Hang> {
        let r = |s: &Self, o: u64| s.regs.get(&o).copied().unwrap_or(0);
        let mut user_data = [0u32; 16];
        for (i, u) in user_data.iter_mut().enumerate() {
            *u = r(self, COMPUTE_USER_DATA_0 + 4 * i as u64);
        }
        let req = DispatchRequest {
            code_va: ((r(self, COMPUTE_PGM_HI) as u64) << 32 | r(self, COMPUTE_PGM_LO) as u64) << 8,
            pgm_rsrc1: r(self, COMPUTE_PGM_RSRC1),
            pgm_rsrc2: r(self, COMPUTE_PGM_RSRC2),
            pgm_rsrc3: r(self, COMPUTE_PGM_RSRC3),
            user_data,
            workgroup_size: [0, 1, 2].map(|i| r(self, COMPUTE_NUM_THREAD_X + 4 * i)),
            start: [0, 1, 2].map(|i| r(self, COMPUTE_START_X + 4 * i)),
            grid,
            initiator,
            tmpring_size: r(self, COMPUTE_TMPRING_SIZE),
        };
        self.regs.insert(COMPUTE_DISPATCH_INITIATOR, initiator);
        let mut mem = GpuState::gc_view(
            &mut self.vram,
            self.gc_ctx,
            bus,
            self.config.faults.poisoned_page,
        );
        let result = self.executor.dispatch(&req, &mut mem);
        let fault = mem.fault;
        if let Some(rec) = fault {
            self.record_fault(Engine::Compute, rec);
        }
        match result {
            Ok(()) => Ok(Step::Done),
            Err(e) => {
                let why = e.to_string();
                self.errors.push(GpuError::Dispatch(e));
                Err(format!("dispatch of {:#x} failed: {why}", req.code_va))
            }
        }
    }
}

/// The compare functions of WAIT_REG_MEM / POLL_REGMEM (0 always, 1 <, 2 <=, 3 ==, 4 !=, 5 >=,
/// 6 >); `None` for the reserved code 7.
pub fn compare(function: u32, value: u32, reference: u32) -> Option<bool> {
    Some(match function {
        0 => true,
        1 => value < reference,
        2 => value <= reference,
        3 => value == reference,
        4 => value != reference,
        5 => value >= reference,
        6 => value > reference,
        _ => return None,
    })
}
