//! The `gpuflash` engine as a library (`modelrt_gpuflash::flashtool`), without the binary: typed
//! transports, typed errors, progress events and write reports, on emulated boards whose flash is an
//! image file (the reference: the file's own bytes).
use std::path::PathBuf;

use modelrt_gpuflash::flashtool::flash::{
    self, BackupOutcome, FlashOptions, ReadOptions, WriteRequest,
};
use modelrt_gpuflash::flashtool::{
    sha256_hex, Board, BoardOptions, EmuBoot, FlashEvent, FlashToolError, FlashTransport, Unit,
};
use modelrt_gpuflash::navi31::writer::{SectorEvent, WriteOptions};

const SIZE: usize = 0x20_0000;
const SECTOR: usize = 0x1000;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("flashtool-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pattern(seed: u8) -> Vec<u8> {
    (0..SIZE)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed)
        .collect()
}

fn board(transport: &str) -> Board {
    Board::open(&BoardOptions {
        transport: transport.parse().unwrap(),
        device: 0,
        emu_boot: EmuBoot::Stalled,
    })
    .unwrap()
}

#[test]
fn read_returns_the_image_bytes_with_progress_and_typed_range_errors() {
    let dir = scratch("read");
    let img = pattern(0x5A);
    let file = dir.join("board.bin");
    std::fs::write(&file, &img).unwrap();
    for scheme in ["emu", "emu-direct"] {
        let mut b = board(&format!("{scheme}:{}", file.display()));
        assert!(b.description().contains("EMULATED"), "{}", b.description());
        let mut events = Vec::new();
        let opts = ReadOptions {
            flash: FlashOptions::default(),
            addr: 0x1_2345,
            size: 0x2_0001,
        };
        let r = flash::read(&mut b, &opts, &mut |e| events.push(e)).unwrap();
        assert_eq!(r.data, img[0x1_2345..0x3_2346], "{scheme}");
        assert_eq!(
            events.first(),
            Some(&FlashEvent::Start {
                what: "read",
                unit: Unit::Bytes,
                total: 0x2_0001
            })
        );
        assert_eq!(events[events.len() - 2], FlashEvent::Position(0x2_0001));
        assert_eq!(events.last(), Some(&FlashEvent::Finish));
        assert!(b.accesses() > 0);
        assert_eq!(b.usb_transfers().is_some(), scheme == "emu");
        let e = flash::read(
            &mut b,
            &ReadOptions {
                addr: 0x1F_FFFF,
                size: 2,
                ..opts
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                FlashToolError::OutOfRange {
                    addr: 0x1F_FFFF,
                    size: 2,
                    total: 0x20_0000
                }
            ),
            "{e}"
        );
    }
}

#[test]
fn write_backs_up_then_reports_each_changed_sector() {
    let dir = scratch("write");
    let old = pattern(1);
    let mut new = old.clone();
    let changed = [3usize, 4, 200];
    for s in changed {
        new[s * SECTOR + 17] ^= 0xFF;
    }
    let file = dir.join("board.bin");
    std::fs::write(&file, &old).unwrap();
    let mut b = board(&format!("emu-direct:{}", file.display()));
    let mut backup = None;
    let mut sectors = Vec::new();
    let report = flash::write(
        &mut b,
        &WriteRequest {
            flash: FlashOptions::default(),
            range: WriteOptions {
                start_sector: 0,
                sector_count: None,
                clear_cmp: false,
            },
            backup_dir: Some(dir.clone()),
        },
        &new,
        |o| backup = Some(o.clone()),
        &mut |e| {
            if let FlashEvent::Sector(s) = e {
                sectors.push(s)
            }
        },
    )
    .unwrap();
    let written: Vec<u32> = sectors
        .iter()
        .filter_map(|s| match s {
            SectorEvent::Written { sector, .. } => Some(*sector),
            SectorEvent::Skipped { .. } => None,
        })
        .collect();
    assert_eq!(written, [3, 4, 200]);
    assert_eq!(sectors.len(), SIZE / SECTOR);
    assert_eq!(report.summary.written, 3);
    assert_eq!(report.summary.skipped as usize, SIZE / SECTOR - 3);
    let Some(BackupOutcome::Saved { path, sha256 }) = backup else {
        panic!("a backup is saved first: {backup:?}")
    };
    assert_eq!(sha256, sha256_hex(&old));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        old,
        "the backup is the old flash"
    );
    assert_eq!(report.backup, BackupOutcome::Saved { path, sha256 });
    drop(b);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        new,
        "the image file holds the new flash"
    );
}

#[test]
fn verify_names_the_first_difference_and_open_names_the_missing_image() {
    let dir = scratch("verify");
    let img = pattern(9);
    let file = dir.join("board.bin");
    std::fs::write(&file, &img).unwrap();
    let mut other = img.clone();
    other[0x4_0001] ^= 1;
    let mut b = board(&format!("emu-direct:{}", file.display()));
    let e = flash::verify(&mut b, &FlashOptions::default(), &other, &mut |_| {}).unwrap_err();
    assert!(
        matches!(e, FlashToolError::Mismatch { addr: 0x4_0001, flash, image } if flash == img[0x4_0001] && image == other[0x4_0001]),
        "{e}"
    );
    let missing = BoardOptions {
        transport: FlashTransport::Emu(dir.join("missing.bin")),
        device: 0,
        emu_boot: EmuBoot::Stalled,
    };
    let e = Board::open(&missing).err().expect("no image, no board");
    assert!(
        matches!(&e, FlashToolError::EmulatorImage(m) if m.contains("missing.bin")),
        "{e}"
    );
}

#[test]
fn saving_never_touches_another_file_and_temporary_names_are_unique() {
    let dir = scratch("save");
    // Someone's own file that happens to be named like the old temporary name of a.bin.
    std::fs::write(dir.join("a.partial"), b"mine").unwrap();
    flash::save(&dir.join("a.bin"), b"bin").unwrap();
    assert_eq!(std::fs::read(dir.join("a.partial")).unwrap(), b"mine");
    assert_eq!(std::fs::read(dir.join("a.bin")).unwrap(), b"bin");
    // Two targets sharing a stem, saved concurrently, never mix their contents.
    let run = |name: &'static str, fill: u8| {
        let path = dir.join(name);
        std::thread::spawn(move || {
            for i in 0..40u8 {
                let data = vec![fill ^ i; 64 * 1024];
                flash::save(&path, &data).unwrap();
                let back = std::fs::read(&path).unwrap();
                assert!(back.iter().all(|&b| b & 0x80 == fill & 0x80), "{name}");
            }
        })
    };
    let (x, y) = (run("a.img", 0x00), run("a.bin", 0x80));
    x.join().unwrap();
    y.join().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.bin", "a.img", "a.partial"], "no temporary left");
}
