//! ROM aperture dump against the emulator: exact 2 MiB through single-dword ROM_DATA reads,
//! controller state restored, magic and mirrored-halves refusal, missing raw controller.
use modelrt_gpuflash::emu::direct::{DirectMmio, SharedModel};
use modelrt_gpuflash::emu::flash_board::{Navi31Bar5, Navi31Config, RESET_ROM_CNTL};
use modelrt_gpuflash::navi31::aperture::{dump, ApertureError, DUMP_SIZE};
use modelrt_gpuflash::navi31::regs::{ROM_CNTL, ROM_INDEX};
use modelrt_hal::mmio::Mmio;

fn image() -> Vec<u8> {
    let mut v: Vec<u8> = (0..DUMP_SIZE).map(|i| (i ^ (i >> 9)) as u8).collect();
    v[..4].copy_from_slice(&[0xAA, 0x55, 0xAA, 0x55]);
    v
}

fn model(img: Vec<u8>, cfg: Navi31Config) -> SharedModel<Navi31Bar5> {
    SharedModel::new(Navi31Bar5::new(img, cfg).unwrap())
}

#[test]
fn dump_reads_exact_image_and_restores_registers() {
    let img = image();
    let m = model(img.clone(), Navi31Config::default());
    let mut mmio = DirectMmio::new(m.clone());
    mmio.write32(ROM_INDEX, 0x1234).unwrap();
    let mut out = vec![0u8; DUMP_SIZE];
    let mut pages = 0;
    dump(&mut mmio, &mut out, |_| pages += 1).unwrap();
    assert!(out == img);
    assert_eq!(pages, 32);
    assert_eq!(
        m.lock().stats().aperture_reads,
        (DUMP_SIZE / 4) as u64,
        "one ROM_DATA read per dword"
    );
    assert_eq!(mmio.read32(ROM_INDEX).unwrap(), 0x1234);
    assert_eq!(mmio.read32(ROM_CNTL).unwrap(), RESET_ROM_CNTL);
}

#[test]
fn mirrored_halves_and_bad_magic_are_refused() {
    let img = image();
    let m = model(
        img.clone(),
        Navi31Config {
            aperture_mirror_fault: true,
            ..Navi31Config::default()
        },
    );
    let mut out = vec![0u8; DUMP_SIZE];
    assert_eq!(
        dump(&mut DirectMmio::new(m.clone()), &mut out, |_| {}),
        Err(ApertureError::Mirrored)
    );
    assert_eq!(
        m.lock().reg(ROM_CNTL),
        RESET_ROM_CNTL,
        "restored on the error path too"
    );

    let mut blank = img.clone();
    blank[..4].fill(0xFF);
    let m = model(blank, Navi31Config::default());
    assert_eq!(
        dump(&mut DirectMmio::new(m), &mut out, |_| {}),
        Err(ApertureError::BadMagic([0xFF; 4]))
    );
}

#[test]
fn missing_raw_controller_is_refused() {
    let m = model(
        image(),
        Navi31Config {
            raw_controller: false,
            ..Navi31Config::default()
        },
    );
    let mut out = vec![0u8; DUMP_SIZE];
    let e = dump(&mut DirectMmio::new(m.clone()), &mut out, |_| {}).unwrap_err();
    assert_eq!(e, ApertureError::Unavailable);
    assert!(e.to_string().contains("not a raw SPI dump"));
    assert_eq!(m.lock().stats().aperture_reads, 0);
}
