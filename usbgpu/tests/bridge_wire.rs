//! Exact wire sequences of the driver against a scripted transport (independent of the emulator,
//! which shares the encoders): request codes, wValue/wIndex, payload bytes and host timeouts from the
//! spec's tables (§2, §6, §7, §8).
use modelrt_hal::pci::{Bdf, PciConfig};
use modelrt_hal::usb::{UsbError, UsbTransport};
use modelrt_usbgpu::asm24::Bridge;
use std::collections::VecDeque;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    CtrlOut {
        req: u8,
        value: u16,
        index: u16,
        data: Vec<u8>,
        timeout_ms: u128,
    },
    CtrlIn {
        req: u8,
        value: u16,
        index: u16,
        len: usize,
        timeout_ms: u128,
    },
    BulkOut {
        ep: u8,
        len: usize,
        timeout_ms: u128,
    },
    BulkIn {
        ep: u8,
        len: usize,
        timeout_ms: u128,
    },
    Sleep(u128),
}

/// Records every call; IN transfers are answered from `replies` in order.
#[derive(Default)]
struct Recorder {
    ops: Vec<Op>,
    replies: VecDeque<Vec<u8>>,
}

impl Recorder {
    /// Answer an IN transfer with the next scripted reply (none left: zero bytes).
    fn reply(&mut self, buf: &mut [u8]) -> usize {
        let r = self.replies.pop_front().unwrap_or_default();
        buf[..r.len()].copy_from_slice(&r);
        r.len()
    }
}

impl UsbTransport for Recorder {
    fn control_out(
        &mut self,
        req: u8,
        value: u16,
        index: u16,
        data: &[u8],
        t: Duration,
    ) -> Result<(), UsbError> {
        self.ops.push(Op::CtrlOut {
            req,
            value,
            index,
            data: data.to_vec(),
            timeout_ms: t.as_millis(),
        });
        Ok(())
    }
    fn control_in(
        &mut self,
        req: u8,
        value: u16,
        index: u16,
        buf: &mut [u8],
        t: Duration,
    ) -> Result<usize, UsbError> {
        self.ops.push(Op::CtrlIn {
            req,
            value,
            index,
            len: buf.len(),
            timeout_ms: t.as_millis(),
        });
        Ok(self.reply(buf))
    }
    fn bulk_out(&mut self, ep: u8, data: &[u8], t: Duration) -> Result<usize, UsbError> {
        self.ops.push(Op::BulkOut {
            ep,
            len: data.len(),
            timeout_ms: t.as_millis(),
        });
        Ok(data.len())
    }
    fn bulk_in(&mut self, ep: u8, buf: &mut [u8], t: Duration) -> Result<usize, UsbError> {
        self.ops.push(Op::BulkIn {
            ep,
            len: buf.len(),
            timeout_ms: t.as_millis(),
        });
        Ok(self.reply(buf))
    }
    fn sleep(&mut self, d: Duration) {
        self.ops.push(Op::Sleep(d.as_millis()));
    }
}

fn bridge(replies: &[&[u8]]) -> Bridge<Recorder> {
    Bridge::new(Recorder {
        ops: Vec::new(),
        replies: replies.iter().map(|r| r.to_vec()).collect(),
    })
}

#[test]
fn open_sequence_powers_on_once() {
    // §6/§7.1: E4 0xB450 len 1 → (≠0x78) F3 wValue 1, 10 s → E4 0xB450 must be 0x78.
    let mut b = bridge(&[&[0x00], &[0x78]]);
    b.ensure_link().unwrap();
    let read_ltssm = Op::CtrlIn {
        req: 0xE4,
        value: 0xB450,
        index: 0,
        len: 1,
        timeout_ms: 1000,
    };
    assert_eq!(
        b.transport().ops,
        [
            read_ltssm.clone(),
            Op::CtrlOut {
                req: 0xF3,
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
    let out = Op::CtrlOut {
        req: 0xF0,
        value: 0x0C05, // CfgRd1, BE 0b1100
        index: 0,
        data: vec![0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0],
        timeout_ms: 5000,
    };
    let cin = Op::CtrlIn {
        req: 0xF0,
        value: 0,
        index: 0,
        len: 8,
        timeout_ms: 5000,
    };
    // The retry re-issues the identical request.
    assert_eq!(
        b.transport().ops,
        [out.clone(), cin.clone(), Op::Sleep(1), out, cin]
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
    let ops = &b.transport().ops;
    let addr = [0x00, 0x00, 0x20, 0x10, 0, 0, 0, 0];
    let with = |n: u8| {
        let mut d = addr.to_vec();
        d.extend_from_slice(&[n, 0, 0, 0]);
        d
    };
    assert_eq!(
        ops,
        &[
            Op::CtrlOut {
                req: 0xF0,
                value: 0x0F20,
                index: 2,
                data: with(2),
                timeout_ms: 5000
            },
            Op::BulkIn {
                ep: 0x81,
                len: 8,
                timeout_ms: 30_000
            },
            Op::CtrlOut {
                req: 0xF0,
                value: 0x0F60,
                index: 1,
                data: with(4),
                timeout_ms: 5000
            },
            Op::BulkOut {
                ep: 0x02,
                len: 16,
                timeout_ms: 1000
            },
            Op::CtrlOut {
                req: 0xF2,
                value: 2,
                index: 0x0110,
                data: vec![],
                timeout_ms: 1000
            },
            Op::BulkOut {
                ep: 0x02,
                len: 1024,
                timeout_ms: 1000
            },
            Op::CtrlOut {
                req: 0xF2,
                value: 0x8002,
                index: 0x0100,
                data: vec![],
                timeout_ms: 1000
            },
            Op::BulkIn {
                ep: 0x81,
                len: 1024,
                timeout_ms: 10_000
            },
            Op::CtrlOut {
                req: 0xE5,
                value: 0xA800,
                index: 1,
                data: vec![],
                timeout_ms: 1000
            },
            Op::CtrlOut {
                req: 0xE5,
                value: 0xA801,
                index: 2,
                data: vec![],
                timeout_ms: 1000
            },
        ]
    );
}
