//! Emulator tests of PCIe bring-up behind the bridge: link power-on, bus numbering, windows, BAR
//! addresses and sizes (docs/hw/asm24-bridge.md §7.6), resizable BAR, and the resulting device view.
use modelrt_asm24::emu::bridge::memory::SparseMemory;
use modelrt_asm24::emu::bridge::BridgeEmulator;
use modelrt_asm24::pcie::{Bar, PciDevice};
use modelrt_asm24::proto::CplStatus;
use modelrt_asm24::{Bridge, BridgeError, LTSSM_L0};
use modelrt_hal::mmio::Mmio;
use modelrt_hal::pci::PciConfig;

mod common {
    pub mod bridge;
}

use common::bridge::{bdf, open, GPU};

/// Asserts that `err` is a completion with status Unsupported Request; returns it.
fn assert_ur(err: BridgeError) -> BridgeError {
    assert!(
        matches!(
            err,
            BridgeError::Completion {
                status: CplStatus::UnsupportedRequest,
                ..
            }
        ),
        "{err}"
    );
    err
}

#[test]
fn link_is_powered_on_at_open() {
    let emu = BridgeEmulator::new();
    let mut bridge = Bridge::new(emu);
    assert_ne!(
        bridge.ltssm().unwrap(),
        LTSSM_L0,
        "custom firmware boots with PCIe off (§6)"
    );
    bridge.ensure_link().unwrap();
    assert_eq!(bridge.ltssm().unwrap(), LTSSM_L0);
}

#[test]
fn bars_land_where_the_spec_says() {
    let (dev, h) = open();
    // REBAR enlarged BAR0 to the largest supported size (32 GiB in the default emulator: bit 15).
    assert_eq!(h.rebar_index(), Some(15));
    // §7.6: BAR0 64-bit prefetchable at the 32 GiB cursor; 32-bit BARs packed from 0x1000_0000 in
    // 2 MiB steps: BAR2 (8 KiB) at 0x1000_0000, BAR5 at 0x1020_0000.
    assert_eq!(
        dev.bar(0).unwrap(),
        Bar {
            address: 0x8_0000_0000,
            size: 32 << 30,
            prefetchable: true,
            is_64bit: true
        }
    );
    assert_eq!(
        dev.bar(2).unwrap(),
        Bar {
            address: 0x1000_0000,
            size: 0x2000,
            prefetchable: false,
            is_64bit: false
        }
    );
    assert_eq!(
        dev.bar(5).unwrap(),
        Bar {
            address: 0x1020_0000,
            size: 1 << 20,
            prefetchable: false,
            is_64bit: false
        }
    );
    assert!(
        matches!(dev.bar(1), Err(BridgeError::NoSuchBar(1))),
        "upper half of 64-bit BAR0"
    );
    assert!(dev.bar(3).is_err() && dev.bar(4).is_err());
}

#[test]
fn bridge_chain_is_programmed() {
    let (mut dev, _h) = open();
    for bus in 0..4u8 {
        let b = bdf(bus, 0);
        let buses = dev.bridge().config_read(b, 0x18, 4).unwrap();
        assert_eq!(
            buses & 0xFF_FFFF,
            ((bus as u32 + 1) << 8) | (4 << 16),
            "bus {bus}"
        );
        assert_eq!(dev.bridge().config_read(b, 0x20, 2).unwrap(), 0x1000);
        assert_eq!(
            dev.bridge().config_read(b, 0x22, 2).unwrap(),
            0xFFF0,
            "low nibble of the limit is read-only 0"
        );
        assert_eq!(
            dev.bridge().config_read(b, 0x24, 2).unwrap(),
            0x0001,
            "64-bit prefetchable window flag"
        );
        assert_eq!(dev.bridge().config_read(b, 0x28, 4).unwrap(), 8);
        assert_eq!(dev.bridge().config_read(b, 0x2C, 4).unwrap(), 0xFFFF_FFFF);
        assert_eq!(dev.bridge().config_read(b, 0x04, 1).unwrap(), 0x07);
    }
    assert_eq!(dev.bridge().config_read(GPU, 0, 4).unwrap(), 0x744C_1002);
    assert_eq!(dev.bridge().config_read(GPU, 0x04, 1).unwrap(), 0x07);
}

#[test]
fn absent_functions_complete_with_ur() {
    let (mut dev, _h) = open();
    assert_ur(dev.bridge().config_read(bdf(4, 1), 0, 4).unwrap_err());
    let err = assert_ur(dev.bridge().config_read(bdf(9, 0), 0, 4).unwrap_err());
    assert!(
        err.to_string()
            .starts_with("Unsupported Request: 0x9000000"),
        "{err}"
    );
}

#[test]
fn buses_are_unreachable_before_numbering() {
    let mut bridge = Bridge::new(BridgeEmulator::new());
    bridge.ensure_link().unwrap();
    assert_ur(bridge.config_read(bdf(1, 0), 0, 4).unwrap_err());
    bridge
        .config_write(bdf(0, 0), 0x18, 4, 0x0004_0100)
        .unwrap();
    assert_eq!(
        bridge.config_read(bdf(1, 0), 0x0E, 1).unwrap(),
        1,
        "type-1 header"
    );
}

#[test]
fn mmio_needs_assigned_bar_and_memory_enable() {
    let mut bridge = Bridge::new(BridgeEmulator::new());
    bridge.ensure_link().unwrap();
    assert_ur(bridge.mem_read(0x1020_0000, 4).unwrap_err());
}

#[test]
fn rebar_without_capability_keeps_model_size_and_small_bar() {
    let emu = BridgeEmulator::builder()
        .rebar(0, 0)
        .gpu_bar(0, Box::new(SparseMemory::new(256 << 20)))
        .build();
    let dev = PciDevice::open(Bridge::new(emu)).unwrap();
    assert_eq!(dev.bar(0).unwrap().size, 256 << 20);
    // "small BAR": 256 MiB, 32-bit BARs unaffected.
    assert_eq!(dev.bar(5).unwrap().address, 0x1020_0000);
}

#[test]
fn bar_mmio_round_trip_through_bridge() {
    let (mut dev, h) = open();
    {
        let mut mmio = dev.bar_mmio(5).unwrap();
        mmio.write32(0x100, 0xCAFE_F00D).unwrap();
        assert_eq!(mmio.read32(0x100).unwrap(), 0xCAFE_F00D);
        mmio.write_block(0x200, &[1, 2, 3, 4]).unwrap();
        let mut out = [0u32; 4];
        mmio.read_block(0x200, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        assert!(matches!(
            mmio.read32(1 << 20),
            Err(BridgeError::OutOfRange { .. })
        ));
    }
    assert_eq!(
        h.with_bar(5, |m| m.read32(0x100)),
        Some(0xCAFE_F00D),
        "landed in the BAR5 model"
    );
    assert_eq!(h.with_bar(5, |m| m.read32(0x20C)), Some(4));
}

#[test]
fn bar_sizing_semantics_of_the_emulated_endpoint() {
    let mut bridge = Bridge::new(BridgeEmulator::new());
    bridge.ensure_link().unwrap();
    for bus in 0..4u8 {
        let buses = ((bus as u32 + 1) << 8) | (4 << 16);
        bridge.config_write(bdf(bus, 0), 0x18, 4, buses).unwrap();
    }
    // Write `v` to the GPU's config dword `reg`, read it back.
    let rw = |bridge: &mut Bridge<BridgeEmulator>, reg: u16, v: u32| {
        bridge.config_write(GPU, reg, 4, v).unwrap();
        bridge.config_read(GPU, reg, 4).unwrap()
    };
    // BAR0: 64-bit prefetchable, boots at 256 MiB: low = ~(256 MiB − 1) | type bits 0xC, high all ones.
    assert_eq!(rw(&mut bridge, 0x10, 0xFFFF_FFFF), 0xF000_000C);
    assert_eq!(rw(&mut bridge, 0x14, 0xFFFF_FFFF), 0xFFFF_FFFF);
    // BAR5: 32-bit non-prefetchable 1 MiB.
    assert_eq!(rw(&mut bridge, 0x24, 0xFFFF_FFFF), 0xFFF0_0000);
    // Unimplemented BAR3 reads 0 and ignores writes.
    assert_eq!(rw(&mut bridge, 0x1C, 0xFFFF_FFFF), 0);
    // REBAR capability at 0x100: id 0x15, sizes bits 8..15 (256 MiB … 32 GiB), control: BAR 0, 1 BAR, size 8.
    assert_eq!(rw(&mut bridge, 0x100, 0), 0x0001_0015);
    assert_eq!(bridge.config_read(GPU, 0x104, 4).unwrap(), 0xFF00 << 4);
    assert_eq!(bridge.config_read(GPU, 0x108, 4).unwrap(), 0x0000_0820);
    // Resizing to 32 GiB (index 15) changes BAR0's sizing mask: low bits all zero, high = ~(8 − 1).
    bridge.config_write(GPU, 0x108, 4, 0x0000_0F20).unwrap();
    assert_eq!(bridge.config_read(GPU, 0x108, 4).unwrap() >> 8 & 0x1F, 15);
    assert_eq!(rw(&mut bridge, 0x10, 0xFFFF_FFFF), 0x0000_000C);
    assert_eq!(rw(&mut bridge, 0x14, 0xFFFF_FFFF), 0xFFFF_FFF8);
    // An unsupported size index is ignored.
    bridge.config_write(GPU, 0x108, 4, 0x0000_1F20).unwrap();
    assert_eq!(bridge.config_read(GPU, 0x108, 4).unwrap() >> 8 & 0x1F, 15);
}
