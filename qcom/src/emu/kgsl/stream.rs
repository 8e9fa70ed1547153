//! The PM4 validator: decodes one IB packet by packet, checks each packet against the rules of
//! docs/hw/adreno-kgsl-pm4.md §13 (order of marker, idle, barrier, state loads, dispatch and its closing
//! flush), performs the CP's own memory side effects (signals, timestamps) and checks waits.
use super::{KgslModel, R};
use crate::a6xx::regs::{self, load_state as ls};
use crate::pm4::{self, event, op, Header};

#[derive(Default, Clone, Copy)]
pub(super) struct Load {
    pub(super) addr: u64,
    pub(super) units: u32,
}

#[derive(Default)]
pub(super) struct PerDispatch {
    pub(super) marker: bool,
    pub(super) idle: bool,
    pub(super) consts: Option<Load>,
    pub(super) shader: Option<Load>,
    pub(super) tex: Option<Load>,
    pub(super) samp: Option<Load>,
    pub(super) uav: Option<Load>,
    /// UBO descriptors (ST6_UBO, docs/hw/adreno-kgsl-pm4.md §16.12).
    pub(super) ubo: Option<Load>,
}

impl KgslModel {
    pub(super) fn r(&self, r: u32) -> u32 {
        self.regs.get(&r).copied().unwrap_or(0)
    }

    pub(super) fn r64(&self, r: u32) -> u64 {
        self.r(r) as u64 | (self.r(r + 1) as u64) << 32
    }

    /// Decode, validate and perform one IB. Returns Ok(false) when the injected hang stopped it.
    pub(super) fn run_ib(&mut self, dw: &[u32]) -> R<bool> {
        let mut st = PerDispatch::default();
        let mut barrier_seen = false;
        let mut expect_flush_after_exec = false;
        for p in pm4::packets(dw) {
            let p = p.map_err(|e| e.to_string())?;
            self.stats.packets += 1;
            if expect_flush_after_exec {
                let ok = matches!(
                    p.header,
                    Header::Type7 {
                        opcode: op::CP_EVENT_WRITE,
                        count: 4
                    }
                ) && p.payload[0] == event::CACHE_FLUSH_TS
                    && self.is_dummy(p.payload[1] as u64 | (p.payload[2] as u64) << 32);
                if !ok {
                    return Err(format!(
                        "dword {}: dispatch not followed by a CACHE_FLUSH_TS event into the dummy object",
                        p.at
                    ));
                }
                expect_flush_after_exec = false;
            }
            match p.header {
                Header::Type4 { reg, .. } => {
                    for (i, v) in p.payload.iter().enumerate() {
                        self.regs.insert(reg + i as u32, *v);
                    }
                    if reg == regs::SP_UPDATE_CNTL && !st.marker {
                        return Err(format!(
                            "dword {}: SP_UPDATE_CNTL before CP_SET_MARKER(RM6_COMPUTE)",
                            p.at
                        ));
                    }
                    if reg == regs::SP_CS_NDRANGE_0 && !st.idle {
                        return Err(format!(
                            "dword {}: NDRANGE programmed without CP_WAIT_FOR_IDLE",
                            p.at
                        ));
                    }
                }
                Header::Type7 { opcode, count } => {
                    let d = p.payload;
                    let n = count as usize;
                    let at = p.at;
                    match opcode {
                        op::CP_WAIT_FOR_IDLE | op::CP_WAIT_MEM_WRITES if n == 0 => {
                            if opcode == op::CP_WAIT_FOR_IDLE && st.marker {
                                st.idle = true;
                            }
                        }
                        op::CP_SET_MARKER if n == 1 => {
                            if d[0] != regs::MARKER_RM6_COMPUTE {
                                return Err(format!(
                                    "dword {at}: CP_SET_MARKER mode {:#x}, expected RM6_COMPUTE",
                                    d[0]
                                ));
                            }
                            st = PerDispatch {
                                marker: true,
                                ..Default::default()
                            };
                        }
                        op::CP_WAIT_REG_MEM if n == 6 => {
                            if d[0] != regs::WAIT_REG_MEM_GE_MEMORY || d[5] != 32 {
                                return Err(format!(
                                    "dword {at}: CP_WAIT_REG_MEM {:#x}/{}",
                                    d[0], d[5]
                                ));
                            }
                            let addr = d[1] as u64 | (d[2] as u64) << 32;
                            let v = self
                                .read_u32(addr)
                                .map_err(|e| format!("dword {at}: wait: {e}"))?;
                            if v & d[4] < d[3] {
                                return Err(format!(
                                    "dword {at}: deadlock: wait for [{addr:#x}] >= {} but it is {v} and nothing earlier \
                                     will write it (in-order model)",
                                    d[3]
                                ));
                            }
                            self.stats.waits += 1;
                            self.trace
                                .push(format!("  wait [{addr:#x}] >= {} (is {v})", d[3]));
                        }
                        op::CP_EVENT_WRITE if n == 4 && d[0] == event::CACHE_FLUSH_TS => {
                            let addr = d[1] as u64 | (d[2] as u64) << 32;
                            if !self.is_dummy(addr) {
                                let old = self
                                    .read_u32(addr)
                                    .map_err(|e| format!("dword {at}: signal: {e}"))?;
                                if d[3] < old {
                                    return Err(format!(
                                        "dword {at}: signal [{addr:#x}] goes backwards {old} -> {}",
                                        d[3]
                                    ));
                                }
                                self.stats.signals += 1;
                                self.trace.push(format!("  signal [{addr:#x}] <- {}", d[3]));
                            }
                            self.write(addr, &d[3].to_le_bytes())
                                .map_err(|e| format!("dword {at}: {e}"))?;
                        }
                        op::CP_EVENT_WRITE if n == 1 && d[0] == event::CACHE_INVALIDATE => {
                            barrier_seen = true
                        }
                        op::CP_REG_TO_MEM if n == 3 => {
                            if d[0] != regs::REG_TO_MEM_ALWAYS_ON_64 {
                                return Err(format!(
                                    "dword {at}: CP_REG_TO_MEM {:#x} is not the 64-bit counter",
                                    d[0]
                                ));
                            }
                            let addr = d[1] as u64 | (d[2] as u64) << 32;
                            self.write(addr, &self.ticks.to_le_bytes())
                                .map_err(|e| format!("dword {at}: {e}"))?;
                            self.stats.timestamps += 1;
                        }
                        op::CP_LOAD_STATE6_FRAG if n == 3 => self.load_state(&mut st, at, d)?,
                        op::CP_EXEC_CS | op::CP_RUN_OPENCL
                            if n == if opcode == op::CP_EXEC_CS { 4 } else { 1 } =>
                        {
                            let cl = opcode == op::CP_RUN_OPENCL;
                            if !barrier_seen {
                                return Err(format!(
                                    "dword {at}: dispatch without a preceding cache invalidate in this IB (the \
                                     CPU may have written memory since the last submission)"
                                ));
                            }
                            if d[0] != 0 {
                                return Err(format!(
                                    "dword {at}: {} dword 0 is {:#x}",
                                    if cl { "CP_RUN_OPENCL" } else { "CP_EXEC_CS" },
                                    d[0]
                                ));
                            }
                            // CP_RUN_OPENCL carries no group counts: they are SP_CS_KERNEL_GROUP_X/Y/Z (§16.11).
                            let groups = if cl {
                                [0, 1, 2].map(|i| self.r(regs::SP_CS_KERNEL_GROUP_X + i))
                            } else {
                                [d[1], d[2], d[3]]
                            };
                            let idx = self.stats.dispatches as usize;
                            if self.cfg.hang_at_dispatch == Some(idx) {
                                self.trace.push(format!(
                                    "  dispatch {idx}: injected hang, GPU stops here"
                                ));
                                return Ok(false);
                            }
                            let dsp = self.dispatch(&st, at, groups, cl)?;
                            if self.cfg.execute_shaders {
                                self.execute(&dsp, idx)?;
                            }
                            self.trace.push(format!(
                                "  dispatch {idx}: G={:?} L={:?} shader={:#x}({} units) args={:#x} tex={} uav={} samp={}",
                                dsp.global,
                                dsp.local,
                                dsp.shader,
                                dsp.instr_units,
                                dsp.args,
                                dsp.textures.len(),
                                dsp.uavs.len(),
                                dsp.samplers.len()
                            ));
                            self.dispatches.push(dsp);
                            self.stats.dispatches += 1;
                            self.ticks += self.cfg.ticks_per_dispatch;
                            st = PerDispatch::default();
                            expect_flush_after_exec = true;
                        }
                        _ => {
                            return Err(format!(
                                "dword {at}: unexpected packet opcode {opcode:#x} with {n} dwords"
                            ))
                        }
                    }
                }
            }
        }
        if expect_flush_after_exec {
            return Err("IB ends right after a dispatch (no CACHE_FLUSH_TS)".into());
        }
        Ok(true)
    }

    pub(super) fn load_state(&mut self, st: &mut PerDispatch, at: usize, d: &[u32]) -> R<()> {
        let (ty, src, block, units, dst_off) = (
            (d[0] >> 14) & 3,
            (d[0] >> 16) & 3,
            (d[0] >> 18) & 0xF,
            d[0] >> 22,
            d[0] & 0x3FFF,
        );
        if src != ls::SS6_INDIRECT || dst_off != 0 {
            return Err(format!(
                "dword {at}: CP_LOAD_STATE6 source {src} / dst_off {dst_off} (need indirect, 0)"
            ));
        }
        let addr = d[1] as u64 | (d[2] as u64) << 32;
        let (slot, bytes, what) = match (ty, block) {
            (ls::ST_SHADER, ls::SB6_CS_SHADER) => (&mut st.shader, units as u64 * 128, "shader"),
            (ls::ST_CONSTANTS, ls::SB6_CS_SHADER) => {
                (&mut st.consts, units as u64 * 16, "constants")
            }
            (ls::ST_CONSTANTS, ls::SB6_CS_TEX) => (&mut st.tex, units as u64 * 64, "textures"),
            (ls::ST_SHADER, ls::SB6_CS_TEX) => (&mut st.samp, units as u64 * 16, "samplers"),
            (ls::ST6_UAV, ls::SB6_CS_SHADER) => (&mut st.uav, units as u64 * 64, "UAVs"),
            (ls::ST6_UBO, ls::SB6_CS_SHADER) => (&mut st.ubo, units as u64 * 8, "UBO descriptors"),
            _ => {
                return Err(format!(
                    "dword {at}: CP_LOAD_STATE6 type {ty} block {block} not used by compute"
                ))
            }
        };
        if units == 0 {
            return Err(format!("dword {at}: CP_LOAD_STATE6 {what} with 0 units"));
        }
        *slot = Some(Load { addr, units });
        self.check_range(&format!("dword {at}: {what} load"), addr, bytes)
    }
}
