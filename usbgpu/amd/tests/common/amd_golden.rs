//! The golden trace of tinygrad 0.14's own AM driver booting a Navi31-shaped GPU over its USB mock
//! (`golden/navi31_boot_run.json`, written by `golden/capture.py`; how and what was normalised:
//! `golden/README.md`), parsed into plain Rust values so a driver test can compare its own bus
//! sequence with tinygrad's.
//!
//! Events are in bus order per phase (`bringup`, `boot`, `setup`, `run`, `fini`). Register indices are BAR5
//! dword indices; identical consecutive reads were collapsed into one [`Event::Read`] with a count.
#![allow(dead_code)]
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Bytes of a VRAM write: inline when short, else only their zlib CRC-32.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VramData {
    Bytes(Vec<u8>),
    Crc32(u32),
}

/// One bus event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// BAR5 read of dword `reg` returning `value`, `count` times in a row.
    Read { reg: u32, value: u32, count: u32 },
    /// BAR5 write.
    Write { reg: u32, value: u32 },
    /// BAR0 (VRAM) write of `len` bytes at `offset` (contiguous writes merged).
    VramWrite {
        offset: u64,
        len: u64,
        data: VramData,
    },
    /// BAR0 read (contiguous reads merged).
    VramRead { offset: u64, len: u64 },
    /// BAR2 doorbell write.
    Doorbell { offset: u64, value: u64 },
    /// BAR2 read.
    DoorbellRead { offset: u64, len: u64 },
    /// A 0xF2 bulk write armed into bridge SRAM slot `slot` (16 KiB slots from XDATA 0xF000).
    SramWrite { slot: u32, len: u64 },
}

/// A PCI config write made during bring-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigWrite {
    pub phase: String,
    pub bus: u8,
    pub dev: u8,
    pub func: u8,
    pub offset: u16,
    pub value: u32,
    pub size: u8,
}

/// One IP block as tinygrad's driver decoded the mock's discovery table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedIp {
    pub hw_id: u16,
    pub version: (u8, u8, u8),
    /// Base-address tuple per instance (tinygrad keeps ten entries, zero-padded).
    pub instances: BTreeMap<u8, Vec<u64>>,
}

/// The discovery binary the mock put at `vram - 64 KiB` (trailing zeros trimmed) and tinygrad's reading of it.
#[derive(Clone, Debug)]
pub struct Discovery {
    pub table: Vec<u8>,
    pub decoded: Vec<DecodedIp>,
    /// tinygrad's GC info fields by name, plus `version` as `[major, minor]`.
    pub gc_info: Value,
}

/// The whole trace.
#[derive(Clone, Debug)]
pub struct Trace {
    pub vram_size: u64,
    pub discovery: Discovery,
    /// `"BLOCK:register"` per BAR5 dword index the trace touches (`"?"` where tinygrad's tables name none).
    pub names: BTreeMap<u32, String>,
    pub config_writes: Vec<ConfigWrite>,
    /// USB transfers per phase by kind (`ctrl_out_F0`, `bulk_in`, …).
    pub usb_counts: BTreeMap<String, BTreeMap<String, u64>>,
    pub phases: Vec<(String, Vec<Event>)>,
    /// The answers the capture froze in place of mock artefacts (SMU DPM levels, PSP TMR size, HDP remap).
    pub frozen_answers: Value,
}

fn int(v: &Value, what: &str) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("golden trace: {what} is not an integer: {v}"))
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex byte"))
        .collect()
}

fn discovery(d: &Value) -> Discovery {
    let decoded = d["decoded_by_tinygrad"]
        .as_array()
        .expect("decoded_by_tinygrad")
        .iter()
        .map(|ip| {
            let v: Vec<u8> = ip["version"]
                .as_array()
                .expect("version")
                .iter()
                .map(|x| int(x, "version") as u8)
                .collect();
            DecodedIp {
                hw_id: int(&ip["hw_id"], "hw_id") as u16,
                version: (v[0], v[1], v[2]),
                instances: ip["instances"]
                    .as_object()
                    .expect("instances")
                    .iter()
                    .map(|(i, b)| {
                        let bases = b
                            .as_array()
                            .expect("bases")
                            .iter()
                            .map(|x| int(x, "base"))
                            .collect();
                        (i.parse().expect("instance"), bases)
                    })
                    .collect(),
            }
        })
        .collect();
    Discovery {
        table: unhex(d["table_hex"].as_str().expect("table_hex")),
        decoded,
        gc_info: d["gc_info_by_tinygrad"].clone(),
    }
}

fn event(e: &Value) -> Event {
    let a = e.as_array().expect("event is an array");
    let n = |i: usize| int(&a[i], "event field");
    match a[0].as_str().expect("event kind") {
        "r" => Event::Read {
            reg: n(1) as u32,
            value: n(2) as u32,
            count: n(3) as u32,
        },
        "w" => Event::Write {
            reg: n(1) as u32,
            value: n(2) as u32,
        },
        "vw" => {
            let s = a[3].as_str().expect("vram data");
            let data = match s.strip_prefix("crc32:") {
                Some(h) => VramData::Crc32(u32::from_str_radix(h, 16).expect("crc32 hex")),
                None => VramData::Bytes(unhex(s)),
            };
            Event::VramWrite {
                offset: n(1),
                len: n(2),
                data,
            }
        }
        "vr" => Event::VramRead {
            offset: n(1),
            len: n(2),
        },
        "db" => Event::Doorbell {
            offset: n(1),
            value: n(2),
        },
        "dr" => Event::DoorbellRead {
            offset: n(1),
            len: n(2),
        },
        "sram" => Event::SramWrite {
            slot: n(1) as u32,
            len: n(2),
        },
        other => panic!("golden trace: unknown event kind {other}"),
    }
}

impl Trace {
    /// Load `golden/navi31_boot_run.json` of this crate.
    pub fn load() -> Trace {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/navi31_boot_run.json");
        Trace::parse(
            &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
        )
    }

    /// Parse a trace document.
    pub fn parse(text: &str) -> Trace {
        let v: Value = serde_json::from_str(text).expect("golden trace is JSON");
        let names = v["names"]
            .as_object()
            .expect("names")
            .iter()
            .map(|(k, n)| {
                (
                    k.parse().expect("dword index"),
                    n.as_str().expect("name").to_string(),
                )
            })
            .collect();
        let config_writes = v["config_writes"]
            .as_array()
            .expect("config_writes")
            .iter()
            .map(|c| ConfigWrite {
                phase: c[0].as_str().expect("phase").to_string(),
                bus: int(&c[1], "bus") as u8,
                dev: int(&c[2], "dev") as u8,
                func: int(&c[3], "fn") as u8,
                offset: int(&c[4], "offset") as u16,
                value: int(&c[5], "value") as u32,
                size: int(&c[6], "size") as u8,
            })
            .collect();
        let usb_counts = v["usb_counts"]
            .as_object()
            .expect("usb_counts")
            .iter()
            .map(|(ph, m)| {
                let m = m
                    .as_object()
                    .expect("counts")
                    .iter()
                    .map(|(k, c)| (k.clone(), int(c, "count")))
                    .collect();
                (ph.clone(), m)
            })
            .collect();
        let phases = v["phases"]
            .as_object()
            .expect("phases")
            .iter()
            .map(|(ph, evs)| {
                (
                    ph.clone(),
                    evs.as_array().expect("events").iter().map(event).collect(),
                )
            })
            .collect();
        Trace {
            vram_size: int(&v["vram_size"], "vram_size"),
            discovery: discovery(&v["discovery"]),
            names,
            config_writes,
            usb_counts,
            phases,
            frozen_answers: v["frozen_answers"].clone(),
        }
    }

    /// The events of `phase` (empty if the phase has none).
    pub fn phase(&self, phase: &str) -> &[Event] {
        self.phases
            .iter()
            .find(|(p, _)| p == phase)
            .map(|(_, e)| e.as_slice())
            .unwrap_or(&[])
    }

    /// `"BLOCK:register"` of a BAR5 dword index.
    pub fn name(&self, reg: u32) -> &str {
        self.names.get(&reg).map(String::as_str).unwrap_or("?")
    }

    /// The dword index named `name` (the part after `BLOCK:`), if the trace touches it.
    pub fn reg(&self, name: &str) -> Option<u32> {
        self.names
            .iter()
            .find(|(_, n)| n.split_once(':').map(|x| x.1) == Some(name))
            .map(|(r, _)| *r)
    }

    /// The register writes of `phase` as (name, value), in order.
    pub fn writes<'a>(&'a self, phase: &str) -> impl Iterator<Item = (&'a str, u32)> + 'a {
        self.phase(phase).iter().filter_map(move |e| match e {
            Event::Write { reg, value } => Some((self.name(*reg), *value)),
            _ => None,
        })
    }

    /// The values written to register `name` during `phase`, in order.
    pub fn values_written(&self, phase: &str, name: &str) -> Vec<u32> {
        let Some(r) = self.reg(name) else {
            return Vec::new();
        };
        self.phase(phase)
            .iter()
            .filter_map(|e| match e {
                Event::Write { reg, value } if *reg == r => Some(*value),
                _ => None,
            })
            .collect()
    }
}
