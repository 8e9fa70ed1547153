//! Normalisation shared by the two golden stream tests (golden.rs: IR3 path, golden_cl.rs: QCOM CL path): JSON
//! field readers, and the symbolic form that makes our stream and tinygrad's comparable — GPU addresses as (object,
//! offset), timeline values relative to the wait, buffer addresses in the kernel-argument region as markers.
#![allow(dead_code)]
use serde_json::Value;

pub fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub fn u(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

pub fn u32s(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| u(x) as u32).collect()
}

pub fn dims(v: &Value) -> [u32; 3] {
    let d = u32s(v);
    [d[0], d[1], d[2]]
}

/// A symbolic stream: plain dwords, or an address as (object name, offset) spanning two dwords.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    D(u32),
    A(String, u64),
}

pub fn normalise(dw: &[u32], objs: &[(String, u64, u64)]) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < dw.len() {
        if i + 1 < dw.len() {
            let a = dw[i] as u64 | (dw[i + 1] as u64) << 32;
            if let Some((n, b, _)) = objs.iter().find(|(_, b, s)| a >= *b && a < b + s) {
                out.push(Tok::A(n.clone(), a - b));
                i += 2;
                continue;
            }
        }
        out.push(Tok::D(dw[i]));
        i += 1;
    }
    out
}

/// Timeline values relative to the launch's wait REF (token 3 of the leading CP_WAIT_REG_MEM: header, 0x15,
/// address, REF).
pub fn relative_timeline(t: &mut [Tok]) {
    let Tok::D(base) = t[3].clone() else {
        panic!("wait REF is not a plain dword")
    };
    t[3] = Tok::D(0);
    let n = t.len();
    // signal = WFI, EVENT_WRITE{4, addr(2 tokens → 1), value}, EVENT_WRITE{4, dummy, 0}: value is 5 tokens from end
    if let Tok::D(v) = t[n - 5] {
        t[n - 5] = Tok::D(v.wrapping_sub(base));
    }
}

/// Replace every 8-byte-aligned u64 in `args` that equals a buffer VA with a marker, returning (bytes, markers).
pub fn normalise_args(args: &[u8], bufs: &[u64]) -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut b = args.to_vec();
    let mut marks = Vec::new();
    for at in (0..b.len().saturating_sub(7)).step_by(8) {
        let v = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        if let Some(i) = bufs.iter().position(|&x| x == v) {
            marks.push((at, i));
            b[at..at + 8].fill(0);
        }
    }
    (b, marks)
}
