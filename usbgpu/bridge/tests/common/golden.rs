//! The golden USB vectors recorded from tinygrad 0.14.0's ASM24 driver
//! (`tests/golden/asm24_usb.json`, written by `tests/golden/record_usb_golden.py`), parsed into
//! plain Rust values in the shape of [`super::recorder`]'s [`Wire`]s. The recorder's `async` flag
//! is kept apart: whether the host waits for a transfer before issuing the next is not visible in
//! the bytes.
#![allow(dead_code)]
use super::recorder::{sha256, Payload, Wire};
use serde_json::Value;
use std::collections::VecDeque;

/// A recorded transfer: the wire view, tinygrad's async flag and what the fake device answered.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub wire: Wire,
    pub is_async: bool,
    /// Reply bytes of an IN transfer when stored inline.
    pub reply: Option<Vec<u8>>,
    /// SHA-256 of a large IN reply.
    pub reply_sha256: Option<String>,
}

/// One recorded operation.
#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub op: Value,
    pub result: Value,
    pub transfers: Vec<Recorded>,
}

impl Case {
    /// Field `key` of the operation as an integer.
    pub fn int(&self, key: &str) -> u64 {
        self.op[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{}: op field {key} missing", self.name))
    }

    pub fn kind(&self) -> &str {
        self.op["kind"].as_str().expect("op kind")
    }

    /// What the fake device answered to the case's IN transfers, in order. Large replies are stored
    /// as a hash: they are the pattern of the op's `seed` (or the next of its `seeds`) at the
    /// transfer's length, checked against the recorded hash here.
    pub fn replies(&self) -> VecDeque<Vec<u8>> {
        let mut seeds: VecDeque<u64> = match (&self.op["seed"], &self.op["seeds"]) {
            (Value::Number(n), _) => [n.as_u64().expect("seed")].into(),
            (_, Value::Array(a)) => a.iter().map(|s| s.as_u64().expect("seed")).collect(),
            _ => VecDeque::new(),
        };
        let mut out = VecDeque::new();
        for t in &self.transfers {
            if let Some(r) = &t.reply {
                out.push_back(r.clone());
            } else if let Some(hash) = &t.reply_sha256 {
                let Wire::BulkIn { length, .. } = t.wire else {
                    panic!("{}: hashed reply on a non-bulk transfer", self.name)
                };
                let seed = seeds.pop_front().expect("a seed per hashed reply");
                let reply = pattern(length, seed);
                assert_eq!(&sha256(&reply), hash, "{}: regenerated reply", self.name);
                out.push_back(reply);
            }
        }
        out
    }

    /// The wire view of the recorded transfers.
    pub fn wires(&self) -> Vec<Wire> {
        self.transfers.iter().map(|t| t.wire.clone()).collect()
    }

    /// The case's result as bytes (`{"bytes": hex}`) or as a hash (`{"sha256": hex}`).
    pub fn result_matches(&self, got: &[u8]) -> bool {
        match (
            self.result["bytes"].as_str(),
            self.result["sha256"].as_str(),
        ) {
            (Some(hex), _) => unhex(hex) == got,
            (_, Some(hash)) => sha256(got) == hash,
            _ => panic!("{}: result is not bytes", self.name),
        }
    }
}

/// Byte `i` of a payload with seed `s` is `(i * 131 + s) & 0xFF` (the recorder's formula).
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u64 * 131 + seed) & 0xFF) as u8)
        .collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex string {s:?}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn uint(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("transfer field {key} missing in {v}"))
}

fn parse_transfer(v: &Value) -> Recorded {
    let timeout_ms = uint(v, "timeout_ms");
    let ty = v["type"].as_str().expect("transfer type");
    let wire = match ty {
        "control_out" => Wire::ControlOut {
            request: uint(v, "request") as u8,
            value: uint(v, "value") as u16,
            index: uint(v, "index") as u16,
            data: unhex(v["data"].as_str().expect("data")),
            timeout_ms,
        },
        "control_in" => Wire::ControlIn {
            request: uint(v, "request") as u8,
            value: uint(v, "value") as u16,
            index: uint(v, "index") as u16,
            length: uint(v, "length") as usize,
            timeout_ms,
        },
        "bulk_out" => Wire::BulkOut {
            endpoint: uint(v, "endpoint") as u8,
            length: uint(v, "length") as usize,
            timeout_ms,
            payload: match v["data"].as_str() {
                Some(hex) => Payload::Bytes(unhex(hex)),
                None => Payload::Sha256(v["data_sha256"].as_str().expect("sha").to_owned()),
            },
        },
        "bulk_in" => Wire::BulkIn {
            endpoint: uint(v, "endpoint") as u8,
            length: uint(v, "length") as usize,
            timeout_ms,
        },
        other => panic!("unknown transfer type {other}"),
    };
    Recorded {
        wire,
        is_async: v["async"].as_bool().expect("async flag"),
        reply: v["reply"].as_str().map(unhex),
        reply_sha256: v["reply_sha256"].as_str().map(str::to_owned),
    }
}

/// Every case of the committed golden file.
pub fn cases() -> Vec<Case> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/asm24_usb.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let doc: Value = serde_json::from_str(&text).expect("golden JSON");
    assert!(
        doc["source"]
            .as_str()
            .unwrap_or("")
            .contains("tinygrad 0.14.0"),
        "golden vectors must come from tinygrad 0.14.0"
    );
    doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| Case {
            name: c["name"].as_str().expect("name").to_owned(),
            op: c["op"].clone(),
            result: c["result"].clone(),
            transfers: c["transfers"]
                .as_array()
                .expect("transfers")
                .iter()
                .map(parse_transfer)
                .collect(),
        })
        .collect()
}
