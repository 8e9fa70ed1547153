//! Shared setup of the bridge-emulator tests: the default emulated device opened through the real
//! driver (bring-up included), and the GPU endpoint's address behind the four bridges.
use modelrt_asm24::emu::bridge::{BridgeEmulator, EmuHandle};
use modelrt_asm24::pcie::PciDevice;
use modelrt_asm24::Bridge;
use modelrt_hal::pci::Bdf;

/// Function 0 of device `dev` on `bus`.
pub const fn bdf(bus: u8, dev: u8) -> Bdf {
    Bdf { bus, dev, func: 0 }
}

/// The GPU endpoint after bring-up numbers the buses (bridges on 0..3).
pub const GPU: Bdf = bdf(4, 0);

/// The default emulator, brought up by [`PciDevice::open`], and a handle on it.
pub fn open() -> (PciDevice<BridgeEmulator>, EmuHandle) {
    let emu = BridgeEmulator::new();
    let h = emu.handle();
    (PciDevice::open(Bridge::new(emu)).expect("bring-up"), h)
}
