//! A default Navi31 BAR5 model around a flash image, and that model behind the bridge emulator
//! opened the way `gpuflash` opens a board (session over the counting transport, PCIe bring-up).
use modelrt_asm24::counting::Counting;
use modelrt_asm24::emu::bridge::{BridgeEmulator, EmuHandle};
use modelrt_asm24::pcie::PciDevice;
use modelrt_asm24::session::{DynTransport, Session};
use modelrt_gpuflash::emu::direct::SharedModel;
use modelrt_gpuflash::emu::flash_board::{Navi31Bar5, Navi31Config};

/// The default-configured model holding `img` as its flash.
pub fn model(img: Vec<u8>) -> SharedModel<Navi31Bar5> {
    SharedModel::new(Navi31Bar5::new(img, Navi31Config::default()).unwrap())
}

/// `model` as BAR5 of the emulated GPU, brought up; the handle counts the bridge's transfers.
pub fn behind_bridge(
    model: &SharedModel<Navi31Bar5>,
) -> (PciDevice<Counting<DynTransport>>, EmuHandle) {
    let emu = BridgeEmulator::builder()
        .gpu_bar(5, Box::new(model.clone()))
        .build();
    let h = emu.handle();
    let session = Session::from_emulator(emu);
    (PciDevice::open(session.bridge).unwrap(), h)
}
