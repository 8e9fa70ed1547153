//! ROM_SW engine + SPI NOR driver against the Navi31 BAR5 emulator over `DirectMmio`: reads,
//! writes, quirks (RX lag, TX byte order, forced values), gating, protection and register restore.
use modelrt_gpuflash::emu::direct::{DirectMmio, ModelDelay, SharedModel};
use modelrt_gpuflash::emu::flash_board::{
    EngineMode, Gd25Config, Navi31Bar5, Navi31Config, RxLag, RESET_MIRROR, RESET_PADS,
    RESET_ROM_CNTL,
};
use modelrt_gpuflash::navi31::chips::GD25LQ16E;
use modelrt_gpuflash::navi31::regs::*;
use modelrt_gpuflash::navi31::romsw::{RomSw, RomSwConfig, RomSwError};
use modelrt_gpuflash::navi31::spi_nor::{FlashError, SpiNor};
use modelrt_gpuflash::navi31::writer::{write_image, write_image_until, WriteError, WriteOptions};
use modelrt_hal::embedded_hal::spi::{Operation, SpiDevice};

type Model = SharedModel<Navi31Bar5>;
type Engine = RomSw<DirectMmio<Model>, ModelDelay<Navi31Bar5>>;

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 8) as u8
        })
        .collect()
}

fn model_with(image: Vec<u8>, cfg: Navi31Config) -> Model {
    SharedModel::new(Navi31Bar5::new(image, cfg).expect("2 MiB image"))
}

fn engine(m: &Model) -> Result<Engine, RomSwError<modelrt_gpuflash::emu::direct::DirectError>> {
    RomSw::open(
        DirectMmio::new(m.clone()),
        m.delay(),
        RomSwConfig::default(),
    )
}

#[test]
fn jedec_status_and_sfdp() {
    let m = model_with(pattern(0x20_0000, 1), Navi31Config::default());
    let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
    assert_eq!(nor.chip(), Some(&GD25LQ16E));
    assert_eq!(&nor.jedec_capture()[..3], &[0xC8, 0x60, 0x15]);
    assert_eq!(nor.status1().unwrap(), 0);
    assert_eq!(nor.status3().unwrap(), Gd25Config::default().sr3);
    let mut sfdp = [0u8; 8];
    nor.read_sfdp(0, &mut sfdp).unwrap();
    assert_eq!(&sfdp[..4], b"SFDP");
    assert_eq!(m.lock().stats().misrouted_transactions, 0);
}

#[test]
fn reads_match_the_array_at_any_alignment_and_length() {
    let img = pattern(0x20_0000, 2);
    let m = model_with(img.clone(), Navi31Config::default());
    let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
    for &(addr, len) in &[
        (0usize, 1usize),
        (5, 3),
        (0x1234, 256),
        (0xFF, 257),
        (0x1F_FF00, 0x100),
        (0x7777, 4097),
    ] {
        let mut buf = vec![0u8; len];
        nor.read(addr as u32, &mut buf).unwrap();
        assert_eq!(buf, img[addr..addr + len], "read 0x{addr:X}+{len}");
    }
    let mut over = [0u8; 2];
    assert!(matches!(
        nor.read(0x1F_FFFF, &mut over),
        Err(FlashError::Range { .. })
    ));
}

#[test]
fn reads_work_with_either_rx_lag_model() {
    let img = pattern(0x20_0000, 3);
    let cfg = Navi31Config {
        rx_lag: RxLag::PreviousRx,
        ..Navi31Config::default()
    };
    let m = model_with(img.clone(), cfg);
    let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
    let mut buf = vec![0u8; 1000];
    nor.read(0x100, &mut buf).unwrap();
    assert_eq!(buf, img[0x100..0x100 + 1000]);
    // Writes (WREN check, busy polling) under the same lag model.
    nor.erase_sector(0x8000).unwrap();
    nor.program_page(0x8010, &[0x5A; 32]).unwrap();
    let mut page = vec![0u8; 256];
    nor.read(0x8000, &mut page).unwrap();
    assert_eq!(page[..16], [0xFF; 16]);
    assert_eq!(page[16..48], [0x5A; 32]);
    assert_eq!(page[48..], [0xFF; 208]);
}

#[test]
fn unprimed_read_returns_stale_bytes() {
    // The emulator's RX window lags one transaction: a single raw RDID returns the previous
    // capture, proving the driver's priming is needed (and exercised by the other tests).
    let m = model_with(pattern(0x20_0000, 4), Navi31Config::default());
    let mut mmio = DirectMmio::new(m.clone());
    let mut e = engine(&m).unwrap();
    let mut id = [0u8; 4];
    e.transaction(&mut [Operation::Write(&[0x9F]), Operation::Read(&mut id)])
        .unwrap();
    assert_eq!(&id[..3], &[0xC8, 0x60, 0x15]);
    e.close().unwrap();
    drop(e);
    // One raw RX transaction through the registers (docs/hw/navi31-spi-flash.md §3 steps, forced values set by hand).
    use modelrt_hal::mmio::Mmio;
    mmio.write32(GPIO_PAD_MASK, 0).unwrap();
    mmio.write32(GPIO_PAD_A, 0).unwrap();
    mmio.write32(GPIO_PAD_EN, 0).unwrap();
    mmio.write32(PAGE_MIRROR_CNTL, MIRROR_FIELD_FORCED).unwrap();
    mmio.write32(ROM_CNTL, 8).unwrap();
    mmio.write32(ROM_SW_STATUS, 0).unwrap();
    mmio.write32(ROM_SW_COMMAND, sw_command(0x35, 0)).unwrap();
    mmio.write32(ROM_SW_CNTL, sw_control(0, true, 1)).unwrap();
    assert_eq!(mmio.read32(ROM_SW_STATUS).unwrap() & 1, 1);
    // Window shows the previous transaction (the RDID capture of the closed session), not SR2.
    let w = mmio.read32(ROM_SW_DATA).unwrap();
    assert_eq!(w.to_le_bytes()[..3], [0xC8, 0x60, 0x15]);
}

#[test]
fn erase_program_roundtrip_and_program_only_clears_bits() {
    let m = model_with(vec![0xFF; 0x20_0000], Navi31Config::default());
    let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
    let data = pattern(256, 5);
    nor.program_page(0x3000, &data).unwrap();
    let mut back = vec![0u8; 256];
    nor.read(0x3000, &mut back).unwrap();
    assert_eq!(back, data);
    // Programming 0xFF over data changes nothing; programming 0x00 clears everything.
    nor.program_page(0x3000, &[0xFF; 16]).unwrap();
    nor.program_page(0x3010, &[0x00; 16]).unwrap();
    nor.read(0x3000, &mut back).unwrap();
    assert_eq!(back[..16], data[..16]);
    assert_eq!(back[16..32], [0u8; 16]);
    nor.erase_sector(0x3000).unwrap();
    nor.read(0x3000, &mut back).unwrap();
    assert_eq!(back, vec![0xFF; 256]);
    assert!(matches!(
        nor.program_page(0x30F0, &[0; 32]),
        Err(FlashError::CrossesPage { .. })
    ));
    assert!(matches!(
        nor.erase_sector(0x3100),
        Err(FlashError::Range { .. })
    ));
    assert_eq!(m.lock().flash().array()[0x3000..0x3100], [0xFF; 256]);
}

#[test]
fn cmp_protects_until_cleared_and_other_bits_survive() {
    let cfg = Navi31Config {
        flash: Gd25Config {
            sr2: 0x40 | 0x02,
            ..Gd25Config::default()
        },
        ..Navi31Config::default()
    };
    let m = model_with(vec![0xFF; 0x20_0000], cfg);
    let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
    assert!(nor.cmp_set().unwrap());
    // Protected: the program is silently ignored by the chip; read-back shows it.
    nor.program_page(0, &[0x12; 4]).unwrap();
    let mut b = [0u8; 4];
    nor.read(0, &mut b).unwrap();
    assert_eq!(b, [0xFF; 4]);
    nor.clear_cmp().unwrap();
    assert!(!nor.cmp_set().unwrap());
    assert_eq!(nor.status2().unwrap(), 0x02, "QE bit preserved");
    nor.program_page(0, &[0x12; 4]).unwrap();
    nor.read(0, &mut b).unwrap();
    assert_eq!(b, [0x12; 4]);
}

#[test]
fn session_restores_every_register() {
    let m = model_with(pattern(0x20_0000, 6), Navi31Config::default());
    {
        let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
        let mut b = [0u8; 300];
        nor.read(0, &mut b).unwrap();
        // Forced values are in place during the session.
        assert_eq!(m.lock().reg(GPIO_PAD_A) & GPIO_SPI_PAD_BITS, 0);
    } // dropped without close(): Drop restores
    let g = m.lock();
    assert_eq!(g.reg(ROM_CNTL), RESET_ROM_CNTL);
    assert_eq!(g.reg(PAGE_MIRROR_CNTL), RESET_MIRROR);
    assert_eq!(
        [g.reg(GPIO_PAD_MASK), g.reg(GPIO_PAD_A), g.reg(GPIO_PAD_EN)],
        RESET_PADS
    );
}

#[test]
fn gated_engine_is_reported_and_registers_restored() {
    let cfg = Navi31Config {
        engine: EngineMode::Gated,
        ..Navi31Config::default()
    };
    let m = model_with(pattern(0x20_0000, 7), cfg);
    let err = engine(&m).err().expect("gated");
    assert_eq!(err, RomSwError::Gated);
    assert!(err.to_string().contains("0x04000800"));
    let g = m.lock();
    assert_eq!(g.reg(ROM_CNTL), RESET_ROM_CNTL);
    assert_eq!(
        [g.reg(GPIO_PAD_MASK), g.reg(GPIO_PAD_A), g.reg(GPIO_PAD_EN)],
        RESET_PADS
    );
}

#[test]
fn missing_raw_controller_is_refused() {
    let cfg = Navi31Config {
        raw_controller: false,
        ..Navi31Config::default()
    };
    let m = model_with(pattern(0x20_0000, 8), cfg);
    assert_eq!(engine(&m).err(), Some(RomSwError::Unavailable));
}

#[test]
fn transaction_timeout_is_bounded_and_cleans_up() {
    // Gate the engine after the session opened: the next transaction never completes.
    let m = model_with(pattern(0x20_0000, 9), Navi31Config::default());
    let mut e = engine(&m).unwrap();
    m.lock().set_engine_mode(EngineMode::Gated);
    let mut id = [0u8; 4];
    let err = e
        .transaction(&mut [Operation::Write(&[0x9F]), Operation::Read(&mut id)])
        .unwrap_err();
    assert!(
        matches!(
            err,
            RomSwError::Timeout {
                status: SW_STATUS_GATED
            }
        ),
        "{err:?}"
    );
    // 2 ms fast phase at 20 µs (100 polls), then 1 ms polls up to 2 s (1998): bounded.
    let polls = e.stats().extra_polls;
    assert!(
        (2000..=2200).contains(&polls),
        "polled for the whole 2 s: {polls}"
    );
}

#[test]
fn slow_wire_time_is_polled_without_paying_1ms_per_transaction() {
    // 2 µs per SPI byte: a 256-byte read transaction takes ~0.5 ms of emulated time.
    let img = pattern(0x20_0000, 14);
    let cfg = Navi31Config {
        spi_ns_per_byte: 2_000,
        ..Navi31Config::default()
    };
    let m = model_with(img.clone(), cfg);
    let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
    let mut buf = vec![0u8; 4096];
    let t0 = m.lock().clock_ns();
    nor.read(0x2_0000, &mut buf).unwrap();
    let elapsed = m.lock().clock_ns() - t0;
    assert_eq!(buf, img[0x2_0000..0x2_1000]);
    let s = nor.spi_mut().stats();
    assert_eq!(
        s.transactions,
        17 + 2,
        "probe (2) + 16 pipelined chunks + 1"
    );
    assert!(s.extra_polls > 0, "the slow wire made the driver wait");
    // Wire time is 17 x 0.52 ms = 8.8 ms; 1 ms sleeping polls would need >= 17 ms.
    assert!(elapsed < 11_000_000, "{elapsed} ns for 17 transactions");
}

/// A SPI device that answers every read with a fixed byte pattern (no flash chip behind it).
struct FixedSpi(&'static [u8]);

impl modelrt_hal::embedded_hal::spi::ErrorType for FixedSpi {
    type Error = core::convert::Infallible;
}

impl SpiDevice for FixedSpi {
    fn transaction(&mut self, ops: &mut [Operation<'_, u8>]) -> Result<(), Self::Error> {
        for op in ops {
            if let Operation::Read(b) = op {
                for (i, x) in b.iter_mut().enumerate() {
                    *x = self.0[i % self.0.len()];
                }
            }
        }
        Ok(())
    }
}

struct NoDelay;
impl modelrt_hal::embedded_hal::delay::DelayNs for NoDelay {
    fn delay_ns(&mut self, _: u32) {}
}

#[test]
fn silent_bus_says_check_connection_and_unknown_chip_refuses_writes() {
    for pattern in [&[0xFFu8][..], &[0x00][..]] {
        let e = SpiNor::probe(FixedSpi(pattern), NoDelay)
            .err()
            .expect("no chip");
        assert!(matches!(e, FlashError::NoResponse { .. }));
        assert!(e.to_string().contains("check connection"), "{e}");
    }
    let mut nor = SpiNor::probe(FixedSpi(&[0xEF, 0x40, 0x18, 0x00]), NoDelay).unwrap();
    assert_eq!(nor.chip(), None);
    assert!(matches!(
        nor.erase_sector(0),
        Err(FlashError::UnknownChip { .. })
    ));
    assert!(matches!(
        nor.program_page(0, &[0]),
        Err(FlashError::UnknownChip { .. })
    ));
    let img = vec![0u8; 0x20_0000];
    let opts = WriteOptions {
        start_sector: 0,
        sector_count: None,
        clear_cmp: false,
    };
    let e = write_image(&mut nor, &img, None, &opts, |_| {}).unwrap_err();
    assert!(matches!(
        e,
        WriteError::Flash {
            error: FlashError::UnknownChip { .. },
            ..
        }
    ));
}

#[test]
fn writer_refuses_cmp_without_authorization_and_clears_it_with() {
    let cfg = Navi31Config {
        flash: Gd25Config {
            sr2: 0x40,
            ..Gd25Config::default()
        },
        ..Navi31Config::default()
    };
    let img = pattern(0x20_0000, 10);
    let m = model_with(vec![0xFF; 0x20_0000], cfg);
    let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
    let mut opts = WriteOptions {
        start_sector: 3,
        sector_count: Some(1),
        clear_cmp: false,
    };
    let e = write_image(&mut nor, &img, None, &opts, |_| {}).unwrap_err();
    assert_eq!(
        e,
        WriteError::Flash {
            sector: None,
            error: FlashError::CmpSet
        }
    );
    assert_eq!(
        m.lock().flash().sr2(),
        0x40,
        "not cleared without authorization"
    );
    opts.clear_cmp = true;
    let s = write_image(&mut nor, &img, None, &opts, |_| {}).unwrap();
    assert!(s.cleared_cmp && s.written == 1 && s.pages == 16);
    assert!(m.lock().flash().array()[0x3000..0x4000] == img[0x3000..0x4000]);
}

#[test]
fn writer_stops_at_first_mismatch_with_its_address() {
    // BP bits set (CMP clear): the emulated chip silently ignores erase/program, like a
    // protected part; the read-back must catch it at the first differing byte.
    let cfg = Navi31Config {
        flash: Gd25Config {
            sr1: 0x1C,
            ..Gd25Config::default()
        },
        ..Navi31Config::default()
    };
    let orig = vec![0xFF; 0x20_0000];
    let mut img = orig.clone();
    img[0x2000 + 0x123] = 0x42;
    img[0x5000] = 0x00;
    let m = model_with(orig, cfg);
    let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
    let mut events = Vec::new();
    let opts = WriteOptions {
        start_sector: 0,
        sector_count: None,
        clear_cmp: false,
    };
    let e = write_image(&mut nor, &img, None, &opts, |ev| events.push(ev)).unwrap_err();
    assert_eq!(
        e,
        WriteError::VerifyMismatch {
            address: 0x2123,
            flash: 0xFF,
            image: 0x42
        }
    );
    assert_eq!(
        events.len(),
        2,
        "sectors 0 and 1 skipped, stopped in sector 2"
    );
    assert_eq!(m.lock().flash().stats().erases, 0);
}

#[test]
fn writer_rejects_wrong_size_and_bad_ranges() {
    let m = model_with(vec![0xFF; 0x20_0000], Navi31Config::default());
    let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
    let opts = WriteOptions {
        start_sector: 0,
        sector_count: None,
        clear_cmp: false,
    };
    let e = write_image(&mut nor, &[0u8; 4096], None, &opts, |_| {}).unwrap_err();
    assert_eq!(
        e,
        WriteError::ImageSize {
            expected: 0x20_0000,
            actual: 4096
        }
    );
    let img = vec![0u8; 0x20_0000];
    for (start, count) in [(512, None), (0, Some(0)), (500, Some(13))] {
        let o = WriteOptions {
            start_sector: start,
            sector_count: count,
            clear_cmp: false,
        };
        assert!(matches!(
            write_image(&mut nor, &img, None, &o, |_| {}),
            Err(WriteError::BadRange { .. })
        ));
    }
    assert_eq!(m.lock().flash().stats().erases, 0);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    #[test]
    fn any_read_returns_the_array(addr in 0usize..0x20_0000, len in 1usize..1500) {
        let img = pattern(0x20_0000, 11);
        let len = len.min(0x20_0000 - addr);
        let m = model_with(img.clone(), Navi31Config::default());
        let mut nor = SpiNor::probe(engine(&m).unwrap(), NoDelay).unwrap();
        let mut buf = vec![0u8; len];
        nor.read(addr as u32, &mut buf).unwrap();
        proptest::prop_assert_eq!(&buf[..], &img[addr..addr + len]);
    }

    #[test]
    fn program_only_clears_bits(off in 0usize..256, data in proptest::collection::vec(0u8..=255, 1..64)) {
        let img = pattern(0x20_0000, 12);
        let m = model_with(img.clone(), Navi31Config::default());
        let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
        let len = data.len().min(256 - off);
        let addr = 0x4_0000 + off;
        nor.program_page(addr as u32, &data[..len]).unwrap();
        let g = m.lock();
        for i in 0..len {
            proptest::prop_assert_eq!(g.flash().array()[addr + i], img[addr + i] & data[i]);
        }
    }
}

#[test]
fn emulator_rejects_transactions_without_the_forced_values() {
    // Proves the `misrouted_transactions == 0` checks elsewhere can fail: a transaction issued
    // with the reset (unforced) pad/mirror/ROM_CNTL values never reaches the flash.
    use modelrt_hal::mmio::Mmio;
    let m = model_with(pattern(0x20_0000, 13), Navi31Config::default());
    let mut mmio = DirectMmio::new(m.clone());
    for _ in 0..2 {
        mmio.write32(ROM_SW_STATUS, 0).unwrap();
        mmio.write32(ROM_SW_COMMAND, sw_command(0x9F, 0)).unwrap();
        mmio.write32(ROM_SW_CNTL, sw_control(0, true, 4)).unwrap();
        assert_eq!(mmio.read32(ROM_SW_STATUS).unwrap(), 1);
    }
    assert_eq!(
        mmio.read32(ROM_SW_DATA).unwrap(),
        0xFFFF_FFFF,
        "MISO floats high"
    );
    assert_eq!(m.lock().stats().misrouted_transactions, 2);
}

#[test]
fn a_stop_request_ends_the_write_between_sectors_and_names_where_to_resume() {
    let orig = vec![0xFF; 0x20_0000];
    let img = pattern(0x20_0000, 11);
    let m = model_with(orig.clone(), Navi31Config::default());
    let mut nor = SpiNor::probe(engine(&m).unwrap(), m.delay()).unwrap();
    let opts = WriteOptions {
        start_sector: 4,
        sector_count: Some(10),
        clear_cmp: false,
    };
    // Asked before each sector: the third question says stop.
    let mut asked = 0;
    let s = write_image_until(
        &mut nor,
        &img,
        None,
        &opts,
        |_| {},
        || {
            asked += 1;
            asked > 2
        },
    )
    .unwrap();
    assert_eq!(s.stopped_at, Some(6));
    assert_eq!((s.written, s.skipped), (2, 0));
    let array = m.lock().flash().array().to_vec();
    // Whole sectors only: 4 and 5 are the image, 6 onwards untouched.
    assert!(array[0x4000..0x6000] == img[0x4000..0x6000]);
    assert!(array[0x6000..] == orig[0x6000..] && array[..0x4000] == orig[..0x4000]);
    // Resuming at the sector it named finishes the range.
    let rest = WriteOptions {
        start_sector: 6,
        sector_count: Some(8),
        clear_cmp: false,
    };
    let s = write_image(&mut nor, &img, None, &rest, |_| {}).unwrap();
    assert_eq!((s.written, s.stopped_at), (8, None));
    assert!(m.lock().flash().array()[0x4000..0xE000] == img[0x4000..0xE000]);
}
