//! Protocol efficiency on the emulator: USB round trips per config/MMIO access and per MiB copied.
//!
//! Bound for copies (docs/hw/asm24-bridge.md §5, §10): the SRAM path needs exactly one 0xF2 arm (a control transfer
//! without data stage) per window — 256 KiB for host→device, 512 KiB (the whole SRAM) for
//! device→host — plus one bulk transfer carrying the payload. So host→device costs 4 control/MiB and
//! device→host 2 control/MiB, plus at most one extra arm for a final partial chunk; nothing else is
//! needed in steady state (no per-chunk status polling: the engine has no completion signal).
use modelrt_asm24::bench::copy_bench;
use modelrt_asm24::emu::bridge::{BridgeEmulator, EmuHandle};
use modelrt_asm24::pcie::PciDevice;
use modelrt_asm24::session::Session;
use modelrt_asm24::Bridge;
use modelrt_hal::mmio::Mmio;
use modelrt_hal::pci::PciConfig;

const MIB: usize = 1 << 20;

mod common {
    pub mod bridge;
}

use common::bridge::{open, GPU};

/// Transfers (control, bulk) used by `f`, as the emulated device counted them.
fn cost(h: &EmuHandle, f: impl FnOnce()) -> (u64, u64) {
    let c0 = h.counters();
    f();
    let c = h.counters().since(&c0);
    (c.control_out + c.control_in, c.bulk_out + c.bulk_in)
}

#[test]
fn copies_use_the_bulk_sram_path() {
    for size in [8 * MIB, 8 * MIB + 12_345] {
        let mut s = Session::from_emulator(BridgeEmulator::new());
        let r = copy_bench(&mut s, size, 5).unwrap();
        let mib = size as f64 / MIB as f64;
        let up = r.upload;
        let down = r.download.unwrap();
        println!(
            "size {size}: host→device {} control + {} bulk ({:.2} transfers/MiB); device→host {} control + {} bulk ({:.2} transfers/MiB)",
            up.counts.control(), up.counts.bulk(), up.transfers_per_mib(),
            down.counts.control(), down.counts.bulk(), down.transfers_per_mib()
        );
        for p in [&up, &down] {
            assert!(
                p.bulk_fraction() >= 0.99,
                "payload on bulk: {}",
                p.bulk_fraction()
            );
            assert_eq!(
                p.counts.control_bytes_out + p.counts.control_bytes_in,
                0,
                "arms carry no data stage"
            );
        }
        // Bounds from the module doc.
        assert!(
            up.counts.control() as f64 <= 4.0 * mib + 1.0,
            "{}",
            up.counts.control()
        );
        assert!(
            down.counts.control() as f64 <= 2.0 * mib + 1.0,
            "{}",
            down.counts.control()
        );
        assert_eq!(up.counts.bulk(), up.counts.control(), "one bulk per arm");
        assert_eq!(down.counts.bulk(), down.counts.control());
    }
}

#[test]
fn round_trips_per_access() {
    let (mut dev, h) = open();
    let results = [
        (
            "config read",
            cost(&h, || {
                let _ = dev.bridge().config_read(GPU, 0, 4).unwrap();
            }),
        ),
        (
            "config write",
            cost(&h, || dev.bridge().config_write(GPU, 0x40, 4, 1).unwrap()),
        ),
        (
            "mode-0 memory read",
            cost(&h, || {
                let _ = dev.bridge().mem_read(0x1020_0000, 4).unwrap();
            }),
        ),
        (
            "mode-0 memory write (posted)",
            cost(&h, || dev.bridge().mem_write(0x1020_0000, 4, 1).unwrap()),
        ),
        (
            "BAR read32",
            cost(&h, || {
                let _ = dev.bar_mmio(5).unwrap().read32(0).unwrap();
            }),
        ),
        (
            "BAR write32",
            cost(&h, || dev.bar_mmio(5).unwrap().write32(0, 1).unwrap()),
        ),
        (
            "64 posted write32 + flush",
            cost(&h, || {
                let mut m = dev.bar_mmio(5).unwrap();
                for i in 0..64 {
                    m.write32_posted(0x100 + 4 * i, i as u32).unwrap();
                }
                m.flush().unwrap();
            }),
        ),
        (
            "read_block 1024 dwords",
            cost(&h, || {
                dev.bar_mmio(5)
                    .unwrap()
                    .read_block(0, &mut [0u32; 1024])
                    .unwrap()
            }),
        ),
        (
            "write_block 1024 dwords",
            cost(&h, || {
                dev.bar_mmio(5)
                    .unwrap()
                    .write_block(0, &[7u32; 1024])
                    .unwrap()
            }),
        ),
        (
            "XDATA read 255 B",
            cost(&h, || {
                dev.bridge().xdata_read(0xF000, &mut [0u8; 255]).unwrap()
            }),
        ),
        (
            "XDATA read 256 B",
            cost(&h, || {
                dev.bridge().xdata_read(0xF000, &mut [0u8; 256]).unwrap()
            }),
        ),
        (
            "XDATA write 8 B",
            cost(&h, || dev.bridge().xdata_write(0xA800, &[0u8; 8]).unwrap()),
        ),
        (
            "VRAM write_bytes 1 MiB",
            cost(&h, || {
                dev.bar_mmio(0)
                    .unwrap()
                    .write_bytes(0, &vec![1u8; MIB])
                    .unwrap()
            }),
        ),
        (
            "VRAM read_bytes 1 MiB",
            cost(&h, || {
                dev.bar_mmio(0)
                    .unwrap()
                    .read_bytes(0, &mut vec![0u8; MIB])
                    .unwrap()
            }),
        ),
    ];
    for (name, (c, b)) in &results {
        println!("{name}: {c} control + {b} bulk");
    }
    let expect = [
        (2, 0),
        (2, 0),
        (2, 0),
        (1, 0),
        (1, 1),
        (1, 1),
        (1, 1),
        (1, 1),
        (1, 1),
        (1, 0),
        (2, 0),
        (8, 0),
        (1, 1),
        (1, 1),
    ];
    for ((name, got), want) in results.iter().zip(expect) {
        assert_eq!(*got, want, "{name} (docs/hw/asm24-bridge.md §10)");
    }
}

#[test]
fn bring_up_cost() {
    let emu = BridgeEmulator::new();
    let h = emu.handle();
    let _dev = PciDevice::open(Bridge::new(emu)).unwrap();
    let c = h.counters();
    println!(
        "bring-up: {} control, {} bulk, {} TLPs",
        c.control_out + c.control_in,
        c.bulk_out + c.bulk_in,
        c.tlps
    );
    // 4 bridges × 8 config writes, REBAR (3 TLPs + write), BAR sizing, command — each TLP = 2 transfers;
    // plus LTSSM read, power-on, LTSSM read.
    assert_eq!(c.control_out + c.control_in, 2 * c.tlps + 3);
    assert_eq!(c.bulk_out + c.bulk_in, 0);
}
