//! Exact wire sequences of the driver against a scripted transport (independent of the emulator,
//! which decodes with its own code): request codes, wValue/wIndex, payload bytes and host timeouts from the
//! tables of docs/hw/asm24-bridge.md (§2, §6, §7, §8).
use modelrt_hal::pci::{Bdf, PciConfig};

use modelrt_asm24::Bridge;

mod common {
    pub mod recorder;
}
use common::recorder::{Payload, Recorder, Wire};

fn bridge(replies: &[&[u8]]) -> Bridge<Recorder> {
    Bridge::new(Recorder::new(replies.iter().map(|r| r.to_vec())))
}

#[test]
fn open_sequence_powers_on_once() {
    // §6/§7.1: E4 0xB450 len 1 → (≠0x78) F3 wValue 1, 10 s → E4 0xB450 must be 0x78.
    let mut b = bridge(&[&[0x00], &[0x78]]);
    b.ensure_link().unwrap();
    let read_ltssm = Wire::ControlIn {
        request: 0xE4,
        value: 0xB450,
        index: 0,
        length: 1,
        timeout_ms: 1000,
    };
    assert_eq!(
        b.transport().wires,
        [
            read_ltssm.clone(),
            Wire::ControlOut {
                request: 0xF3,
                value: 1,
                index: 0,
                data: vec![],
                timeout_ms: 10_000
            },
            read_ltssm,
        ]
    );
}

#[test]
fn config_read_is_out_then_in_with_retry_pause() {
    // First completion: ret_status 1 (retry after 1 ms); second: data 0x744C1002, status OK.
    let mut b = bridge(&[
        &[0, 0, 0, 0, 0, 0, 0, 1],
        &[0x02, 0x10, 0x4C, 0x74, 0, 0, 0, 0],
    ]);
    let v = b
        .config_read(
            Bdf {
                bus: 4,
                dev: 0,
                func: 0,
            },
            0x02,
            2,
        )
        .unwrap();
    assert_eq!(v, 0x744C, "upper half of the dword");
    let out = Wire::ControlOut {
        request: 0xF0,
        value: 0x0C05, // CfgRd1, BE 0b1100
        index: 0,
        data: vec![0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0],
        timeout_ms: 5000,
    };
    let cin = Wire::ControlIn {
        request: 0xF0,
        value: 0,
        index: 0,
        length: 8,
        timeout_ms: 5000,
    };
    // The retry re-issues the identical request.
    assert_eq!(
        b.transport().wires,
        [out.clone(), cin.clone(), Wire::Sleep(1), out, cin]
    );
}

#[test]
fn short_completion_is_an_error() {
    let mut b = bridge(&[&[0, 0, 0, 0]]);
    let err = b
        .config_read(
            Bdf {
                bus: 0,
                dev: 0,
                func: 0,
            },
            0,
            4,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "TLP completion (0xF0 IN): short control transfer: 4/8 bytes"
    );
}

#[test]
fn streams_and_sram_use_the_documented_endpoints_and_timeouts() {
    let mut b = bridge(&[&[0u8; 8], &[0u8; 1024]]);
    b.stream_read(0x1020_0000, &mut [0u8; 8]).unwrap();
    b.stream_write(0x1020_0000, &[0u8; 16]).unwrap();
    b.sram_write(16, &[0u8; 1024]).unwrap();
    b.sram_read_arm(1000).unwrap();
    b.sram_read(&mut [0u8; 1024]).unwrap();
    b.xdata_write(0xA800, &[1, 2]).unwrap();
    let ops = &b.transport().wires;
    let addr = [0x00, 0x00, 0x20, 0x10, 0, 0, 0, 0];
    let with = |n: u8| {
        let mut d = addr.to_vec();
        d.extend_from_slice(&[n, 0, 0, 0]);
        d
    };
    assert_eq!(
        ops,
        &[
            Wire::ControlOut {
                request: 0xF0,
                value: 0x0F20,
                index: 2,
                data: with(2),
                timeout_ms: 5000
            },
            Wire::BulkIn {
                endpoint: 0x81,
                length: 8,
                timeout_ms: 30_000
            },
            Wire::ControlOut {
                request: 0xF0,
                value: 0x0F60,
                index: 1,
                data: with(4),
                timeout_ms: 5000
            },
            Wire::BulkOut {
                endpoint: 0x02,
                length: 16,
                timeout_ms: 1000,
                payload: Payload::of(&[0u8; 16])
            },
            Wire::ControlOut {
                request: 0xF2,
                value: 2,
                index: 0x0110,
                data: vec![],
                timeout_ms: 1000
            },
            Wire::BulkOut {
                endpoint: 0x02,
                length: 1024,
                timeout_ms: 1000,
                payload: Payload::of(&[0u8; 1024])
            },
            Wire::ControlOut {
                request: 0xF2,
                value: 0x8002,
                index: 0x0100,
                data: vec![],
                timeout_ms: 1000
            },
            Wire::BulkIn {
                endpoint: 0x81,
                length: 1024,
                timeout_ms: 10_000
            },
            Wire::ControlOut {
                request: 0xE5,
                value: 0xA800,
                index: 1,
                data: vec![],
                timeout_ms: 1000
            },
            Wire::ControlOut {
                request: 0xE5,
                value: 0xA801,
                index: 2,
                data: vec![],
                timeout_ms: 1000
            },
        ]
    );
}
