//! Emulator round trips through the real driver: XDATA (with its SRAM/sys_buf aliases), config and
//! memory accesses of every size, streaming BAR access, and SRAM DMA of random data at many sizes.
use modelrt_asm24::bench::pattern;
use modelrt_asm24::copy;
use modelrt_asm24::emu::bridge::{BridgeEmulator, EmuHandle};
use modelrt_asm24::pcie::PciDevice;
use modelrt_asm24::proto::{SECTOR, SRAM_SIZE};
use modelrt_asm24::{BUS_CQ_RELEASE, BUS_SRAM, BUS_SYS_BUF, XDATA_SRAM, XDATA_SYS_BUF};
use modelrt_hal::mmio::Mmio;
use modelrt_hal::pci::PciConfig;

mod common {
    pub mod bridge;
}

use common::bridge::{open, GPU};

#[test]
fn xdata_aliases_sram_and_sys_buf() {
    let (mut dev, h) = open();
    let data: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
    dev.bridge().xdata_write(XDATA_SRAM, &data).unwrap();
    let mut back = vec![0u8; 300];
    dev.bridge().xdata_read(XDATA_SRAM, &mut back).unwrap();
    assert_eq!(back, data, "read back across a 255-byte chunk boundary");
    let mut gpu = vec![0u8; 300];
    h.gpu_read(BUS_SRAM, &mut gpu).unwrap();
    assert_eq!(gpu, data, "XDATA 0xF000 aliases SRAM = PCIe 0x200000");
    // GPU fence write to 0x820800 is visible at XDATA 0xA800 (docs/hw/asm24-bridge.md §4).
    h.gpu_write(BUS_SYS_BUF + 0x800, &7u64.to_le_bytes())
        .unwrap();
    let mut fence = [0u8; 8];
    dev.bridge()
        .xdata_read(XDATA_SYS_BUF + 0x800, &mut fence)
        .unwrap();
    assert_eq!(u64::from_le_bytes(fence), 7);
}

#[test]
fn config_accesses_of_every_size() {
    let (mut dev, _h) = open();
    // Scratch register in the endpoint's config space (0x40 is outside all modelled registers).
    dev.config_write(0x40, 4, 0x1122_3344).unwrap();
    assert_eq!(dev.config_read(0x40, 4).unwrap(), 0x1122_3344);
    assert_eq!(dev.config_read(0x41, 1).unwrap(), 0x33);
    assert_eq!(dev.config_read(0x42, 2).unwrap(), 0x1122);
    dev.config_write(0x43, 1, 0xAB).unwrap();
    assert_eq!(dev.config_read(0x40, 4).unwrap(), 0xAB22_3344);
    dev.config_write(0x40, 2, 0xBEEF).unwrap();
    assert_eq!(dev.config_read(0x40, 4).unwrap(), 0xAB22_BEEF);
    assert_eq!(
        dev.bridge().config_read(GPU, 0x02, 2).unwrap(),
        0x744C,
        "device id at 0x02"
    );
    assert!(
        dev.config_read(0x43, 2).is_err(),
        "2 bytes at offset 3 cross the dword"
    );
}

#[test]
fn mode0_memory_accesses_with_byte_enables() {
    let (mut dev, h) = open();
    let base = dev.bar(5).unwrap().address;
    dev.bridge().mem_write(base + 0x10, 4, 0x1122_3344).unwrap();
    dev.bridge().mem_write(base + 0x11, 1, 0xAA).unwrap();
    dev.bridge().mem_write(base + 0x12, 2, 0xBBCC).unwrap();
    assert_eq!(h.with_bar(5, |m| m.read32(0x10)), Some(0xBBCC_AA44));
    assert_eq!(dev.bridge().mem_read(base + 0x13, 1).unwrap(), 0xBB);
    assert_eq!(dev.bridge().mem_read(base + 0x10, 2).unwrap(), 0xAA44);
    assert_eq!(dev.bridge().mem_read(base + 0x10, 4).unwrap(), 0xBBCC_AA44);
}

#[test]
fn vram_streams_round_trip() {
    let (mut dev, h) = open();
    let data = pattern(40_000, 9);
    let mut mmio = dev.bar_mmio(0).unwrap();
    mmio.write_bytes(0x1234_5000, &data).unwrap();
    let mut back = vec![0u8; data.len()];
    mmio.read_bytes(0x1234_5000, &mut back).unwrap();
    assert_eq!(back, data);
    drop(mmio);
    assert_eq!(
        h.with_bar(0, |m| m.read32(0x1234_5000)),
        Some(u32::from_le_bytes(data[..4].try_into().unwrap()))
    );
}

#[test]
fn posted_writes_are_ordered_and_flushed_before_reads() {
    let (mut dev, h) = open();
    let mut mmio = dev.bar_mmio(5).unwrap();
    for i in 0..16u32 {
        mmio.write32_posted(0x400 + 4 * i as u64, i * 3).unwrap();
    }
    mmio.write32_posted(0x400, 0xFFFF).unwrap(); // non-consecutive: forces the first batch out first
    assert_eq!(mmio.read32(0x400).unwrap(), 0xFFFF, "the later write wins");
    assert_eq!(mmio.read32(0x43C).unwrap(), 45);
    mmio.write32_posted(0x800, 5).unwrap();
    assert_eq!(h.with_bar(5, |m| m.read32(0x800)), Some(0), "still pending");
    mmio.flush().unwrap();
    assert_eq!(h.with_bar(5, |m| m.read32(0x800)), Some(5));
}

fn sram_round_trip(
    dev: &mut PciDevice<BridgeEmulator>,
    h: &EmuHandle,
    slot: usize,
    len: usize,
    seed: u64,
) {
    let data = pattern(len, seed);
    let mut wire = data.clone();
    wire.resize(len.div_ceil(SECTOR) * SECTOR, 0);
    dev.bridge().sram_write(slot, &wire).unwrap();
    let mut landed = vec![0u8; len];
    h.gpu_read(BUS_SRAM + (slot * 0x4000) as u64, &mut landed)
        .unwrap();
    assert_eq!(landed, data, "host→SRAM len {len} slot {slot}");
    // SRAM → host always reads from slot 0: the "GPU" copies the data there first.
    h.gpu_write(BUS_SRAM, &data).unwrap();
    dev.bridge().sram_read_arm(len).unwrap();
    h.gpu_write(BUS_CQ_RELEASE, &[0; 4]).unwrap();
    let mut back = vec![0u8; wire.len()];
    dev.bridge().sram_read(&mut back).unwrap();
    assert_eq!(&back[..len], &data[..], "SRAM→host len {len}");
}

#[test]
fn sram_dma_random_data_at_many_sizes() {
    let (mut dev, h) = open();
    let sizes = [
        1, 3, 4, 511, 512, 513, 4096, 0x3FFF, 0x4000, 0x4001, 0x3FFFC, 0x40000, 0x7FFFF, SRAM_SIZE,
    ];
    for (i, &len) in sizes.iter().enumerate() {
        sram_round_trip(&mut dev, &h, 0, len, i as u64 + 1);
        if len <= 0x40000 {
            sram_round_trip(&mut dev, &h, 16, len, i as u64 + 100);
        }
    }
    // Pseudo-random sizes too.
    let mut x = 0x1234_5678u64;
    for _ in 0..20 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let len = 1 + (x >> 33) as usize % SRAM_SIZE;
        sram_round_trip(&mut dev, &h, 0, len, x);
    }
}

#[test]
fn pipelined_arms_are_consumed_in_order() {
    let (mut dev, h) = open();
    let a = pattern(0x40000, 1);
    let b = pattern(0x40000, 2);
    let c = pattern(0x40000, 3);
    let mut staging = vec![0u8; copy::WINDOW];
    let all: Vec<u8> = [a.clone(), b.clone(), c.clone()].concat();
    copy::upload(dev.bridge(), &all, &mut staging, |_, _, _| {
        Ok::<(), modelrt_asm24::BridgeError>(())
    })
    .unwrap();
    let mut w0 = vec![0u8; 0x40000];
    let mut w1 = vec![0u8; 0x40000];
    h.gpu_read(BUS_SRAM, &mut w0).unwrap();
    h.gpu_read(BUS_SRAM + 0x40000, &mut w1).unwrap();
    assert_eq!(w0, c, "third chunk went to window 0 again");
    assert_eq!(w1, b);
}

#[test]
fn sram_allocator_is_a_non_wrapping_bump() {
    let (mut dev, _h) = open();
    let a = dev.alloc_sysmem(0x40000).unwrap();
    let b = dev.alloc_sysmem(0x40000).unwrap();
    assert_eq!((a.bus_address, a.xdata), (0x200000, 0xF000));
    assert_eq!((b.bus_address, b.offset), (0x240000, 0x40000));
    assert!(dev.alloc_sysmem(1).is_err(), "512 KiB exhausted");
}
