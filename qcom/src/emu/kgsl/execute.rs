//! Executing a validated dispatch with the IR3 interpreter (docs/hw/adreno-kgsl-pm4.md §16.5): the shader at
//! SP_CS_BASE (decoded once per address and image), the constant file of the CP_LOAD_STATE6 constant load,
//! work groups and the local size from the NDRANGE registers, work-group/local-id registers from
//! SP_CS_CONST_CONFIG_0, shared memory from SP_CS_CNTL_1, textures/UAVs and UBOs from their descriptors, the
//! bindless descriptor-set bases from SP_CS_BINDLESS_BASE, and every memory access checked against the model's
//! GPU objects (an address outside them is a GPU fault). The work
//! groups run on [`KgslModel::set_ir3_threads`] threads, else `$MODELRT_IR3_THREADS`, else every core
//! ([`ir3::default_threads`]); workers read the objects through a shared view and the model is written after
//! the dispatch, in work-group order.
use super::memory::ObjView;
use super::{Dispatch, KgslModel, R};
use crate::a6xx::regs;
use modelrt_ir3::{self as ir3, GpuMemory, Image, Launch, Program, SharedMemory, Ubo};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

/// What the interpreter did over the model's lifetime.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExecStats {
    pub dispatches: u64,
    pub issues: u64,
    pub fiber_instrs: u64,
    /// Host seconds spent interpreting (wall time).
    pub seconds: f64,
    /// Bytes stored by more than one batch of work groups of a dispatch (the later batch wins); counted only
    /// for dispatches run on several threads.
    pub overlapping_bytes: u64,
}

/// Decoded programs by shader address, plus counters.
#[derive(Default)]
pub(super) struct ExecState {
    programs: HashMap<u64, (Vec<u8>, Rc<Program>)>,
    names: HashMap<u64, String>,
    pub(super) stats: ExecStats,
    /// Threads per dispatch; `None` until set or first needed.
    threads: Option<usize>,
}

/// The model's memory as the shader sees it.
struct ModelMem<'a>(&'a mut KgslModel);

impl GpuMemory for ModelMem<'_> {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        self.0.read_into(addr, out)
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        self.0.write(addr, data)
    }
    fn shared_view(&self) -> Option<Box<dyn SharedMemory + '_>> {
        Some(Box::new(self.0.view()))
    }
}

impl SharedMemory for ObjView<'_> {
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        ObjView::read(self, addr, out)
    }
    fn check_write(&self, addr: u64, len: usize) -> Result<(), String> {
        ObjView::check_write(self, addr, len)
    }
}

fn image(d: &[u32; 16]) -> Image {
    Image {
        base: d[4] as u64 | (d[5] as u64) << 32,
        width: d[1] & 0x7FFF,
        height: (d[1] >> 15) & 0x7FFF,
        pitch: (d[2] >> 7) & 0x3F_FFFF,
        half: (d[0] >> 22) & 0xFF == 0x62,
    }
}

fn regid(v: u32) -> Option<u16> {
    (v != regs::REGID_UNUSED).then_some(v as u16)
}

impl KgslModel {
    /// Name the shader loaded at `gpuaddr` (used in interpreter errors instead of its address).
    pub fn name_shader(&mut self, gpuaddr: u64, name: &str) {
        self.exec.names.insert(gpuaddr, name.to_string());
    }

    /// Run each dispatch's work groups on `threads` host threads (at least 1; 1 = serial). Memory, counters
    /// and errors do not depend on it (docs/hw/adreno-kgsl-pm4.md §16.5).
    pub fn set_ir3_threads(&mut self, threads: usize) {
        self.exec.threads = Some(threads.max(1));
    }

    /// A copy of every mapped object's bytes with its address, in address order (to compare two runs).
    pub fn memory_snapshot(&self) -> Vec<(u64, Vec<u8>)> {
        self.view()
            .mapped()
            .map(|(va, b)| (va, b.to_vec()))
            .collect()
    }

    /// Counters of the interpreter.
    pub fn exec_stats(&self) -> ExecStats {
        self.exec.stats
    }

    /// Run dispatch `idx` with the interpreter.
    pub(super) fn execute(&mut self, d: &Dispatch, idx: usize) -> R<()> {
        let t0 = Instant::now();
        let name = self
            .exec
            .names
            .get(&d.shader)
            .cloned()
            .unwrap_or_else(|| format!("shader@{:#x}", d.shader));
        let e = |m: String| format!("dispatch {idx} (kernel {name}): {m}");
        let bytes = self
            .read(d.shader, d.instr_units as usize * 128)
            .map_err(e)?;
        let prog = match self.exec.programs.get(&d.shader) {
            Some((b, p)) if *b == bytes => p.clone(),
            _ => {
                let p = Rc::new(Program::decode(&name, &bytes)?);
                self.exec.programs.insert(d.shader, (bytes, p.clone()));
                p
            }
        };
        // The constant load reads 256 vec4; a region whose object ends earlier still has its 2048-byte file.
        let consts: Vec<u32> = self
            .dwords(d.args, 1024)
            .or_else(|_| self.dwords(d.args, 512))
            .map_err(e)?;
        let textures: Vec<Image> = d.textures.iter().map(image).collect();
        let uavs: Vec<Image> = d.uavs.iter().map(image).collect();
        let ubos: Vec<Ubo> = d.ubos.iter().map(|u| Ubo::from_descriptor(*u)).collect();
        let shared = ((self.r(regs::SP_CS_CNTL_1) & 0x1F) as usize + 1) * 1024;
        let cc0 = d.const_config_0;
        let launch = Launch {
            consts: &consts,
            groups: d.global,
            local: d.local,
            wgid_reg: regid(cc0 & 0xFF),
            lid_reg: regid(cc0 >> 24),
            // CL mode only: Mesa's streams put a constant id (or 0xfc) in these fields (§16.11).
            wgsize_reg: if d.cl { regid((cc0 >> 8) & 0xFF) } else { None },
            wgoffset_reg: if d.cl {
                regid((cc0 >> 16) & 0xFF)
            } else {
                None
            },
            textures: &textures,
            uavs: &uavs,
            samplers: &d.samplers,
            ubos: &ubos,
            bindless: d.bindless,
            shared_bytes: shared,
            items: (0..3)
                .any(|i| d.items[i] as u64 != d.global[i] as u64 * d.local[i] as u64)
                .then_some(d.items),
        };
        let threads = *self.exec.threads.get_or_insert_with(ir3::default_threads);
        let run = ir3::run_threads(&prog, &launch, &mut ModelMem(self), threads)
            .map_err(|m| format!("dispatch {idx}: {m}"))?;
        let s = &mut self.exec.stats;
        s.dispatches += 1;
        s.issues += run.stats.issues;
        s.fiber_instrs += run.stats.fiber_instrs;
        s.overlapping_bytes += run.overlapping_bytes;
        s.seconds += t0.elapsed().as_secs_f64();
        Ok(())
    }
}
