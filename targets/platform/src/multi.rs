//! [`MultiModel`]: a multi-device bundle (format 2.3, `modelrt_core::bundle::multi`) loaded on one
//! device per role. Each role's part is loaded by its own device through the [`Registry`], as a
//! single-target bundle would be; a frame then executes the bundle's transfer plan in order — loads
//! from host staging buffers into a part's inputs, the part's run, stores of its outputs into host
//! buffers — so every byte that crosses devices goes through a copy the compile planned, and nothing
//! else moves. The last frame's per-role times, USB counters and cross-device copies are kept for
//! `modelrt bench` ([`FrameReport`]).
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use modelrt_core::bundle::{Bundle, Xfer};
use modelrt_core::{StateInfo, Timing};

use crate::bundle_file::FileMap;
use crate::device::DeviceChoice;
use crate::frame::{FrameInput, InputPath};
use crate::loaded::{LoadedModel, PhaseCounts, UsbCounts};
use crate::options::LoadOptions;
use crate::registry::Registry;

/// One role's share of the last frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleFrame {
    /// The role's name.
    pub role: String,
    /// The device it runs on (`LoadedModel::device_name`).
    pub device: String,
    /// Whether that device is a software model (its time is modelled, not measured).
    pub emulated: bool,
    /// The part's own timing for the frame (its input copy-in, kernels, output copy-out).
    pub timing: Timing,
    /// USB transfers of the role's frame (devices behind a USB bridge; `None` for others): the
    /// part's input copy-in, launches and output copy-out together.
    pub usb: Option<UsbCounts>,
    /// The same transfers by phase (copy-in, launch, copy-out), for the same devices.
    pub phases: Option<PhaseCounts>,
}

/// One cross-device copy of the last frame: a part output stored into a host staging buffer that a
/// later role loads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrossCopy {
    /// The host buffer's label (`cross:ROLE.TENSOR`, or `output:NAME` when it is also an output).
    pub label: String,
    /// The roles it leaves and enters.
    pub from: String,
    pub to: String,
    /// Bytes moved (once off the source device, once onto the destination).
    pub bytes: u64,
    /// The USB transfers of its way off the source role: that role's copy-out phase, when the
    /// source is behind a USB bridge (`None` otherwise).
    pub usb_out: Option<CopyCounts>,
    /// The USB transfers of its way onto the destination role: that role's copy-in phase, when
    /// the destination is behind a USB bridge (`None` otherwise).
    pub usb_in: Option<CopyCounts>,
}

/// One side of a cross-device copy on a USB link: the phase that carries it, and how many
/// tensors that phase moves in all (the device uploads or downloads a run's tensors in one phase,
/// so with `tensors > 1` the counts are the copy's together with the others').
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyCounts {
    pub usb: UsbCounts,
    pub tensors: usize,
}

/// What the last frame of a multi-device bundle did, per role and per crossing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameReport {
    pub roles: Vec<RoleFrame>,
    pub copies: Vec<CrossCopy>,
    /// Wall time of the whole frame, host staging included.
    pub total_ns: u64,
}

/// A multi-device bundle loaded on one device per role.
pub struct MultiModel<'b> {
    bundle: Bundle<'b>,
    parts: Vec<Box<dyn LoadedModel<'b> + 'b>>,
    names: Vec<&'b str>,
    emulated: Vec<bool>,
    plan: Vec<Xfer>,
    /// Host staging buffers (the container's buffers), by index.
    hosts: Vec<Vec<u8>>,
    /// Per role: its outputs after its run.
    outs: Vec<Vec<Vec<u8>>>,
    /// Per role: the host buffer each input is loaded from.
    loads: Vec<Vec<u32>>,
    /// Global state index → (role, the part's own state index).
    states: Vec<(usize, usize)>,
    report: FrameReport,
}

/// The device for role `i` of `names`: `opts.roles[i]` when devices are given per role, else
/// `opts.device`. A list of the wrong length is refused naming the roles (the first one without a
/// device, when too few are given).
fn role_device(opts: &LoadOptions, i: usize, names: &[&str]) -> anyhow::Result<DeviceChoice> {
    let n = names.len();
    let all = names.join(", ");
    match opts.roles.len() {
        0 => Ok(opts.device),
        k if k == n => Ok(opts.roles[i]),
        k if k < n => bail!(
            "no device given for role {} (this bundle has {n} device roles: {all}; give one device per role, comma-separated)",
            names[k]
        ),
        k => bail!(
            "{k} devices given but this bundle has {n} device roles ({all}): give one device per role, comma-separated"
        ),
    }
}

/// Load the multi-device `bundle`: every role's part on its device (`opts.roles`, or `opts.device`
/// for all). The parts are read from the container's bytes; `map` is not passed on (the CPU then
/// copies its weights instead of reading them in place).
pub fn load_multi<'b>(
    registry: &Registry,
    bundle: Bundle<'b>,
    _map: Option<&Arc<FileMap>>,
    opts: &LoadOptions,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    let m = *bundle.multi().context("not a multi-device bundle")?;
    let n = m.roles.len();
    // Resolve every role first, so that a wrong device is reported before any device is opened.
    let role_names = (0..n)
        .map(|i| Ok(bundle.part(i)?.0.name))
        .collect::<anyhow::Result<Vec<&str>>>()?;
    let mut chosen = Vec::with_capacity(n);
    for i in 0..n {
        let (role, part) = bundle.part(i)?;
        let choice = role_device(opts, i, &role_names)?;
        let spec = registry
            .resolve(choice, &part.body().target)
            .with_context(|| format!("role {}", role.name))?;
        chosen.push((role, part, spec));
    }
    let mut parts = Vec::with_capacity(n);
    let (mut names, mut emulated, mut states) = (Vec::new(), Vec::new(), Vec::new());
    for (r, (role, part, spec)) in chosen.into_iter().enumerate() {
        let part_opts = LoadOptions {
            device: DeviceChoice::Device(spec),
            roles: Vec::new(),
            trusted_keys: None, // the container's signature (checked by the caller) covers the parts
            ..opts.clone()
        };
        let loaded = registry
            .load(part, None, &part_opts)
            .with_context(|| format!("role {} on --device {}", role.name, spec.name))?;
        states.extend((0..loaded.states().len()).map(|s| (r, s)));
        names.push(role.name);
        emulated.push(spec.emulated.is_some());
        parts.push(loaded);
    }
    let body = bundle.body();
    let hosts = body
        .buffers
        .iter()
        .map(|b| b.map(|b| vec![0u8; b.size as usize]))
        .collect::<Result<Vec<_>, _>>()?;
    let plan = m.plan.iter().collect::<Result<Vec<_>, _>>()?;
    let mut loads: Vec<Vec<u32>> = parts
        .iter()
        .map(|p| vec![0; p.bundle().body().inputs.len()])
        .collect();
    let outs = parts
        .iter()
        .map(|p| {
            p.bundle()
                .body()
                .outputs
                .iter()
                .map(|t| t.map(|t| vec![0u8; t.byte_len() as usize]))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    for x in &plan {
        if let Xfer::Load { role, input, host } = *x {
            loads[role as usize][input as usize] = host;
        }
    }
    Ok(Box::new(MultiModel {
        bundle,
        parts,
        names,
        emulated,
        plan,
        hosts,
        outs,
        loads,
        states,
        report: FrameReport::default(),
    }))
}

impl<'b> MultiModel<'b> {
    /// Execute the plan once, the container's inputs already in their host buffers.
    fn frame(&mut self) -> anyhow::Result<()> {
        let start = Instant::now();
        let mut roles = Vec::new();
        let mut copies = Vec::new();
        // Per role: its run's phase counts and its input and output counts.
        let mut by_role: Vec<Option<(PhaseCounts, usize)>> = vec![None; self.parts.len()];
        // Per copy: its source and destination role.
        let mut ends = Vec::new();
        for i in 0..self.plan.len() {
            match self.plan[i] {
                // Loads are gathered by `run` of their role (the part copies its inputs in).
                Xfer::Load { .. } => {}
                Xfer::Run { role } => {
                    let r = role as usize;
                    let ins: Vec<&[u8]> = self.loads[r]
                        .iter()
                        .map(|&h| self.hosts[h as usize].as_slice())
                        .collect();
                    let mut outs: Vec<&mut [u8]> =
                        self.outs[r].iter_mut().map(Vec::as_mut_slice).collect();
                    let part = &mut self.parts[r];
                    let (timing, phases) = part
                        .run_phased(&ins, &mut outs)
                        .with_context(|| format!("role {}", self.names[r]))?;
                    by_role[r] = phases.clone().map(|p| (p, outs.len()));
                    roles.push(RoleFrame {
                        role: self.names[r].to_string(),
                        device: part.device_name(),
                        emulated: self.emulated[r],
                        timing,
                        usb: phases.as_ref().map(PhaseCounts::total),
                        phases,
                    });
                }
                Xfer::Store { role, output, host } => {
                    let (r, h) = (role as usize, host as usize);
                    self.hosts[h].copy_from_slice(&self.outs[r][output as usize]);
                    // A crossing when a later step loads this buffer into another role.
                    let to = self.plan[i + 1..].iter().find_map(|x| match *x {
                        Xfer::Load {
                            role: t,
                            host: hh,
                            input,
                        } if hh == host && t != role => Some((t as usize, input as usize)),
                        _ => None,
                    });
                    if let Some((t, input)) = to {
                        let label = self.bundle.body().buffers.get(h)?.label;
                        copies.push(CrossCopy {
                            label: label.to_string(),
                            from: self.names[r].to_string(),
                            to: self.names[t].to_string(),
                            bytes: self.hosts[h].len() as u64,
                            usb_out: None,
                            usb_in: None,
                        });
                        ends.push((r, t, input));
                    }
                }
            }
        }
        // The destination's run comes after the store: attribute the phases once every role ran.
        // Onto a device that counted each upload, the copy's own input; else the whole copy-in.
        for (c, &(from, to, input)) in copies.iter_mut().zip(&ends) {
            c.usb_out = by_role[from].as_ref().map(|(p, outs)| CopyCounts {
                usb: p.copy_out,
                tensors: *outs,
            });
            c.usb_in = by_role[to]
                .as_ref()
                .map(|(p, _)| match p.per_input.get(input) {
                    Some(&own) => CopyCounts {
                        usb: own,
                        tensors: 1,
                    },
                    None => CopyCounts {
                        usb: p.copy_in,
                        tensors: self.loads[to].len(),
                    },
                });
        }
        self.report = FrameReport {
            roles,
            copies,
            total_ns: start.elapsed().as_nanos() as u64,
        };
        Ok(())
    }

    fn put_inputs(&mut self, inputs: &[&[u8]]) -> anyhow::Result<()> {
        let body = self.bundle.body();
        if inputs.len() != body.inputs.len() {
            bail!(
                "expected {} inputs, got {}",
                body.inputs.len(),
                inputs.len()
            );
        }
        for (t, data) in body.inputs.iter().zip(inputs) {
            let t = t?;
            let dst = &mut self.hosts[t.buffer as usize];
            if data.len() != dst.len() {
                bail!(
                    "input {} is {} bytes, expected {}",
                    t.name,
                    data.len(),
                    dst.len()
                );
            }
            dst.copy_from_slice(data);
        }
        Ok(())
    }

    fn take_outputs(&self, outputs: &mut [&mut [u8]]) -> anyhow::Result<()> {
        let body = self.bundle.body();
        if outputs.len() != body.outputs.len() {
            bail!(
                "expected {} outputs, got {}",
                body.outputs.len(),
                outputs.len()
            );
        }
        for (t, out) in body.outputs.iter().zip(outputs.iter_mut()) {
            let t = t?;
            let src = &self.hosts[t.buffer as usize];
            if out.len() != src.len() {
                bail!(
                    "output {} is {} bytes, expected {}",
                    t.name,
                    src.len(),
                    out.len()
                );
            }
            out.copy_from_slice(src);
        }
        Ok(())
    }

    /// The sum of the parts' timings for the last frame, the whole frame's wall time as the total.
    fn timing(&self) -> Timing {
        let mut t = Timing::default();
        for r in &self.report.roles {
            t.upload_ns += r.timing.upload_ns;
            t.enqueue_ns += r.timing.enqueue_ns;
            t.device_ns += r.timing.device_ns;
            t.download_ns += r.timing.download_ns;
        }
        t.total_ns = self.report.total_ns;
        t
    }
}

impl<'b> LoadedModel<'b> for MultiModel<'b> {
    fn bundle(&self) -> &Bundle<'b> {
        &self.bundle
    }

    fn run(&mut self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> anyhow::Result<Timing> {
        self.put_inputs(inputs)?;
        self.frame()?;
        self.take_outputs(outputs)?;
        Ok(self.timing())
    }

    fn device_name(&self) -> String {
        let each: Vec<String> = self
            .names
            .iter()
            .zip(&self.parts)
            .map(|(n, p)| format!("{n}: {}", p.device_name()))
            .collect();
        let real = self.emulated.iter().any(|e| !e);
        if real && self.parts.len() > 1 {
            // The composition itself (one device's outputs staged on the host into another) is only
            // tested on the device models.
            format!(
                "{} — composing real device drivers in one bundle: untested on hardware",
                each.join("; ")
            )
        } else {
            each.join("; ")
        }
    }

    fn computes_outputs(&self) -> bool {
        self.parts.iter().all(|p| p.computes_outputs())
    }

    fn states(&self) -> Vec<StateInfo<'b>> {
        let mut all = Vec::new();
        for p in &self.parts {
            all.extend(p.states());
        }
        for (i, s) in all.iter_mut().enumerate() {
            s.index = i;
        }
        all
    }

    fn read_state(&mut self, i: usize) -> anyhow::Result<Vec<u8>> {
        let &(r, s) = self
            .states
            .get(i)
            .with_context(|| format!("no state buffer {i}"))?;
        self.parts[r].read_state(s)
    }

    fn reset_state(&mut self) -> anyhow::Result<()> {
        for p in &mut self.parts {
            p.reset_state()?;
        }
        Ok(())
    }

    fn run_frame(
        &mut self,
        inputs: &mut [FrameInput<'_>],
        outputs: &mut [&mut [u8]],
        paths: &mut [InputPath],
    ) -> anyhow::Result<Timing> {
        if paths.len() < inputs.len() {
            bail!("{} path slots for {} inputs", paths.len(), inputs.len());
        }
        let bytes: Vec<&[u8]> = inputs
            .iter()
            .map(|i| match i {
                FrameInput::Copy(d) => &**d,
                FrameInput::Borrow(d) => &**d,
            })
            .collect();
        self.put_inputs(&bytes)?;
        for (p, i) in paths.iter_mut().zip(inputs.iter()) {
            *p = match i {
                FrameInput::Copy(_) => InputPath::Copied,
                FrameInput::Borrow(_) => InputPath::CopiedInstead(
                    "a multi-device bundle stages its inputs in host buffers (its transfer plan)",
                ),
            };
        }
        self.frame()?;
        self.take_outputs(outputs)?;
        Ok(self.timing())
    }

    fn usb_counts(&mut self) -> Option<UsbCounts> {
        let mut sum: Option<UsbCounts> = None;
        for p in &mut self.parts {
            if let Some(c) = p.usb_counts() {
                let s = sum.get_or_insert_with(UsbCounts::default);
                s.control += c.control;
                s.bulk += c.bulk;
                s.bytes_out += c.bytes_out;
                s.bytes_in += c.bytes_in;
            }
        }
        sum
    }

    fn frame_report(&self) -> Option<FrameReport> {
        Some(self.report.clone())
    }
}
