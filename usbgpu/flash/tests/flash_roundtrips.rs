//! Round-trip measurement: the session/pipelined ROM_SW driver versus the reference tool's naive
//! sequence (docs/hw/navi31-spi-flash.md §3: save 5, force 5, clear+check, command, TX dwords one by one, control write +
//! read-back, poll, RX burst, restore 7 — for the prime *and* the real read of every chunk).
//! The naive sequence lives only here, as the measured baseline; it also cross-checks that the
//! emulator serves the reference sequence of docs/hw/navi31-spi-flash.md §3. Run with `--nocapture` to see the figures.
use modelrt_gpuflash::emu::direct::{DirectMmio, SharedModel};
use modelrt_gpuflash::emu::flash_board::Navi31Bar5;
use modelrt_gpuflash::navi31::regs::*;
use modelrt_gpuflash::navi31::romsw::{RomSw, RomSwConfig};
use modelrt_gpuflash::navi31::spi_nor::SpiNor;
use modelrt_gpuflash::navi31::writer::{write_image, WriteOptions};
use modelrt_hal::embedded_hal::delay::DelayNs;
use modelrt_hal::embedded_hal::spi::SpiDevice;
use modelrt_hal::mmio::Mmio;

mod common {
    pub mod navi31;
}

use common::navi31::{behind_bridge, model};

const MIB2: usize = 0x20_0000;
const CLI_CHUNK: usize = 0x1_0000;

fn image() -> Vec<u8> {
    (0..MIB2)
        .map(|i| (i as u32).wrapping_mul(0x9E37_79B1).rotate_left(7) as u8)
        .collect()
}

/// The reference tool's transaction (docs/hw/navi31-spi-flash.md §3 steps 1–11), one access per register touch.
fn naive_txn<M: Mmio>(
    m: &mut M,
    opcode: u8,
    addr: u32,
    alen: u8,
    tx: &[u8],
    rx: Option<&mut [u8]>,
) -> Result<(), M::Error> {
    let saved = [
        m.read32(GPIO_PAD_MASK)?,
        m.read32(GPIO_PAD_A)?,
        m.read32(GPIO_PAD_EN)?,
        m.read32(PAGE_MIRROR_CNTL)?,
        m.read32(ROM_CNTL)?,
    ];
    m.write32(GPIO_PAD_MASK, saved[0] & !GPIO_SPI_PAD_BITS)?;
    m.write32(GPIO_PAD_A, saved[1] & !GPIO_SPI_PAD_BITS)?;
    m.write32(GPIO_PAD_EN, saved[2] & !GPIO_SPI_PAD_BITS)?;
    m.write32(PAGE_MIRROR_CNTL, mirror_transaction(saved[3]))?;
    m.write32(ROM_CNTL, rom_cntl_transaction(saved[4]))?;
    m.write32(ROM_SW_CNTL, 0)?;
    m.write32(ROM_SW_STATUS, 0)?;
    assert_eq!(m.read32(ROM_SW_STATUS)?, 0, "ROM_SW_STATUS did not clear");
    m.write32(ROM_SW_COMMAND, sw_command(opcode, addr))?;
    for (i, word) in tx.chunks(4).enumerate() {
        let mut b = [0u8; 4];
        b[..word.len()].copy_from_slice(word);
        m.write32(ROM_SW_DATA + 4 * i as u64, u32::from_be_bytes(b))?;
    }
    let count = rx.as_ref().map(|b| b.len()).unwrap_or(tx.len());
    m.write32(ROM_SW_CNTL, sw_control(alen, rx.is_some(), count as u16))?;
    m.read32(ROM_SW_CNTL)?;
    assert_eq!(
        m.read32(ROM_SW_STATUS)? & 1,
        1,
        "emulated transactions complete at once"
    );
    if let Some(out) = rx {
        let mut words = vec![0u32; count.div_ceil(4)];
        m.read_block(ROM_SW_DATA, &mut words)?;
        for (k, b) in out.iter_mut().enumerate() {
            *b = words[k / 4].to_le_bytes()[k % 4];
        }
    }
    m.write32(ROM_SW_CNTL, 0)?;
    m.write32(ROM_SW_STATUS, 0)?;
    m.write32(ROM_CNTL, saved[4])?;
    m.write32(PAGE_MIRROR_CNTL, saved[3])?;
    m.write32(GPIO_PAD_A, saved[1])?;
    m.write32(GPIO_PAD_EN, saved[2])?;
    m.write32(GPIO_PAD_MASK, saved[0])?;
    Ok(())
}

/// Reference read: every ≤256-byte chunk = prime + real 0x03 (docs/hw/navi31-spi-flash.md §4, §6 "read").
fn naive_read<M: Mmio>(m: &mut M, addr: u32, out: &mut [u8]) -> Result<(), M::Error> {
    for (i, chunk) in out.chunks_mut(256).enumerate() {
        let a = addr + 256 * i as u32;
        let mut prime = vec![0u8; chunk.len()];
        naive_txn(m, 0x03, a, 3, &[], Some(&mut prime))?;
        naive_txn(m, 0x03, a, 3, &[], Some(chunk))?;
    }
    Ok(())
}

/// Reference SR1 read: prime with 2 bytes, then the real 1-byte read (docs/hw/navi31-spi-flash.md §4).
fn naive_sr1<M: Mmio>(m: &mut M) -> Result<u8, M::Error> {
    let mut prime = [0u8; 2];
    naive_txn(m, 0x05, 0, 0, &[], Some(&mut prime))?;
    let mut sr1 = [0u8; 1];
    naive_txn(m, 0x05, 0, 0, &[], Some(&mut sr1))?;
    Ok(sr1[0])
}

/// Reference WREN + check, command, wait idle polling SR1 every 2 ms (docs/hw/navi31-spi-flash.md §5, §6).
fn naive_write_op<M: Mmio>(
    m: &mut M,
    model: &SharedModel<Navi31Bar5>,
    opcode: u8,
    addr: u32,
    data: &[u8],
) -> Result<(), M::Error> {
    naive_txn(m, 0x06, 0, 0, &[], None)?;
    assert_eq!(naive_sr1(m)? & 2, 2, "WEL");
    naive_txn(m, opcode, addr, 3, data, None)?;
    while naive_sr1(m)? & 1 != 0 {
        model.delay().delay_ms(2);
    }
    Ok(())
}

/// Reference sector write: erase, program the 16 pages, read back with primed reads.
fn naive_sector_write<M: Mmio>(
    m: &mut M,
    model: &SharedModel<Navi31Bar5>,
    base: u32,
    data: &[u8],
) -> Result<(), M::Error> {
    naive_write_op(m, model, 0x20, base, &[])?;
    for (i, page) in data.chunks(256).enumerate() {
        naive_write_op(m, model, 0x02, base + 256 * i as u32, page)?;
    }
    let mut back = vec![0u8; data.len()];
    naive_read(m, base, &mut back)?;
    assert!(back == data, "naive sector write verified");
    Ok(())
}

/// Engine open as the reference tool does it once per run (§3).
fn naive_open<M: Mmio>(m: &mut M) -> Result<(), M::Error> {
    let c = m.read32(ROM_CNTL)?;
    m.write32(ROM_CNTL, rom_cntl_engine_open(c, 8))
}

struct NoDelay;
impl DelayNs for NoDelay {
    fn delay_ns(&mut self, _: u32) {}
}

/// The whole flash read in `gpuflash`-sized chunks.
fn chunked_dump<S: SpiDevice, D: DelayNs>(nor: &mut SpiNor<S, D>) -> Vec<u8> {
    let mut all = vec![0u8; MIB2];
    for (i, chunk) in all.chunks_mut(CLI_CHUNK).enumerate() {
        nor.read((i * CLI_CHUNK) as u32, chunk).unwrap();
    }
    all
}

/// Accesses (or USB transfers) of the reference sequence ("naive") and of the session driver.
struct Comparison {
    naive_256: u64,
    fast_256: u64,
    naive_dump: u64,
    fast_dump: u64,
}

impl Comparison {
    /// Print the comparison under `title`; returns the session's cost per 256 bytes inside a dump.
    fn print(&self, title: &str) -> f64 {
        let Comparison {
            naive_256,
            fast_256,
            naive_dump,
            fast_dump,
        } = *self;
        let streamed_256 = fast_dump as f64 / (MIB2 / 256) as f64;
        println!("{title}");
        println!(
            "  256-byte read (isolated, open session): naive {naive_256}, session {fast_256} ({:.1}x)",
            naive_256 as f64 / fast_256 as f64
        );
        println!("  256-byte read (inside a dump):          naive {naive_256}, session {streamed_256:.2} ({:.1}x)", naive_256 as f64 / streamed_256);
        println!("  2 MiB dump:                             naive {naive_dump}, session {fast_dump} ({:.1}x)", naive_dump as f64 / fast_dump as f64);
        streamed_256
    }
}

#[test]
fn direct_mmio_accesses_fast_vs_naive() {
    let img = image();
    let model = model(img.clone());

    // Naive baseline.
    let mut m = DirectMmio::new(model.clone());
    naive_open(&mut m).unwrap();
    m.reset_counts();
    let mut one = vec![0u8; 256];
    naive_read(&mut m, 0x1_2300, &mut one).unwrap();
    assert_eq!(one, img[0x1_2300..0x1_2400]);
    let naive_256 = m.counts().total();
    m.reset_counts();
    let mut block = vec![0u8; CLI_CHUNK];
    naive_read(&mut m, 0x4_0000, &mut block).unwrap();
    assert_eq!(block, img[0x4_0000..0x5_0000]);
    // The sequence is address independent: a 2 MiB dump is 32 such 64 KiB blocks.
    let naive_dump = m.counts().total() * (MIB2 / CLI_CHUNK) as u64;
    assert_eq!(
        naive_256, 50,
        "docs/hw/navi31-spi-flash.md §11: ≈25 accesses per transaction, 2 per chunk"
    );

    // Session driver.
    let mut fast = DirectMmio::new(model.clone());
    let engine = RomSw::open(&mut fast, model.delay(), RomSwConfig::default()).unwrap();
    let mut nor = SpiNor::probe(engine, NoDelay).unwrap();
    let before = nor.spi_mut().mmio().counts().total();
    nor.read(0x1_2300, &mut one).unwrap();
    assert_eq!(one, img[0x1_2300..0x1_2400]);
    let fast_256 = nor.spi_mut().mmio().counts().total() - before;
    let before = nor.spi_mut().mmio().counts().total();
    assert!(chunked_dump(&mut nor) == img, "full dump matches");
    let fast_dump = nor.spi_mut().mmio().counts().total() - before;
    let streamed_256 = Comparison {
        naive_256,
        fast_256,
        naive_dump,
        fast_dump,
    }
    .print("BAR5 accesses, direct MMIO model:");
    assert_eq!(fast_256, 7, "prime (3) + real (3) + one window burst");
    assert!(naive_dump >= 10 * fast_dump, "≥10x fewer accesses per dump");
    assert!(
        naive_256 as f64 >= 10.0 * streamed_256,
        "≥10x fewer per streamed 256-byte read"
    );
}

#[test]
fn usb_transfers_over_the_bridge_emulator_fast_vs_naive() {
    let img = image();
    let model = model(img.clone());
    let (mut dev, h) = behind_bridge(&model);
    let mut bar5 = dev.bar_mmio(5).unwrap();

    naive_open(&mut bar5).unwrap();
    let (c0, t0) = (h.counters(), h.clock_ns());
    let mut one = vec![0u8; 256];
    naive_read(&mut bar5, 0x2_0000, &mut one).unwrap();
    assert_eq!(one, img[0x2_0000..0x2_0100]);
    let naive_256 = h.counters().since(&c0).transfers();
    let (c0, t1) = (h.counters(), h.clock_ns());
    let _ = t0;
    let mut block = vec![0u8; CLI_CHUNK];
    naive_read(&mut bar5, 0x3_0000, &mut block).unwrap();
    assert_eq!(block, img[0x3_0000..0x4_0000]);
    let naive_dump = h.counters().since(&c0).transfers() * 32;
    let naive_dump_ms = (h.clock_ns() - t1) as f64 * 32.0 / 1e6;

    let engine = RomSw::open(&mut bar5, model.delay(), RomSwConfig::default()).unwrap();
    let mut nor = SpiNor::probe(engine, NoDelay).unwrap();
    let c0 = h.counters();
    nor.read(0x2_0000, &mut one).unwrap();
    assert_eq!(one, img[0x2_0000..0x2_0100]);
    let fast_256 = h.counters().since(&c0).transfers();
    let (c0, t2) = (h.counters(), h.clock_ns());
    assert!(
        chunked_dump(&mut nor) == img,
        "full dump over the bridge matches"
    );
    let fast_dump = h.counters().since(&c0).transfers();
    let fast_dump_ms = (h.clock_ns() - t2) as f64 / 1e6;
    let streamed_256 = Comparison {
        naive_256,
        fast_256,
        naive_dump,
        fast_dump,
    }
    .print("USB transfers, ASM24 bridge emulator:");
    println!("  2 MiB dump, emulated time:              naive {naive_dump_ms:.0} ms, session {fast_dump_ms:.0} ms");
    assert!(
        naive_dump >= 10 * fast_dump,
        "≥10x fewer USB transfers per dump"
    );
    assert!(naive_256 as f64 >= 10.0 * streamed_256);
}

#[test]
fn sector_write_accesses_fast_vs_naive() {
    let img = image();
    let model = model(img.clone());
    let data: Vec<u8> = (0..0x1000).map(|i| (i * 31 + 7) as u8).collect();

    let mut m = DirectMmio::new(model.clone());
    naive_open(&mut m).unwrap();
    m.reset_counts();
    naive_sector_write(&mut m, &model, 0x7000, &data).unwrap();
    let naive = m.counts().total();

    let mut target = img.clone();
    target[0x9000..0xA000].copy_from_slice(&data);
    let mut fast = DirectMmio::new(model.clone());
    let engine = RomSw::open(&mut fast, model.delay(), RomSwConfig::default()).unwrap();
    let mut nor = SpiNor::probe(engine, model.delay()).unwrap();
    let before = nor.spi_mut().mmio().counts().total();
    let opts = WriteOptions {
        start_sector: 9,
        sector_count: Some(1),
        clear_cmp: false,
    };
    let known = img.clone();
    let s = write_image(&mut nor, &target, Some(&known), &opts, |_| {}).unwrap();
    assert_eq!((s.written, s.pages), (1, 16));
    let session = nor.spi_mut().mmio().counts().total() - before;
    assert!(model.lock().flash().array()[0x9000..0xA000] == data[..]);
    println!(
        "BAR5 accesses per 4 KiB sector write (erase + 16 pages + read-back): naive {naive}, session {session} ({:.1}x)",
        naive as f64 / session as f64
    );
    assert!(naive >= 5 * session);
}
