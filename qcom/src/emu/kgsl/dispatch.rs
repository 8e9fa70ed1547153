//! What one CP_EXEC_CS (or, for a Qualcomm-compiled kernel, CP_RUN_OPENCL) must find programmed: the register and state-load checks of a compute dispatch
//! (docs/hw/adreno-kgsl-pm4.md §13), texture/UAV descriptor checks (texture slots past the 16 loaded inline come
//! from memory, §8.6), and the [`Dispatch`] record the model keeps.
use super::stream::{Load, PerDispatch};
use super::{KgslModel, R};
use crate::a6xx::layout::INLINE_TEXTURES;
use crate::a6xx::regs;

/// What a dispatch looked like when CP_EXEC_CS ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    pub global: [u32; 3],
    pub local: [u32; 3],
    /// NDRANGE item count per dimension: `global * local`, or fewer in CL mode when the last work group of a
    /// dimension is partial (tinygrad's fractional global sizes; docs/hw/adreno-kgsl-pm4.md "Fractional global
    /// sizes"). Items at or past it do not run.
    pub items: [u32; 3],
    pub shader: u64,
    pub instr_units: u32,
    pub args: u64,
    /// The 2048-byte constant file as the GPU would load it.
    pub consts: Vec<u8>,
    pub textures: Vec<[u32; 16]>,
    pub uavs: Vec<[u32; 16]>,
    pub samplers: Vec<[u32; 4]>,
    /// UBO descriptors of the ST6_UBO load (A6XX_UBO: address, size in vec4; §16.12), by slot.
    pub ubos: Vec<[u32; 2]>,
    /// SP_CS_BINDLESS_BASE[0…4] at the dispatch (descriptor-set address | DESC_SIZE; §16.13).
    pub bindless: [u64; 5],
    pub cs_cntl_0: u32,
    pub const_config_0: u32,
    /// Launched by CP_RUN_OPENCL (a Qualcomm-compiled kernel in CL mode, §16.11) instead of CP_EXEC_CS.
    pub cl: bool,
}

impl KgslModel {
    pub(super) fn dispatch(
        &self,
        st: &PerDispatch,
        at: usize,
        groups: [u32; 3],
        cl: bool,
    ) -> R<Dispatch> {
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
        let mut items = [0u32; 3];
        for i in 0..3 {
            let total = self.r(regs::SP_CS_NDRANGE_0 + 1 + 2 * i as u32);
            let off = self.r(regs::SP_CS_NDRANGE_0 + 2 + 2 * i as u32);
            let full = groups[i] as u64 * local[i] as u64;
            // CL mode: the last group may be partial (total in ((groups-1)·local, groups·local]).
            let partial_ok = cl
                && (total as u64) > full.saturating_sub(local[i] as u64)
                && (total as u64) <= full;
            if !(total as u64 == full || partial_ok) || off != 0 {
                return Err(e(format!(
                    "NDRANGE dim {i}: total {total} offset {off}, expected {}·{}",
                    groups[i], local[i]
                )));
            }
            items[i] = total;
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
            (
                regs::SP_MODE_CNTL,
                super::cl_mode::sp_mode_cntl(cl),
                "SP_MODE_CNTL",
            ),
            (
                regs::TPL1_MODE_CNTL,
                super::cl_mode::tpl1_mode_cntl(cl),
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
        if u64::from(self.r(regs::SP_CS_PVT_MEM_SIZE)) != u64::from(per_item) * 256 {
            return Err(e("PVT_MEM_SIZE != PVT_MEM_PARAM·128·2".into()));
        }
        let cfg = self.r(regs::SP_CS_CONFIG);
        if cfg & regs::CS_CONFIG_ENABLED == 0 {
            return Err(e("SP_CS_CONFIG not enabled".into()));
        }
        let ntex = (cfg >> 9) & 0xFF;
        let units = |l: Option<Load>| l.map_or(0, |l| l.units);
        let (tex_units, samp_units, uav_units) = (units(st.tex), units(st.samp), units(st.uav));
        // docs/hw/adreno-kgsl-pm4.md §8.6: the texture load covers the first min(16, NTEX) descriptors; NSAMP and NUAV
        // are the sampler and UAV load counts, shifted into place unmasked (so 32+ samplers carry into NUAV).
        let want = regs::CS_CONFIG_ENABLED | ntex << 9 | samp_units << 17 | uav_units << 22;
        if tex_units != ntex.min(INLINE_TEXTURES) || cfg != want {
            return Err(e(format!(
                "SP_CS_CONFIG {cfg:#x} (ntex {ntex}) differs from loads tex {tex_units} samp {samp_units} uav {uav_units}"
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
        if cl {
            super::cl_mode::check_const_config_0(cc0).map_err(e)?;
        } else if (cc0 >> 16) & 0xFF != regs::REGID_UNUSED {
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
        let mut textures = desc(st.tex).map_err(e)?;
        if ntex > tex_units {
            // §8.6: texture slots past the inline ones are read from the descriptor array at SP_CS_TEXMEMOBJ_BASE.
            let addr = self
                .r64(regs::SP_CS_TEXMEMOBJ_BASE)
                .checked_add(u64::from(tex_units) * 64)
                .ok_or_else(|| e("SP_CS_TEXMEMOBJ_BASE overflows".into()))?;
            let rest = Load {
                addr,
                units: ntex - tex_units,
            };
            textures.extend(desc(Some(rest)).map_err(e)?);
        }
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
        let ubos = self.ubos(st.ubo).map_err(e)?;
        Ok(Dispatch {
            global: groups,
            local,
            items,
            shader: shader.addr,
            instr_units: shader.units,
            args: consts.addr,
            consts: self.read(consts.addr, 2048).map_err(e)?,
            textures,
            uavs,
            samplers,
            ubos,
            bindless: [0, 1, 2, 3, 4].map(|n| self.r64(regs::SP_CS_BINDLESS_BASE + 2 * n)),
            cs_cntl_0: cntl0,
            const_config_0: cc0,
            cl,
        })
    }

    /// The UBO descriptors of a ST6_UBO load, each buffer checked to lie inside a GPU object (§16.12).
    fn ubos(&self, l: Option<Load>) -> R<Vec<[u32; 2]>> {
        let Some(l) = l else { return Ok(Vec::new()) };
        let dws = self.dwords(l.addr, 2 * l.units as usize)?;
        let mut v = Vec::new();
        for (n, c) in dws.chunks_exact(2).enumerate() {
            let u = modelrt_ir3::Ubo::from_descriptor([c[0], c[1]]);
            if u.size_vec4 > 0 {
                self.check_range(&format!("UBO {n}"), u.base, u.size_vec4 as u64 * 16)?;
            }
            v.push([c[0], c[1]]);
        }
        Ok(v)
    }

    pub(super) fn check_descriptor(&self, d: &[u32; 16]) -> R<()> {
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
