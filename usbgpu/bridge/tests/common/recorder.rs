//! A scripted USB transport for wire-level tests: it writes down every transfer the driver issues
//! as a [`Wire`] (and every pause as [`Wire::Sleep`]) and answers IN transfers from a queue of
//! replies — no emulator involved, so the driver's bytes are compared with an independent list.
#![allow(dead_code)]
use modelrt_hal::usb::{Transfer, UsbError, UsbTransport};
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::time::Duration;

/// Bulk payloads up to this size are kept as bytes, bigger ones as a SHA-256.
pub const INLINE_MAX: usize = 64;

/// What a bulk OUT carried: the bytes, or their SHA-256 (hex) when larger than [`INLINE_MAX`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    Bytes(Vec<u8>),
    Sha256(String),
}

impl Payload {
    pub fn of(data: &[u8]) -> Self {
        if data.len() <= INLINE_MAX {
            Payload::Bytes(data.to_vec())
        } else {
            Payload::Sha256(sha256(data))
        }
    }
}

pub fn sha256(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One transfer (or pause) as the device would see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wire {
    ControlOut {
        request: u8,
        value: u16,
        index: u16,
        data: Vec<u8>,
        timeout_ms: u64,
    },
    ControlIn {
        request: u8,
        value: u16,
        index: u16,
        length: usize,
        timeout_ms: u64,
    },
    BulkOut {
        endpoint: u8,
        length: usize,
        timeout_ms: u64,
        payload: Payload,
    },
    BulkIn {
        endpoint: u8,
        length: usize,
        timeout_ms: u64,
    },
    /// A pause on the transport's clock, in milliseconds.
    Sleep(u64),
}

/// Records transfers; IN transfers are answered from `replies` in order (none left: zero bytes).
#[derive(Default)]
pub struct Recorder {
    pub wires: Vec<Wire>,
    pub replies: VecDeque<Vec<u8>>,
}

impl Recorder {
    pub fn new(replies: impl IntoIterator<Item = Vec<u8>>) -> Self {
        Recorder {
            wires: Vec::new(),
            replies: replies.into_iter().collect(),
        }
    }

    /// The recorded transfers without the pauses.
    pub fn transfers(&self) -> Vec<Wire> {
        self.wires
            .iter()
            .filter(|w| !matches!(w, Wire::Sleep(_)))
            .cloned()
            .collect()
    }

    fn answer(&mut self, buf: &mut [u8]) -> Result<usize, UsbError> {
        let reply = self.replies.pop_front().unwrap_or_default();
        if reply.len() > buf.len() {
            return Err(UsbError::Overflow);
        }
        buf[..reply.len()].copy_from_slice(&reply);
        Ok(reply.len())
    }
}

impl UsbTransport for Recorder {
    fn transfer(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<usize, UsbError> {
        let timeout_ms = timeout.as_millis() as u64;
        let (wire, moved) = match t {
            Transfer::ControlOut(s, data) => (
                Wire::ControlOut {
                    request: s.request,
                    value: s.value,
                    index: s.index,
                    data: data.to_vec(),
                    timeout_ms,
                },
                Ok(data.len()),
            ),
            Transfer::ControlIn(s, buf) => (
                Wire::ControlIn {
                    request: s.request,
                    value: s.value,
                    index: s.index,
                    length: buf.len(),
                    timeout_ms,
                },
                self.answer(buf),
            ),
            Transfer::BulkOut(endpoint, data) => (
                Wire::BulkOut {
                    endpoint,
                    length: data.len(),
                    timeout_ms,
                    payload: Payload::of(data),
                },
                Ok(data.len()),
            ),
            Transfer::BulkIn(endpoint, buf) => (
                Wire::BulkIn {
                    endpoint,
                    length: buf.len(),
                    timeout_ms,
                },
                self.answer(buf),
            ),
        };
        self.wires.push(wire);
        moved
    }

    fn sleep(&mut self, duration: Duration) {
        self.wires.push(Wire::Sleep(duration.as_millis() as u64));
    }
}
