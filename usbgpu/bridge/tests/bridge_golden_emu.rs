//! The bridge emulator's own request decoder (`emu::bridge::wire`, written from the protocol
//! tables, not from the driver's encoders) against tinygrad 0.14.0's recorded traffic
//! (`tests/golden/asm24_usb.json`): every control request tinygrad sent must decode to the operation
//! tinygrad was asked to do — address, length, byte enables and data — and every bulk transfer must
//! have the length the preceding arm announced. The completions the fake device answered must be
//! what the emulator would build for the value tinygrad read out of them.
use modelrt_asm24::emu::bridge::wire::{
    self, ConfigTarget, InRequest, OutRequest, SramArm, TlpKind, TlpRequest,
};
use modelrt_asm24::proto::CplStatus;

mod common {
    pub mod golden;
    pub mod recorder;
}
use common::golden::{cases, unhex, Case, Recorded};
use common::recorder::Wire;

fn decode_out(t: &Recorded) -> OutRequest {
    let Wire::ControlOut {
        request,
        value,
        index,
        ref data,
        ..
    } = t.wire
    else {
        panic!("not a control OUT: {:?}", t.wire)
    };
    wire::decode_out(request, value, index, data)
        .unwrap_or_else(|e| panic!("{:?} does not decode: {e:?}", t.wire))
}

fn decode_in(t: &Recorded) -> InRequest {
    let Wire::ControlIn {
        request,
        value,
        length,
        ..
    } = t.wire
    else {
        panic!("not a control IN: {:?}", t.wire)
    };
    wire::decode_in(request, value, length)
        .unwrap_or_else(|e| panic!("{:?} does not decode: {e:?}", t.wire))
}

fn bulk_len(t: &Recorded) -> usize {
    match t.wire {
        Wire::BulkOut { length, .. } | Wire::BulkIn { length, .. } => length,
        ref w => panic!("not a bulk transfer: {w:?}"),
    }
}

/// A mode-0 TLP as (kind, first byte lane, lane count, dword address, write data).
fn single(req: OutRequest) -> (TlpKind, (u8, u8), u64, u32) {
    match req {
        OutRequest::Tlp(TlpRequest::Single {
            kind,
            byte_enable,
            address,
            data,
        }) => (
            kind,
            wire::lanes(byte_enable).expect("contiguous byte enables"),
            address,
            data,
        ),
        other => panic!("not a mode-0 TLP: {other:?}"),
    }
}

/// The bytes `(first, count)` of a dword.
fn lane_value(dword: u32, (first, count): (u8, u8)) -> u32 {
    let v = dword >> (8 * first as u32);
    if count == 4 {
        v
    } else {
        v & ((1 << (8 * count as u32)) - 1)
    }
}

/// Checks a TLP case: the OUT decodes to the op, and each completion is the emulator's encoding of
/// the value tinygrad took from it.
fn check_tlp(case: &Case) {
    let size = case.int("size") as u8;
    let outs: Vec<&Recorded> = case
        .transfers
        .iter()
        .filter(|t| matches!(t.wire, Wire::ControlOut { .. }))
        .collect();
    let ins: Vec<&Recorded> = case
        .transfers
        .iter()
        .filter(|t| matches!(t.wire, Wire::ControlIn { .. }))
        .collect();
    for out in &outs {
        let (kind, lanes, address, data) = single(decode_out(out));
        match case.kind() {
            "config_read" | "config_write" => {
                let reg = case.int("reg") as u16;
                let expect = ConfigTarget {
                    bus: case.int("bus") as u8,
                    device: case.int("dev") as u8,
                    function: case.int("fn") as u8,
                    register: reg & !3,
                };
                assert_eq!(wire::config_target(address), expect, "{}", case.name);
                assert_eq!(lanes, ((reg & 3) as u8, size), "{}", case.name);
                let type1 = expect.bus > 0;
                if case.kind() == "config_read" {
                    assert_eq!(kind, TlpKind::ConfigRead { type1 }, "{}", case.name);
                } else {
                    assert_eq!(kind, TlpKind::ConfigWrite { type1 }, "{}", case.name);
                    assert_eq!(
                        lane_value(data, lanes),
                        case.int("value") as u32,
                        "{}",
                        case.name
                    );
                }
            }
            "mem_read" | "mem_write" => {
                let addr = case.int("address");
                assert_eq!(address, addr & !3, "{}", case.name);
                assert_eq!(lanes, ((addr & 3) as u8, size), "{}", case.name);
                if case.kind() == "mem_read" {
                    assert_eq!(kind, TlpKind::MemRead, "{}", case.name);
                } else {
                    assert_eq!(kind, TlpKind::MemWrite, "{}", case.name);
                    assert_eq!(
                        lane_value(data, lanes),
                        case.int("value") as u32,
                        "{}",
                        case.name
                    );
                }
            }
            other => unreachable!("{other}"),
        }
        // tinygrad reads a completion exactly for the TLPs the emulator does not treat as posted.
        assert_eq!(kind.posted(), ins.is_empty(), "{}: posted rule", case.name);
    }
    // One completion per attempt; all but the last report an engine error (the retry rule).
    if !ins.is_empty() {
        assert_eq!(
            ins.len(),
            outs.len(),
            "{}: one completion per attempt",
            case.name
        );
    }
    for (i, t) in ins.iter().enumerate() {
        assert_eq!(decode_in(t), InRequest::Completion, "{}", case.name);
        let reply = t.reply.as_deref().expect("inline completion");
        let last = i + 1 == ins.len();
        let dword = u32::from_le_bytes(reply[..4].try_into().unwrap());
        let engine = if last { 0 } else { reply[7] };
        assert!(
            last || engine != 0,
            "{}: a retried attempt carries an engine error",
            case.name
        );
        assert_eq!(
            wire::completion(dword, CplStatus::Success, engine),
            reply,
            "{}: completion bytes",
            case.name
        );
        if last && case.result.is_u64() {
            let lanes = single(decode_out(outs[0])).1;
            assert_eq!(
                lane_value(dword, lanes) as u64,
                case.result.as_u64().unwrap(),
                "{}: the value tinygrad read is the enabled lanes",
                case.name
            );
        }
    }
}

/// Every 0xF2 arm of `case` with the bulk transfer that follows it.
fn arms(case: &Case) -> Vec<(SramArm, usize)> {
    let t = &case.transfers;
    let mut out = Vec::new();
    for (i, x) in t.iter().enumerate() {
        if let Wire::ControlOut { request: 0xF2, .. } = x.wire {
            let OutRequest::Sram(arm) = decode_out(x) else {
                panic!("{}: 0xF2 is not an SRAM arm", case.name)
            };
            let bulk = t[i + 1..]
                .iter()
                .find(|b| matches!(b.wire, Wire::BulkOut { .. } | Wire::BulkIn { .. }))
                .map_or(0, bulk_len);
            out.push((arm, bulk));
        }
    }
    out
}

fn slots_for(bytes: usize) -> u8 {
    bytes.div_ceil(wire::SLOT_BYTES) as u8
}

fn check_case(case: &Case) {
    let t = &case.transfers;
    match case.kind() {
        "open" => {
            let ltssm = InRequest::XdataRead {
                address: 0xB450,
                len: 1,
            };
            assert_eq!(decode_in(&t[0]), ltssm);
            assert_eq!(decode_out(&t[1]), OutRequest::Power { on: true });
            assert_eq!(decode_in(&t[2]), ltssm);
        }
        "config_read" | "config_write" | "mem_read" | "mem_write" => check_tlp(case),
        "stream_write" | "stream_read" => {
            let (address, len) = (case.int("address"), case.int("len") as usize);
            let dwords = (len / 4) as u32;
            let expect = if case.kind() == "stream_write" {
                TlpRequest::StreamWrite { address, dwords }
            } else {
                TlpRequest::StreamRead { address, dwords }
            };
            assert_eq!(decode_out(&t[0]), OutRequest::Tlp(expect), "{}", case.name);
            assert_eq!(
                bulk_len(&t[1]),
                len,
                "{}: bulk carries the dwords",
                case.name
            );
            assert_eq!(t.len(), 2, "{}: no completion for streams", case.name);
        }
        "xdata_write" => {
            let (base, data) = (
                case.int("address") as u16,
                unhex(case.op["data"].as_str().unwrap()),
            );
            assert_eq!(t.len(), data.len(), "one request per byte");
            for (i, (x, v)) in t.iter().zip(data).enumerate() {
                let expect = OutRequest::XdataWrite {
                    address: base + i as u16,
                    value: v,
                };
                assert_eq!(decode_out(x), expect, "{}", case.name);
            }
        }
        "xdata_read" => {
            let mut next = case.int("address") as u16;
            let mut total = 0;
            for x in t {
                let InRequest::XdataRead { address, len } = decode_in(x) else {
                    panic!("{}: not an XDATA read", case.name)
                };
                assert_eq!(address, next, "{}: consecutive chunks", case.name);
                assert!(len <= wire::XDATA_READ_LIMIT);
                next += len as u16;
                total += len;
            }
            assert_eq!(total, case.int("len") as usize, "{}", case.name);
        }
        "power" => {
            let on = case.op["on"].as_bool().unwrap();
            assert_eq!(decode_out(&t[0]), OutRequest::Power { on }, "{}", case.name);
        }
        "sram_write" | "sram_read_arm" => {
            let len = case.int("len") as usize;
            let bytes = len.div_ceil(wire::SECTOR_BYTES) * wire::SECTOR_BYTES;
            let to_host = case.kind() == "sram_read_arm";
            let slot = if to_host { 0 } else { case.int("slot") as u8 };
            let [(arm, bulk)] = arms(case)[..] else {
                panic!("{}: one arm", case.name)
            };
            let expect = SramArm {
                to_host,
                sectors: (bytes / wire::SECTOR_BYTES) as u16,
                first_slot: slot,
                slots: slots_for(bytes),
            };
            assert_eq!(arm, expect, "{}", case.name);
            assert_eq!(arm.offset(), slot as usize * 0x4000, "{}", case.name);
            if !to_host {
                assert_eq!(bulk, arm.bytes(), "{}: bulk OUT = armed bytes", case.name);
            }
        }
        "sram_read" => assert_eq!(bulk_len(&t[0]), 1024, "{}", case.name),
        "copyin" | "copyout" => {
            let all = arms(case);
            assert!(!all.is_empty());
            for (arm, bulk) in all {
                assert_eq!(bulk, arm.bytes(), "{}: bulk = armed bytes", case.name);
                assert_eq!(arm.slots, slots_for(arm.bytes()), "{}", case.name);
                assert_eq!(arm.to_host, case.kind() == "copyout", "{}", case.name);
                if !arm.to_host {
                    assert!(
                        [0, 16].contains(&arm.first_slot),
                        "{}: copy window",
                        case.name
                    );
                }
            }
            let fence = t.iter().filter(|x| match x.wire {
                Wire::ControlOut { request: 0xE5, .. } => {
                    matches!(
                        decode_out(x),
                        OutRequest::XdataWrite {
                            address: 0xA800..=0xA807,
                            value: 0
                        }
                    )
                }
                Wire::ControlIn { request: 0xE4, .. } => {
                    decode_in(x)
                        == InRequest::XdataRead {
                            address: 0xA800,
                            len: 8,
                        }
                }
                _ => false,
            });
            let expect = if case.kind() == "copyin" { 8 + 4 } else { 0 };
            assert_eq!(fence.count(), expect, "{}: fence accesses", case.name);
        }
        other => panic!("{}: unknown kind {other}", case.name),
    }
}

#[test]
fn emulator_decoder_reads_every_tinygrad_request() {
    let cases = cases();
    for case in &cases {
        check_case(case);
    }
    let kinds: std::collections::BTreeSet<&str> = cases.iter().map(Case::kind).collect();
    for kind in [
        "open",
        "config_read",
        "config_write",
        "mem_read",
        "mem_write",
        "stream_write",
        "stream_read",
        "xdata_write",
        "xdata_read",
        "power",
        "sram_write",
        "sram_read_arm",
        "sram_read",
        "copyin",
        "copyout",
    ] {
        assert!(kinds.contains(kind), "no golden case of kind {kind}");
    }
}

/// Requests tinygrad never sends, decoded from the tables of docs/hw/asm24-bridge.md §3 and §5.
#[test]
fn spec_table_vectors() {
    use wire::Malformed;
    let tlp = |value: u16, index: u16| wire::decode_out(0xF0, value, index, &[0; 12]);
    // §3.2: messages (fmt & 0xB8 == 0x30) and the 3-dword memory write 0x40 are posted.
    for fmt in [0x30u8, 0x34, 0x70, 0x72] {
        let Ok(OutRequest::Tlp(TlpRequest::Single { kind, .. })) = tlp(0x0F00 | fmt as u16, 0)
        else {
            panic!("{fmt:#x}")
        };
        assert_eq!(kind, TlpKind::Message(fmt));
        assert!(kind.posted());
    }
    let Ok(OutRequest::Tlp(TlpRequest::Single { kind, .. })) = tlp(0x0F40, 0) else {
        panic!("0x40")
    };
    assert!(kind.posted());
    // §2: wIndex bits 1:0 = 3 is no mode.
    assert_eq!(tlp(0x0F20, 3), Err(Malformed::Mode(3)));
    // §5: a read arm may name any first slot: 2 sectors from slot 3 (SRAM 0xC000).
    let Ok(OutRequest::Sram(arm)) = wire::decode_out(0xF2, 0x8002, 0x0103, &[]) else {
        panic!("0xF2")
    };
    assert_eq!(
        (arm.to_host, arm.sectors, arm.offset(), arm.slots),
        (true, 2, 0xC000, 1)
    );
    // §3.5: completion status in byte 4 bits 7:5 — UR 0b001, CRS 0b010, CA 0b100.
    for (status, byte4) in [
        (CplStatus::UnsupportedRequest, 0x20),
        (CplStatus::ConfigRetry, 0x40),
        (CplStatus::CompleterAbort, 0x80),
    ] {
        assert_eq!(
            wire::completion(0x1234_5678, status, 0),
            [0x78, 0x56, 0x34, 0x12, byte4, 0, 0, 0]
        );
    }
    // §2: 0xF3 takes 1 (on) or 0 (off).
    assert_eq!(
        wire::decode_out(0xF3, 2, 0, &[]),
        Err(Malformed::PowerValue(2))
    );
}
