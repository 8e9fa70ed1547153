//! A model of KGSL + the a6xx command processor that *validates* every submitted PM4 stream against the rules of
//! spec §13 and records a readable trace. It does **not** execute shaders (it has no a630 ISA interpreter): kernel
//! outputs are never computed. It performs only the memory side effects the CP itself does — CACHE_FLUSH_TS
//! stores (signals, progress), CP_REG_TO_MEM always-on-counter stores (timestamps) — and checks CP_WAIT_REG_MEM
//! against memory (an in-order model that finds a wait unsatisfied reports a dependency bug instead of hanging).
//!
//! Modelling choices (explicit, configurable in [`ModelConfig`]):
//! - submissions retire at submit time (in order); a hang is injected with [`ModelConfig::hang_at_dispatch`];
//! - the *dummy* object is the first object allocated after open (tinygrad's bring-up order, spec §3);
//! - the always-on counter advances [`ModelConfig::ticks_per_dispatch`] ticks per dispatch (19.2 MHz units);
//! - MAP_USER_MEM returns the host pointer as GPU address, or EFAULT when [`ModelConfig::user_mem_efault`].
use crate::a6xx::regs::{self, load_state as ls};
use crate::kgsl::abi::{self, CommandObject, DevInfo};
use crate::kgsl::{KgslError, KgslIo, ObjAlloc};
use crate::pm4::{self, event, op, Header};
use std::collections::BTreeMap;

/// Knobs of the model.
#[derive(Clone, Debug)]
pub struct ModelConfig {
    /// chip id reported by DEVICE_INFO (a630: 0x06030001).
    pub chip_id: u32,
    /// Context flags DRAWCTXT_CREATE accepts (tinygrad default 0x04008A12).
    pub ctx_flags: u32,
    /// Global 0-based dispatch index at which the GPU "hangs": that dispatch never completes, the submission
    /// never retires and WAITTIMESTAMP times out.
    pub hang_at_dispatch: Option<usize>,
    pub ticks_per_dispatch: u64,
    pub user_mem_efault: bool,
    /// Fail the Nth (0-based) GPUOBJ_ALLOC with ENOMEM.
    pub fail_alloc_at: Option<usize>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            chip_id: 0x0603_0001,
            ctx_flags: abi::context_flags(8),
            hang_at_dispatch: None,
            ticks_per_dispatch: 192,
            user_mem_efault: false,
            fail_alloc_at: None,
        }
    }
}

struct Obj {
    size: u64,
    mem: Option<(*mut u8, std::alloc::Layout)>,
}

/// What a dispatch looked like when CP_EXEC_CS ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    pub global: [u32; 3],
    pub local: [u32; 3],
    pub shader: u64,
    pub instr_units: u32,
    pub args: u64,
    /// The 2048-byte constant file as the GPU would load it.
    pub consts: Vec<u8>,
    pub textures: Vec<[u32; 16]>,
    pub uavs: Vec<[u32; 16]>,
    pub samplers: Vec<[u32; 4]>,
    pub cs_cntl_0: u32,
    pub const_config_0: u32,
}

/// Counters the model keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub submissions: u32,
    pub packets: u64,
    pub dispatches: u64,
    pub signals: u64,
    pub waits: u64,
    pub timestamps: u64,
}

#[derive(Default, Clone, Copy)]
struct Load {
    addr: u64,
    units: u32,
}

#[derive(Default)]
struct PerDispatch {
    marker: bool,
    idle: bool,
    consts: Option<Load>,
    shader: Option<Load>,
    tex: Option<Load>,
    samp: Option<Load>,
    uav: Option<Load>,
}

/// The KGSL model.
pub struct KgslModel {
    cfg: ModelConfig,
    objs: BTreeMap<u32, Obj>,
    /// va → id for mapped objects.
    by_va: BTreeMap<u64, u32>,
    next_id: u32,
    allocs: usize,
    dummy: Option<u32>,
    ctx: Option<u32>,
    power_max: bool,
    user_maps: BTreeMap<u64, u64>,
    ts: u32,
    retired: u32,
    ticks: u64,
    regs: BTreeMap<u32, u32>,
    hung: bool,
    trace: Vec<String>,
    dispatches: Vec<Dispatch>,
    submitted: Vec<Vec<u32>>,
    stats: Stats,
}

/// `Result` with a model error message.
type R<T> = Result<T, String>;

impl KgslModel {
    pub fn new(cfg: ModelConfig) -> Self {
        KgslModel {
            cfg,
            objs: BTreeMap::new(),
            by_va: BTreeMap::new(),
            next_id: 1,
            allocs: 0,
            dummy: None,
            ctx: None,
            power_max: false,
            user_maps: BTreeMap::new(),
            ts: 0,
            retired: 0,
            ticks: 0,
            regs: BTreeMap::new(),
            hung: false,
            trace: Vec::new(),
            dispatches: Vec::new(),
            submitted: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// Readable trace of every call and submission.
    pub fn trace(&self) -> &[String] {
        &self.trace
    }
    /// Every dispatch the model saw, in order.
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }
    /// The dwords of every submitted IB, in order.
    pub fn submitted(&self) -> &[Vec<u32>] {
        &self.submitted
    }
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
    /// Whether SETPROPERTY(PWR_CONSTRAINT, max) was seen.
    pub fn power_max(&self) -> bool {
        self.power_max
    }
    /// Number of live GPU objects.
    pub fn live_objects(&self) -> usize {
        self.objs.len()
    }
    /// Register value as last written.
    pub fn reg(&self, r: u32) -> Option<u32> {
        self.regs.get(&r).copied()
    }

    fn find(&self, addr: u64, len: u64) -> Option<(u32, u64)> {
        let (&va, &id) = self.by_va.range(..=addr).next_back()?;
        let o = self.objs.get(&id)?;
        (addr.checked_add(len)? <= va + o.size).then_some((id, addr - va))
    }

    fn in_user_map(&self, addr: u64, len: u64) -> bool {
        self.user_maps
            .range(..=addr)
            .next_back()
            .is_some_and(|(&b, &l)| addr + len <= b + l)
    }

    fn check_range(&self, what: &str, addr: u64, len: u64) -> R<()> {
        if self.find(addr, len).is_some() || self.in_user_map(addr, len) {
            Ok(())
        } else {
            Err(format!(
                "{what} {addr:#x}+{len:#x} is not inside a live GPU object"
            ))
        }
    }

    fn ptr(&self, addr: u64, len: u64, what: &str) -> R<*mut u8> {
        let (id, off) = self
            .find(addr, len)
            .ok_or_else(|| format!("{what} {addr:#x}+{len:#x} outside GPU objects"))?;
        let (p, _) = self.objs[&id]
            .mem
            .ok_or_else(|| format!("{what} {addr:#x}: object {id} is not mapped"))?;
        // SAFETY: off+len ≤ object size (find checked), so the offset pointer stays inside the allocation.
        Ok(unsafe { p.add(off as usize) })
    }

    /// Read `len` bytes of GPU memory (only model-owned objects).
    pub fn read(&self, addr: u64, len: usize) -> R<Vec<u8>> {
        let p = self.ptr(addr, len as u64, "read")?;
        let mut v = vec![0u8; len];
        // SAFETY: `p..p+len` lies inside a live allocation owned by the model.
        unsafe { core::ptr::copy_nonoverlapping(p, v.as_mut_ptr(), len) };
        Ok(v)
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> R<()> {
        let p = self.ptr(addr, data.len() as u64, "store")?;
        // SAFETY: inside a live allocation owned by the model (checked by `ptr`).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
        Ok(())
    }

    fn read_u32(&self, addr: u64) -> R<u32> {
        let b = self.read(addr, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn dwords(&self, addr: u64, n: usize) -> R<Vec<u32>> {
        let b = self.read(addr, n * 4)?;
        Ok(b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn is_dummy(&self, addr: u64) -> bool {
        self.find(addr, 4)
            .is_some_and(|(id, _)| Some(id) == self.dummy)
    }

    fn r(&self, r: u32) -> u32 {
        self.regs.get(&r).copied().unwrap_or(0)
    }

    fn r64(&self, r: u32) -> u64 {
        self.r(r) as u64 | (self.r(r + 1) as u64) << 32
    }

    /// Decode, validate and perform one IB. Returns Ok(false) when the injected hang stopped it.
    fn run_ib(&mut self, dw: &[u32]) -> R<bool> {
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
                        op::CP_EXEC_CS if n == 4 => {
                            if !barrier_seen {
                                return Err(format!(
                                    "dword {at}: dispatch without a preceding cache invalidate in this IB (the \
                                     CPU may have written memory since the last submission)"
                                ));
                            }
                            if d[0] != 0 {
                                return Err(format!(
                                    "dword {at}: CP_EXEC_CS dword 0 is {:#x}",
                                    d[0]
                                ));
                            }
                            let idx = self.stats.dispatches as usize;
                            if self.cfg.hang_at_dispatch == Some(idx) {
                                self.trace.push(format!(
                                    "  dispatch {idx}: injected hang, GPU stops here"
                                ));
                                return Ok(false);
                            }
                            let dsp = self.dispatch(&st, at, [d[1], d[2], d[3]])?;
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

    fn load_state(&mut self, st: &mut PerDispatch, at: usize, d: &[u32]) -> R<()> {
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

    fn dispatch(&self, st: &PerDispatch, at: usize, groups: [u32; 3]) -> R<Dispatch> {
        let e = |m: String| format!("dword {at}: dispatch: {m}");
        if !st.marker {
            return Err(e("no CP_SET_MARKER(RM6_COMPUTE) before it".into()));
        }
        let nd0 = self.r(regs::SP_CS_NDRANGE_0);
        if nd0 & 3 != 3 {
            return Err(e(format!("KERNELDIM is {}, expected 3", nd0 & 3)));
        }
        let local = [
            ((nd0 >> 2) & 0x3FF) + 1,
            ((nd0 >> 12) & 0x3FF) + 1,
            ((nd0 >> 22) & 0x3FF) + 1,
        ];
        for i in 0..3 {
            let total = self.r(regs::SP_CS_NDRANGE_0 + 1 + 2 * i as u32);
            let off = self.r(regs::SP_CS_NDRANGE_0 + 2 + 2 * i as u32);
            if total as u64 != groups[i] as u64 * local[i] as u64 || off != 0 {
                return Err(e(format!(
                    "NDRANGE dim {i}: total {total} offset {off}, expected {}·{}",
                    groups[i], local[i]
                )));
            }
            if self.r(regs::SP_CS_KERNEL_GROUP_X + i as u32) != groups[i] {
                return Err(e(format!(
                    "KERNEL_GROUP dim {i} != CP_EXEC_CS {}",
                    groups[i]
                )));
            }
        }
        let cntl0 = self.r(regs::SP_CS_CNTL_0);
        let (hregs, fregs) = ((cntl0 >> 1) & 0x3F, (cntl0 >> 7) & 0x3F);
        let max_threads = ((384 * 32) / ((fregs + hregs.div_ceil(2)).max(1) * 128) * 128).min(1024);
        if local.iter().product::<u32>() > max_threads {
            return Err(e(format!(
                "local {local:?} exceeds {max_threads} threads for fregs {fregs} hregs {hregs}"
            )));
        }
        let checks: [(u32, u32, &str); 7] = [
            (regs::SP_MODE_CNTL, regs::SP_MODE_CNTL_IR3, "SP_MODE_CNTL"),
            (
                regs::TPL1_MODE_CNTL,
                regs::TPL1_MODE_CNTL_IR3,
                "TPL1_MODE_CNTL",
            ),
            (
                regs::SP_CS_CONST_CONFIG,
                regs::CS_CONST_CONFIG,
                "SP_CS_CONST_CONFIG",
            ),
            (regs::SP_REG_PROG_ID_0, 0xFCFC_FCFC, "SP_REG_PROG_ID_0"),
            (regs::SP_REG_PROG_ID_0 + 3, 0xFC, "SP_REG_PROG_ID_3"),
            (
                regs::SP_PERFCTR_SHADER_MASK,
                regs::PERFCTR_CS,
                "SP_PERFCTR_SHADER_MASK",
            ),
            (regs::SP_CS_WGE_CNTL, regs::REGID_UNUSED, "SP_CS_WGE_CNTL"),
        ];
        for (r, want, name) in checks {
            if self.r(r) != want {
                return Err(e(format!("{name} = {:#x}, expected {want:#x}", self.r(r))));
            }
        }
        let cntl1 = self.r(regs::SP_CS_CNTL_1);
        if cntl1 & !0x1F != regs::CS_CNTL_1_CONSTLEN_256 || cntl1 & 0x1F == 0 {
            return Err(e(format!(
                "SP_CS_CNTL_1 = {cntl1:#x}, expected 0x40 | shared_size ≥ 1"
            )));
        }
        let shader = st.shader.ok_or_else(|| e("no shader load".into()))?;
        if self.r64(regs::SP_CS_BASE) != shader.addr {
            return Err(e("SP_CS_BASE differs from the shader load address".into()));
        }
        if self.r(regs::SP_CS_INSTR_SIZE) != shader.units {
            return Err(e(format!(
                "INSTR_SIZE {} != shader units {}",
                self.r(regs::SP_CS_INSTR_SIZE),
                shader.units
            )));
        }
        let consts = st.consts.ok_or_else(|| e("no constant load".into()))?;
        if consts.units != 256 {
            return Err(e(format!(
                "constant load of {} vec4, expected 256",
                consts.units
            )));
        }
        let stack_off = self.r(regs::SP_CS_PVT_MEM_STACK_OFFSET) as u64;
        let stack = self.r64(regs::SP_CS_PVT_MEM_BASE);
        if stack_off == 0 || !stack_off.is_multiple_of(0x1000) {
            return Err(e(format!(
                "PVT_MEM_STACK_OFFSET {stack_off:#x} is not a positive multiple of 4 KiB"
            )));
        }
        self.check_range(
            "private memory stack (4 x STACK_OFFSET)",
            stack,
            4 * stack_off,
        )
        .map_err(e)?;
        let per_item = self.r(regs::SP_CS_PVT_MEM_PARAM);
        if self.r(regs::SP_CS_PVT_MEM_SIZE) != per_item * 256 {
            return Err(e("PVT_MEM_SIZE != PVT_MEM_PARAM·128·2".into()));
        }
        let cfg = self.r(regs::SP_CS_CONFIG);
        let (ntex, nsamp, nuav) = ((cfg >> 9) & 0xFF, (cfg >> 17) & 0x1F, (cfg >> 22) & 0x3F);
        if cfg & regs::CS_CONFIG_ENABLED == 0 {
            return Err(e("SP_CS_CONFIG not enabled".into()));
        }
        let units = |l: Option<Load>| l.map_or(0, |l| l.units);
        if units(st.tex) != ntex || units(st.samp) != nsamp || units(st.uav) != nuav {
            return Err(e(format!(
                "SP_CS_CONFIG counts tex {ntex} samp {nsamp} uav {nuav} differ from loads {}/{}/{}",
                units(st.tex),
                units(st.samp),
                units(st.uav)
            )));
        }
        let bases = [
            (st.tex, regs::SP_CS_TEXMEMOBJ_BASE, "SP_CS_TEXMEMOBJ_BASE"),
            (st.samp, regs::SP_CS_SAMPLER_BASE, "SP_CS_SAMPLER_BASE"),
            (st.uav, regs::SP_CS_UAV_BASE, "SP_CS_UAV_BASE"),
        ];
        for (l, r, name) in bases {
            if let Some(l) = l {
                if self.r64(r) != l.addr {
                    return Err(e(format!("{name} differs from its CP_LOAD_STATE6 address")));
                }
            }
        }
        if st.samp.is_some() {
            self.check_range(
                "border colour",
                self.r64(regs::TPL1_CS_BORDER_COLOR_BASE),
                64,
            )
            .map_err(e)?;
        }
        let cc0 = self.r(regs::SP_CS_CONST_CONFIG_0);
        if (cc0 >> 16) & 0xFF != regs::REGID_UNUSED {
            return Err(e(format!(
                "SP_CS_CONST_CONFIG_0 {cc0:#x}: WGOFFSETCONSTID must be 0xfc"
            )));
        }
        let desc = |l: Option<Load>| -> R<Vec<[u32; 16]>> {
            let Some(l) = l else { return Ok(Vec::new()) };
            let dws = self.dwords(l.addr, 16 * l.units as usize)?;
            let mut v = Vec::new();
            for c in dws.chunks_exact(16) {
                let mut d = [0u32; 16];
                d.copy_from_slice(c);
                self.check_descriptor(&d)?;
                v.push(d);
            }
            Ok(v)
        };
        let textures = desc(st.tex).map_err(e)?;
        let uavs = desc(st.uav).map_err(e)?;
        let samplers = match st.samp {
            Some(l) => self
                .dwords(l.addr, 4 * l.units as usize)
                .map_err(e)?
                .chunks_exact(4)
                .map(|c| [c[0], c[1], c[2], c[3]])
                .collect(),
            None => Vec::new(),
        };
        Ok(Dispatch {
            global: groups,
            local,
            shader: shader.addr,
            instr_units: shader.units,
            args: consts.addr,
            consts: self.read(consts.addr, 2048).map_err(e)?,
            textures,
            uavs,
            samplers,
            cs_cntl_0: cntl0,
            const_config_0: cc0,
        })
    }

    fn check_descriptor(&self, d: &[u32; 16]) -> R<()> {
        let fmt = (d[0] >> 22) & 0xFF;
        let item = match fmt {
            0x82 => 4,
            0x62 => 2,
            _ => return Err(format!("descriptor format {fmt:#x} is not RGBA32F/RGBA16F")),
        };
        let (w, h) = (d[1] & 0x7FFF, (d[1] >> 15) & 0x7FFF);
        let (ty, pitch, align) = (d[2] >> 29, (d[2] >> 7) & 0x3F_FFFF, d[2] & 0xF);
        if ty != 1 {
            return Err(format!("descriptor type {ty} is not 2D"));
        }
        if pitch != w * 4 * item
            || pitch % 64 != 0
            || pitch == 0
            || align != pitch.trailing_zeros() - 6
        {
            return Err(format!(
                "descriptor pitch {pitch}/align {align} wrong for width {w} of {item}-byte RGBA"
            ));
        }
        let base = d[4] as u64 | (d[5] as u64) << 32;
        if !base.is_multiple_of(32) {
            return Err(format!("descriptor base {base:#x} is not 32-byte aligned"));
        }
        self.check_range("image", base, pitch as u64 * h as u64)
    }
}

impl Drop for KgslModel {
    fn drop(&mut self) {
        for o in self.objs.values_mut() {
            if let Some((p, l)) = o.mem.take() {
                // SAFETY: allocated by `alloc_zeroed` with this layout in `mmap_obj`, freed exactly once.
                unsafe { std::alloc::dealloc(p, l) };
            }
        }
    }
}

fn merr(m: impl Into<String>) -> KgslError {
    KgslError::Model(m.into())
}

impl KgslIo for KgslModel {
    fn device_info(&mut self) -> Result<DevInfo, KgslError> {
        self.trace.push("DEVICE_GETPROPERTY(DEVICE_INFO)".into());
        Ok(DevInfo {
            device_id: 1,
            chip_id: self.cfg.chip_id,
            mmu_enabled: 1,
            gpu_id: 630,
            ..Default::default()
        })
    }

    fn set_power_max(&mut self, ctx: u32) -> Result<(), KgslError> {
        if Some(ctx) != self.ctx {
            return Err(merr(format!("SETPROPERTY for unknown context {ctx}")));
        }
        self.power_max = true;
        self.trace
            .push(format!("SETPROPERTY(PWR_CONSTRAINT max, ctx {ctx})"));
        Ok(())
    }

    fn drawctxt_create(&mut self, flags: u32) -> Result<u32, KgslError> {
        if flags != self.cfg.ctx_flags {
            return Err(merr(format!(
                "DRAWCTXT_CREATE flags {flags:#x}, model expects {:#x}",
                self.cfg.ctx_flags
            )));
        }
        if self.ctx.is_some() {
            return Err(merr("a second draw context (the backend uses one)"));
        }
        self.ctx = Some(1);
        self.trace
            .push(format!("DRAWCTXT_CREATE(flags {flags:#x}) -> 1"));
        Ok(1)
    }

    fn gpuobj_alloc(&mut self, size: u64, flags: u64) -> Result<ObjAlloc, KgslError> {
        let n = self.allocs;
        self.allocs += 1;
        if self.cfg.fail_alloc_at == Some(n) {
            return Err(KgslError::Errno {
                call: "GPUOBJ_ALLOC",
                errno: 12,
                reason: "injected ENOMEM".into(),
            });
        }
        if flags & abi::MEMFLAGS_USE_CPU_MAP == 0
            || (flags & abi::MEMALIGN_MASK) >> abi::MEMALIGN_SHIFT != 12
        {
            return Err(merr(format!(
                "GPUOBJ_ALLOC flags {flags:#x} lack USE_CPU_MAP / MEMALIGN(12)"
            )));
        }
        if size == 0 || !size.is_multiple_of(abi::PAGE) || size > 1 << 32 {
            return Err(merr(format!(
                "GPUOBJ_ALLOC size {size:#x} is not a page multiple"
            )));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.objs.insert(id, Obj { size, mem: None });
        self.dummy.get_or_insert(id);
        self.trace
            .push(format!("GPUOBJ_ALLOC({size:#x}, {flags:#x}) -> id {id}"));
        Ok(ObjAlloc { id, mmapsize: size })
    }

    fn mmap_obj(&mut self, id: u32, len: u64) -> Result<u64, KgslError> {
        let o = self
            .objs
            .get_mut(&id)
            .ok_or_else(|| merr(format!("mmap of unknown object {id}")))?;
        if o.mem.is_some() || len != o.size {
            return Err(merr(format!(
                "mmap of object {id}: already mapped or length {len:#x} != {:#x}",
                o.size
            )));
        }
        let layout = std::alloc::Layout::from_size_align(len as usize, abi::PAGE as usize)
            .map_err(|e| merr(e.to_string()))?;
        // SAFETY: layout has non-zero size (alloc checked size > 0).
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(KgslError::Errno {
                call: "mmap",
                errno: 12,
                reason: "host out of memory".into(),
            });
        }
        o.mem = Some((p, layout));
        self.by_va.insert(p as u64, id);
        Ok(p as u64)
    }

    fn gpuobj_free(&mut self, id: u32) -> Result<(), KgslError> {
        if !self.objs.contains_key(&id) {
            return Err(merr(format!("GPUOBJ_FREE of unknown object {id}")));
        }
        self.trace.push(format!("GPUOBJ_FREE({id})"));
        Ok(())
    }

    fn munmap(&mut self, va: u64, len: u64) -> Result<(), KgslError> {
        let id = *self
            .by_va
            .get(&va)
            .ok_or_else(|| merr(format!("munmap of unknown mapping {va:#x}")))?;
        let mut o = self
            .objs
            .remove(&id)
            .ok_or_else(|| merr("munmap: object vanished"))?;
        if o.size != len {
            return Err(merr(format!("munmap length {len:#x} != {:#x}", o.size)));
        }
        self.by_va.remove(&va);
        if let Some((p, l)) = o.mem.take() {
            // SAFETY: allocated in `mmap_obj` with this layout; removed from the tables so freed once.
            unsafe { std::alloc::dealloc(p, l) };
        }
        Ok(())
    }

    fn map_user_mem(&mut self, hostptr: u64, len: u64) -> Result<u64, KgslError> {
        if self.cfg.user_mem_efault {
            return Err(KgslError::Errno {
                call: "MAP_USER_MEM",
                errno: 14,
                reason: "Bad address".into(),
            });
        }
        if !hostptr.is_multiple_of(abi::PAGE) || !len.is_multiple_of(abi::PAGE) || len == 0 {
            return Err(merr(format!(
                "MAP_USER_MEM {hostptr:#x}+{len:#x} not page aligned"
            )));
        }
        self.user_maps.insert(hostptr, len);
        self.trace
            .push(format!("MAP_USER_MEM({hostptr:#x}, {len:#x})"));
        Ok(hostptr)
    }

    fn sharedmem_free(&mut self, gpuaddr: u64) -> Result<(), KgslError> {
        self.user_maps
            .remove(&gpuaddr)
            .ok_or_else(|| merr(format!("SHAREDMEM_FREE of unknown {gpuaddr:#x}")))?;
        Ok(())
    }

    fn gpu_command(&mut self, ctx: u32, ibs: &[CommandObject]) -> Result<u32, KgslError> {
        if Some(ctx) != self.ctx {
            return Err(merr(format!("GPU_COMMAND on unknown context {ctx}")));
        }
        if ibs.is_empty() {
            return Err(merr("GPU_COMMAND without IBs"));
        }
        self.ts += 1;
        self.stats.submissions += 1;
        let ts = self.ts;
        self.trace
            .push(format!("GPU_COMMAND ctx {ctx} #{ts}: {} IB(s)", ibs.len()));
        for ib in ibs {
            if ib.flags != abi::CMDLIST_IB || ib.size % 4 != 0 || ib.size == 0 {
                return Err(merr(format!(
                    "IB flags {:#x} size {:#x}",
                    ib.flags, ib.size
                )));
            }
            let dw = self
                .dwords(ib.gpuaddr, ib.size as usize / 4)
                .map_err(|e| merr(format!("IB: {e}")))?;
            self.trace
                .push(format!(" IB {:#x}: {} dwords", ib.gpuaddr, dw.len()));
            if self.hung {
                continue;
            }
            let done = self.run_ib(&dw).map_err(|e| {
                self.trace.push(format!(" REJECTED: {e}"));
                merr(format!("submission {ts}: {e}"))
            })?;
            self.submitted.push(dw);
            if !done {
                self.hung = true;
            }
        }
        if !self.hung {
            self.retired = ts;
        }
        Ok(ts)
    }

    fn wait_timestamp(
        &mut self,
        ctx: u32,
        timestamp: u32,
        timeout_ms: u32,
    ) -> Result<(), KgslError> {
        if Some(ctx) != self.ctx || timestamp > self.ts {
            return Err(merr(format!(
                "WAITTIMESTAMP ctx {ctx} ts {timestamp} was never submitted"
            )));
        }
        if timestamp > self.retired {
            return Err(KgslError::Timeout {
                timestamp,
                timeout_ms,
            });
        }
        Ok(())
    }
}
