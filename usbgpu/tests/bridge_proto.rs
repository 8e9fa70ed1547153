//! Property tests of the pure ASM24 encoders: every encoded request decodes back to its fields, byte
//! enables and lane extraction agree with the spec's formulas (§3.3/§3.4), SRAM arms cover their data.
use modelrt_hal::pci::Bdf;
use modelrt_usbgpu::asm24::proto::{
    self, Completion, CplStatus, SramArm, TlpMode, TlpRequest, SECTOR, SLOT, SRAM_SIZE,
};
use proptest::prelude::*;

fn access() -> impl Strategy<Value = (u8, u8)> {
    (0u8..4).prop_flat_map(|off| (Just(off), 1u8..=(4 - off)))
}

proptest! {
    #[test]
    fn config_requests_round_trip(bus in any::<u8>(), dev in 0u8..32, func in 0u8..8, reg_dw in 0u16..0x400,
                                  (off, size) in access(), value in any::<u32>(), write in any::<bool>()) {
        let bdf = Bdf { bus, dev, func };
        let reg = reg_dw * 4 + off as u16;
        let req = if write { proto::config_write(bdf, reg, size, value) } else { proto::config_read(bdf, reg, size) }.unwrap();
        let back = TlpRequest::decode(req.value(), req.index(), &req.payload()).unwrap();
        prop_assert_eq!(back, req);
        // Type 1 exactly when bus > 0; write bit 0x40.
        prop_assert_eq!(req.fmt_type & 1, (bus > 0) as u8);
        prop_assert_eq!(req.fmt_type & 0x40 != 0, write);
        prop_assert_eq!(req.address & 3, 0);
        let (b2, r2) = proto::decode_config_address(req.address);
        prop_assert_eq!(b2, bdf);
        prop_assert_eq!(r2, reg & !3);
        prop_assert_eq!(req.byte_enable as u32, ((1u32 << size) - 1) << off);
        prop_assert!(req.expects_completion(), "config reads and writes both wait for the completion");
        if write {
            let mask = if size == 4 { u32::MAX } else { (1u32 << (8 * size)) - 1 };
            prop_assert_eq!(proto::extract_lanes(req.data, off, size), value & mask);
        }
    }

    #[test]
    fn memory_requests_round_trip(addr in any::<u64>(), (_, size) in access(), value in any::<u32>()) {
        let off = (addr & 3) as u8;
        prop_assume!(off + size <= 4);
        let w = proto::mem_write(addr, size, value).unwrap();
        prop_assert!(!w.expects_completion());
        prop_assert_eq!(w.address, addr & !3);
        prop_assert_eq!(TlpRequest::decode(w.value(), w.index(), &w.payload()).unwrap(), w);
        let r = proto::mem_read(addr, size).unwrap();
        prop_assert!(r.expects_completion());
        prop_assert_eq!(r.mode, TlpMode::Single);
    }

    #[test]
    fn streams_carry_dword_counts(addr_dw in any::<u32>(), dwords in 1usize..100_000) {
        let addr = addr_dw as u64 * 4;
        let w = proto::stream_write(addr, dwords * 4).unwrap();
        let r = proto::stream_read(addr, dwords * 4).unwrap();
        prop_assert_eq!((w.value(), w.index(), w.data as usize), (0x0F60, 1, dwords));
        prop_assert_eq!((r.value(), r.index(), r.data as usize), (0x0F20, 2, dwords));
        prop_assert_eq!(TlpRequest::decode(r.value(), r.index(), &r.payload()).unwrap(), r);
        prop_assert!(proto::stream_write(addr, dwords * 4 + 1).is_err());
    }

    #[test]
    fn completion_bytes_round_trip(raw in any::<[u8; 8]>()) {
        let c = Completion::from_bytes(&raw);
        prop_assert_eq!(c.to_bytes(), raw);
        prop_assert_eq!(c.status().bits(), raw[4] >> 5);
        let expect_ok = raw[4] >> 5 == 0;
        prop_assert_eq!(c.status() == CplStatus::Success, expect_ok);
    }

    #[test]
    fn write_arms_cover_the_payload(slot in 0usize..32, len in 1usize..=SRAM_SIZE) {
        match proto::sram_write_arm(slot, len) {
            Ok(arm) => {
                let wire = arm.wire_len();
                prop_assert!((len..len + SECTOR).contains(&wire) && wire.is_multiple_of(SECTOR));
                prop_assert!(slot * SLOT + wire <= SRAM_SIZE);
                prop_assert_eq!(arm.slots as usize, wire.div_ceil(SLOT));
                prop_assert_eq!(SramArm::decode(arm.value(), arm.index()), arm);
                prop_assert_eq!(arm.value() & 0x8000, 0);
            }
            Err(_) => prop_assert!(slot * SLOT + proto::sector_padded(len) > SRAM_SIZE),
        }
    }

    #[test]
    fn read_arms_cover_the_payload(len in 1usize..=SRAM_SIZE) {
        let arm = proto::sram_read_arm(len).unwrap();
        prop_assert_eq!(arm.value() & 0x8000, 0x8000);
        prop_assert_eq!(arm.value() as usize & 0x7FFF, len.div_ceil(SECTOR));
        prop_assert_eq!((arm.index() >> 8) as usize, len.div_ceil(SLOT));
        prop_assert_eq!(arm.index() & 0xFF, 0);
    }

    #[test]
    fn decode_never_panics(value in any::<u16>(), index in any::<u16>(), payload in proptest::collection::vec(any::<u8>(), 0..20)) {
        let r = TlpRequest::decode(value, index, &payload);
        prop_assert_eq!(r.is_ok(), payload.len() == 12 && index & 3 != 3);
    }
}
