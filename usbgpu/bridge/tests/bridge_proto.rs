//! Property tests of the driver's ASM24 encoders (`modelrt_asm24::proto`) against the emulator's decoder
//! (`emu::bridge::wire`), which is written separately from the tables of docs/hw/asm24-bridge.md:
//! every encoded request decodes to its fields, byte enables and lane extraction agree with the
//! formulas of §3.3/§3.4, SRAM arms cover their data, and the driver reads back the completions the
//! emulator builds.
use modelrt_asm24::emu::bridge::wire::{self, ConfigTarget, OutRequest, TlpKind};
use modelrt_asm24::proto::{self, Completion, CplStatus, TlpRequest, SECTOR, SLOT, SRAM_SIZE};
use modelrt_hal::pci::Bdf;
use proptest::prelude::*;

fn access() -> impl Strategy<Value = (u8, u8)> {
    (0u8..4).prop_flat_map(|off| (Just(off), 1u8..=(4 - off)))
}

/// The emulator's reading of a request the driver encoded.
fn decoded(req: &TlpRequest) -> wire::TlpRequest {
    wire::decode_tlp(req.value(), req.index(), &req.payload()).expect("decodes")
}

/// A mode-0 request as the emulator reads it: (kind, lanes, dword address, data).
fn single(req: &TlpRequest) -> (TlpKind, (u8, u8), u64, u32) {
    match decoded(req) {
        wire::TlpRequest::Single {
            kind,
            byte_enable,
            address,
            data,
        } => (
            kind,
            wire::lanes(byte_enable).expect("contiguous lanes"),
            address,
            data,
        ),
        other => panic!("not mode 0: {other:?}"),
    }
}

proptest! {
    #[test]
    fn config_requests_decode_to_their_fields(bus in any::<u8>(), dev in 0u8..32, func in 0u8..8, reg_dw in 0u16..0x400,
                                              (off, size) in access(), value in any::<u32>(), write in any::<bool>()) {
        let bdf = Bdf { bus, dev, func };
        let reg = reg_dw * 4 + off as u16;
        let req = if write { proto::config_write(bdf, reg, size, value) } else { proto::config_read(bdf, reg, size) }.unwrap();
        let (kind, lanes, address, data) = single(&req);
        let type1 = bus > 0;
        let expect_kind = if write { TlpKind::ConfigWrite { type1 } } else { TlpKind::ConfigRead { type1 } };
        prop_assert_eq!(kind, expect_kind);
        prop_assert_eq!(wire::config_target(address), ConfigTarget { bus, device: dev, function: func, register: reg & !3 });
        prop_assert_eq!(lanes, (off, size));
        prop_assert!(!kind.posted() && req.expects_completion(), "config reads and writes both wait for the completion");
        if write {
            let mask = if size == 4 { u32::MAX } else { (1u32 << (8 * size)) - 1 };
            prop_assert_eq!(proto::extract_lanes(data, off, size), value & mask);
        }
    }

    #[test]
    fn memory_requests_decode_to_their_fields(addr in any::<u64>(), (_, size) in access(), value in any::<u32>()) {
        let off = (addr & 3) as u8;
        prop_assume!(off + size <= 4);
        let w = proto::mem_write(addr, size, value).unwrap();
        let (kind, lanes, address, data) = single(&w);
        prop_assert_eq!((kind, lanes, address), (TlpKind::MemWrite, (off, size), addr & !3));
        let mask = if size == 4 { u32::MAX } else { (1u32 << (8 * size)) - 1 };
        prop_assert_eq!(proto::extract_lanes(data, off, size), value & mask);
        prop_assert!(kind.posted() && !w.expects_completion());
        let r = proto::mem_read(addr, size).unwrap();
        let (kind, lanes, address, _) = single(&r);
        prop_assert_eq!((kind, lanes, address), (TlpKind::MemRead, (off, size), addr & !3));
        prop_assert!(!kind.posted() && r.expects_completion());
    }

    #[test]
    fn streams_carry_dword_counts(addr_dw in any::<u32>(), dwords in 1usize..100_000) {
        let addr = addr_dw as u64 * 4;
        let w = proto::stream_write(addr, dwords * 4).unwrap();
        let r = proto::stream_read(addr, dwords * 4).unwrap();
        prop_assert_eq!(decoded(&w), wire::TlpRequest::StreamWrite { address: addr, dwords: dwords as u32 });
        prop_assert_eq!(decoded(&r), wire::TlpRequest::StreamRead { address: addr, dwords: dwords as u32 });
        prop_assert!(!w.expects_completion() && !r.expects_completion());
        prop_assert!(proto::stream_write(addr, dwords * 4 + 1).is_err());
    }

    #[test]
    fn driver_reads_emulator_completions(data in any::<u32>(), bits in 0u8..8, engine in any::<u8>()) {
        let status = CplStatus::from_bits(bits);
        let c = Completion::from_bytes(&wire::completion(data, status, engine));
        prop_assert_eq!((c.data, c.status(), c.ret_status), (data, status, engine));
    }

    #[test]
    fn write_arms_cover_the_payload(slot in 0usize..32, len in 1usize..=SRAM_SIZE) {
        match proto::sram_write_arm(slot, len) {
            Ok(arm) => {
                let Ok(OutRequest::Sram(seen)) = wire::decode_out(0xF2, arm.value(), arm.index(), &[]) else {
                    panic!("0xF2 arm does not decode")
                };
                let bytes = seen.bytes();
                prop_assert!(!seen.to_host);
                prop_assert_eq!(bytes, arm.wire_len());
                prop_assert!((len..len + SECTOR).contains(&bytes) && bytes.is_multiple_of(SECTOR));
                prop_assert_eq!(seen.offset(), slot * SLOT);
                prop_assert!(seen.offset() + bytes <= SRAM_SIZE);
                prop_assert_eq!(seen.slots as usize, bytes.div_ceil(SLOT));
            }
            Err(_) => prop_assert!(slot * SLOT + proto::sector_padded(len) > SRAM_SIZE),
        }
    }

    #[test]
    fn read_arms_cover_the_payload(len in 1usize..=SRAM_SIZE) {
        let arm = proto::sram_read_arm(len).unwrap();
        let Ok(OutRequest::Sram(seen)) = wire::decode_out(0xF2, arm.value(), arm.index(), &[]) else {
            panic!("0xF2 arm does not decode")
        };
        prop_assert!(seen.to_host);
        prop_assert_eq!(seen.bytes(), len.div_ceil(SECTOR) * SECTOR);
        prop_assert_eq!((seen.offset(), seen.slots as usize), (0, len.div_ceil(SLOT)));
    }

    #[test]
    fn emulator_decode_never_panics(value in any::<u16>(), index in any::<u16>(), payload in proptest::collection::vec(any::<u8>(), 0..20)) {
        let r = wire::decode_tlp(value, index, &payload);
        let fmt = value as u8;
        let mode_ok = match index & 3 { 0 => true, 1 => fmt == 0x60, 2 => fmt == 0x20, _ => false };
        prop_assert_eq!(r.is_ok(), payload.len() == 12 && mode_ok);
    }
}
