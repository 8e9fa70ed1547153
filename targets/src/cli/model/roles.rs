//! `modelrt bench` of a multi-device bundle: per frame, each role's device time and USB transfers,
//! the bytes of every cross-device copy with the USB transfers of its way off and onto a USB device
//! (the role's copy-out or copy-in phase, counted apart from its launch; that phase carries all of
//! the role's outputs or inputs, and the line says how many), and the total — summarised over the
//! timed frames.
use modelrt_targets::runner::{FrameReport, UsbCounts};
use serde_json::json;

use crate::cli::units;

/// The timed frames' per-role and per-copy figures.
pub struct RoleSummary {
    frames: usize,
    roles: Vec<RoleLine>,
    copies: Vec<CopyLine>,
    total_median_ns: u64,
}

struct CopyLine {
    label: String,
    from: String,
    to: String,
    bytes: u64,
    /// Per frame, averaged: the source role's copy-out and the destination role's copy-in on a
    /// USB link, with the number of tensors that phase moves (see `CopyCounts`).
    out: Option<(Usb, usize)>,
    inn: Option<(Usb, usize)>,
}

/// Per frame: (control, bulk, bytes out, bytes in), averaged.
type Usb = (f64, f64, f64, f64);

fn mean(each: impl Iterator<Item = UsbCounts>, n: f64) -> Usb {
    each.fold((0.0, 0.0, 0.0, 0.0), |a, c| {
        (
            a.0 + c.control as f64 / n,
            a.1 + c.bulk as f64 / n,
            a.2 + c.bytes_out as f64 / n,
            a.3 + c.bytes_in as f64 / n,
        )
    })
}

/// `N transfers (C control, B bulk; X KiB out, Y KiB in)`.
fn usb_text((c, b, o, i): Usb) -> String {
    format!(
        "{:.0} transfers ({c:.0} control, {b:.0} bulk; {:.1} KiB out, {:.1} KiB in)",
        c + b,
        o / 1024.0,
        i / 1024.0
    )
}

fn usb_json(u: Option<(Usb, usize)>) -> serde_json::Value {
    match u {
        Some(((c, b, o, i), tensors)) => json!({
            "usb_control_per_frame": c,
            "usb_bulk_per_frame": b,
            "usb_bytes_out_per_frame": o,
            "usb_bytes_in_per_frame": i,
            "tensors_in_phase": tensors,
        }),
        None => serde_json::Value::Null,
    }
}

struct RoleLine {
    role: String,
    device: String,
    emulated: bool,
    median_ns: u64,
    /// Per frame: (control, bulk, bytes out, bytes in), averaged.
    usb: Option<Usb>,
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

impl RoleSummary {
    /// `None` unless the frames came from a multi-device bundle.
    pub fn of(frames: &[FrameReport]) -> Option<RoleSummary> {
        let first = frames.first()?;
        let n = frames.len() as f64;
        let roles = first
            .roles
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let each = frames.iter().filter_map(|f| f.roles.get(i));
                let usb = r.usb.map(|_| mean(each.clone().filter_map(|x| x.usb), n));
                RoleLine {
                    role: r.role.clone(),
                    device: r.device.clone(),
                    emulated: r.emulated,
                    median_ns: median(each.map(|x| x.timing.total_ns).collect()),
                    usb,
                }
            })
            .collect();
        let copies = first
            .copies
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let each = frames.iter().filter_map(move |f| f.copies.get(i));
                CopyLine {
                    label: c.label.clone(),
                    from: c.from.clone(),
                    to: c.to.clone(),
                    bytes: c.bytes,
                    out: c.usb_out.map(|o| {
                        (
                            mean(each.clone().filter_map(|x| x.usb_out).map(|x| x.usb), n),
                            o.tensors,
                        )
                    }),
                    inn: c.usb_in.map(|o| {
                        (
                            mean(each.clone().filter_map(|x| x.usb_in).map(|x| x.usb), n),
                            o.tensors,
                        )
                    }),
                }
            })
            .collect();
        Some(RoleSummary {
            frames: frames.len(),
            roles,
            copies,
            total_median_ns: median(frames.iter().map(|f| f.total_ns).collect()),
        })
    }

    /// The text lines.
    pub fn lines(&self, unit: &str) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.roles {
            let usb = match r.usb {
                Some((c, b, o, i)) => format!(
                    "; usb {:.0} transfers per {unit} ({c:.0} control, {b:.0} bulk; {:.1} KiB out, {:.1} KiB in: its inputs' copy-in, launches and outputs' copy-out)",
                    c + b,
                    o / 1024.0,
                    i / 1024.0
                ),
                None => String::new(),
            };
            out.push(format!(
                "role        {} on {}: median {} per {unit}{}{usb}",
                r.role,
                r.device,
                units::duration(r.median_ns),
                if r.emulated {
                    " (emulated: modelled)"
                } else {
                    ""
                }
            ));
        }
        for c in &self.copies {
            let side = |u: Option<(Usb, usize)>, way: &str, role: &str| {
                match u {
                Some((u, 1)) if u.0 + u.1 == 0.0 => format!(
                    "; {way} {role}: no USB transfer of its own (the device sends it with the launch's commands)"
                ),
                Some((u, 1)) => format!("; {way} {role}: usb {} per {unit}", usb_text(u)),
                Some((u, k)) => format!(
                    "; {way} {role}: usb {} per {unit} for all {k} of its tensors (the device moves them in one phase)",
                    usb_text(u)
                ),
                None => String::new(),
            }
            };
            out.push(format!(
                "copy        {}: {} → host → {}, {} per {unit}{}{}",
                c.label,
                c.from,
                c.to,
                units::size(c.bytes),
                side(c.out, "off", &c.from),
                side(c.inn, "onto", &c.to),
            ));
        }
        out.push(format!(
            "frame       median {} per {unit} over {} (every role and host staging)",
            units::duration(self.total_median_ns),
            units::plural(self.frames as u64, unit)
        ));
        out
    }

    /// The `--json` record.
    pub fn json(&self) -> serde_json::Value {
        json!({
            "frame_median_ns": self.total_median_ns,
            "per_role": self.roles.iter().map(|r| json!({
                "role": r.role,
                "device": r.device,
                "emulated": r.emulated,
                "median_ns": r.median_ns,
                "usb_control_per_frame": r.usb.map(|u| u.0),
                "usb_bulk_per_frame": r.usb.map(|u| u.1),
                "usb_bytes_out_per_frame": r.usb.map(|u| u.2),
                "usb_bytes_in_per_frame": r.usb.map(|u| u.3),
            })).collect::<Vec<_>>(),
            "copies": self.copies.iter().map(|c| json!({
                "label": c.label, "from": c.from, "to": c.to, "bytes_per_frame": c.bytes,
                "usb_off_source": usb_json(c.out),
                "usb_onto_destination": usb_json(c.inn),
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use modelrt_platform::{CopyCounts, CrossCopy, RoleFrame};

    fn copy(label: &str, usb_in: Option<CopyCounts>) -> CrossCopy {
        CrossCopy {
            label: label.into(),
            from: "warp".into(),
            to: "model".into(),
            bytes: 24576,
            usb_out: None,
            usb_in,
        }
    }

    #[test]
    fn each_copy_line_names_its_own_transfers_or_why_not() {
        let usb = |control, bulk, bytes_out| UsbCounts {
            control,
            bulk,
            bytes_out,
            bytes_in: 0,
        };
        let frame = FrameReport {
            roles: vec![RoleFrame {
                role: "model".into(),
                device: "usb-emu".into(),
                emulated: true,
                timing: Default::default(),
                usb: Some(usb(12, 12, 25000)),
                phases: None,
            }],
            copies: vec![
                copy(
                    "own",
                    Some(CopyCounts {
                        usb: usb(3, 3, 24652),
                        tensors: 1,
                    }),
                ),
                copy(
                    "inline",
                    Some(CopyCounts {
                        usb: usb(0, 0, 0),
                        tensors: 1,
                    }),
                ),
                copy(
                    "shared",
                    Some(CopyCounts {
                        usb: usb(3, 3, 24652),
                        tensors: 3,
                    }),
                ),
                copy("none", None),
            ],
            total_ns: 1,
        };
        let s = RoleSummary::of(&[frame.clone(), frame]).unwrap();
        let lines = s.lines("step");
        let line = |label: &str| {
            lines
                .iter()
                .find(|l| l.contains(&format!("copy        {label}:")))
                .unwrap()
                .clone()
        };
        assert!(
            line("own").ends_with("; onto model: usb 6 transfers (3 control, 3 bulk; 24.1 KiB out, 0.0 KiB in) per step"),
            "{lines:?}"
        );
        assert!(line("inline").contains("no USB transfer of its own"));
        assert!(line("shared").contains("for all 3 of its tensors"));
        assert!(line("none").ends_with("24.00 KiB per step"), "{lines:?}");
        let j = s.json();
        let own = &j["copies"][0]["usb_onto_destination"];
        assert_eq!(own["usb_control_per_frame"], 3.0);
        assert_eq!(own["usb_bytes_out_per_frame"], 24652.0);
        assert_eq!(own["tensors_in_phase"], 1);
        assert!(j["copies"][3]["usb_onto_destination"].is_null());
    }
}
