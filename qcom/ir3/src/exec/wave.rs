//! The wave model and the wave-level instructions of [`WaveOp`] (docs/hw/adreno-kgsl-pm4.md §16.10): a work
//! group's fibers form waves of [`WAVE`] fibers in linear local-id order (the KGSL model programs THREAD64,
//! §7), and `getfiberid`, `movmsk`, `shfl`, `quad_shuffle`, `getone` and `getlast` look at the fibers of one
//! wave that execute the instruction together (the issued set, after predication for the non-branches).
use super::group::Group;
use crate::instr::*;

/// Fibers per wave: a6xx runs compute waves of 64 fibers in THREAD64 mode (128 in THREAD128), and the KGSL
/// model always programs THREAD64 (docs/hw/adreno-kgsl-pm4.md §7, §16.10).
pub const WAVE: usize = 64;

/// Whether `e` is a wave-level branch (handled with the flow instructions).
pub(in crate::exec) fn is_branch(e: &Ext) -> bool {
    matches!(
        e.kind,
        ExtKind::Wave(WaveOp::GetOne { .. } | WaveOp::GetLast { .. })
    )
}

impl Group {
    /// The wave of batch lane `lane` (a key unique in the batch).
    pub(in crate::exec) fn wave_key(&self, lane: u32) -> usize {
        self.wave_pos(lane).0
    }

    /// `bany` (`all` false) / `ball` per wave: whether any / every issued fiber of the wave has `pred`.
    pub(in crate::exec) fn wave_votes(
        &self,
        lanes: &[u32],
        pred: impl Fn(u32) -> bool,
        all: bool,
    ) -> std::collections::HashMap<usize, bool> {
        let mut v: std::collections::HashMap<usize, bool> = Default::default();
        for &i in lanes {
            let p = pred(i);
            v.entry(self.wave_key(i))
                .and_modify(|x| *x = if all { *x && p } else { *x || p })
                .or_insert(p);
        }
        v
    }

    /// (wave key unique in the batch, fiber index in its wave) of batch lane `lane`.
    fn wave_pos(&self, lane: u32) -> (usize, usize) {
        let (g, f) = (lane as usize / self.wg_n, lane as usize % self.wg_n);
        (g * self.wg_n.div_ceil(WAVE) + f / WAVE, f % WAVE)
    }

    /// The batch lane of fiber `id` of the wave `key`, if that fiber exists (the last wave of a work group may
    /// be partial).
    fn wave_lane(&self, key: usize, id: usize) -> Option<u32> {
        let per = self.wg_n.div_ceil(WAVE);
        let f = key % per * WAVE + id;
        (id < WAVE && f < self.wg_n).then_some((key / per * self.wg_n + f) as u32)
    }

    /// `getone` / `getlast`: sets the next PC of every issued fiber.
    pub(in crate::exec) fn wave_branch(
        &mut self,
        e: &Ext,
        pc: u32,
        lanes: &[u32],
    ) -> Result<(), String> {
        let (off, last) = match e.kind {
            ExtKind::Wave(WaveOp::GetOne { off }) => (off, false),
            ExtKind::Wave(WaveOp::GetLast { off }) => (off, true),
            _ => return Err("not a wave branch".into()),
        };
        let t = pc as i64 + off as i64;
        if t < 0 {
            return Err(format!("branch target {t} before the start of the shader"));
        }
        // Per wave: the fiber that falls through (getone: the lowest issued; getlast: the highest issued one of
        // the first cluster of 8 with an issued fiber), and for getlast that cluster.
        let mut pick: std::collections::HashMap<usize, (usize, usize)> = Default::default();
        for &i in lanes {
            let (key, id) = self.wave_pos(i);
            let cluster = id / 8;
            pick.entry(key)
                .and_modify(|(c, f)| {
                    if !last {
                        *f = (*f).min(id);
                    } else if cluster < *c {
                        *c = cluster;
                        *f = id;
                    } else if cluster == *c {
                        *f = (*f).max(id);
                    }
                })
                .or_insert((cluster, id));
        }
        for &i in lanes {
            let (key, id) = self.wave_pos(i);
            let (cluster, one) = pick[&key];
            let jump = if last {
                id / 8 == cluster && id != one
            } else {
                id != one
            };
            self.pc[i as usize] = if jump { t as u32 } else { pc + 1 };
        }
        Ok(())
    }

    /// The non-branch wave instructions over the executing fibers `lanes`.
    pub(in crate::exec) fn wave_op(&mut self, op: WaveOp, lanes: &[u32]) -> Result<(), String> {
        match op {
            WaveOp::FiberId { dst } => {
                for &i in lanes {
                    let id = self.wave_pos(i).1 as u32;
                    self.set_reg_raw(dst, i, id, false);
                }
            }
            WaveOp::MovMsk { dst, regs } => {
                let mut masks: std::collections::HashMap<usize, [u32; 4]> = Default::default();
                for &i in lanes {
                    let (key, id) = self.wave_pos(i);
                    masks.entry(key).or_default()[id / 32] |= 1 << (id % 32);
                }
                for &i in lanes {
                    let m = masks[&self.wave_pos(i).0];
                    for k in 0..regs {
                        self.set_reg_raw(dst + k as u16, i, m[k as usize], false);
                    }
                }
            }
            WaveOp::Shfl {
                mode,
                half,
                dst,
                src,
                lane,
            } => {
                let vals: Vec<u32> = lanes
                    .iter()
                    .map(|&i| {
                        let (key, id) = self.wave_pos(i);
                        let v = match lane {
                            Lane::Imm(v) => v as usize,
                            Lane::Reg(r) => self.reg_raw(r, i, false) as usize,
                        };
                        let from = match mode {
                            ShflMode::Xor => Some(id ^ v),
                            ShflMode::Up => id.checked_sub(v),
                            ShflMode::Down => id.checked_add(v),
                            ShflMode::RotDown => Some((id + v % WAVE) % WAVE),
                            ShflMode::RotUp => Some((id + WAVE - v % WAVE) % WAVE),
                        };
                        // A fiber outside the wave (undefined in Vulkan's terms) yields the fiber's own value.
                        let from = from.and_then(|f| self.wave_lane(key, f)).unwrap_or(i);
                        self.reg_raw(src, from, half)
                    })
                    .collect();
                for (&i, v) in lanes.iter().zip(vals) {
                    self.set_reg_raw(dst, i, v, half);
                }
            }
            WaveOp::Quad {
                mode,
                half,
                dst,
                src,
                idx,
            } => {
                let vals: Vec<u32> = lanes
                    .iter()
                    .map(|&i| {
                        let (key, id) = self.wave_pos(i);
                        let q = match mode {
                            0 => self.reg_raw(idx, i, half) as usize & 3,
                            m => id & 3 ^ m as usize,
                        };
                        let from = self.wave_lane(key, id & !3 | q).unwrap_or(i);
                        self.reg_raw(src, from, half)
                    })
                    .collect();
                for (&i, v) in lanes.iter().zip(vals) {
                    self.set_reg_raw(dst, i, v, half);
                }
            }
            WaveOp::GetOne { .. } | WaveOp::GetLast { .. } => {
                return Err("a wave branch outside the flow path".into())
            }
        }
        Ok(())
    }
}
