//! The `gpuflash` engine on an emulated board whose flash is an image file, for the fault and
//! power-loss tests: a scratch directory, a board over that file, a whole-chip write request, the
//! backup files in a directory.
#![allow(dead_code)] // each test file uses a part
use std::path::{Path, PathBuf};

use modelrt_gpuflash::flashtool::flash::{self, FlashOptions, WriteReport, WriteRequest};
use modelrt_gpuflash::flashtool::{Board, BoardOptions, EmuBoot, FlashEvent, FlashToolError};
use modelrt_gpuflash::navi31::writer::WriteOptions;

/// Flash size.
pub const SIZE: usize = 0x20_0000;
/// Erase sector.
pub const SECTOR: usize = 0x1000;

/// A scratch directory removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh directory named after the test.
    pub fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("gpuflash-tool-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A pseudo-random 2 MiB Navi31 flash image (the `AA 55 AA 55` magic at 0, halves differ).
pub fn navi31_image(seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v: Vec<u8> = (0..SIZE)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    v[..4].copy_from_slice(&[0xAA, 0x55, 0xAA, 0x55]);
    v
}

/// The emulated board (no bridge) whose flash is the image file `file` ("power on": a fresh model
/// of what the file holds).
pub fn board(file: &Path) -> Board {
    Board::open(&BoardOptions {
        transport: format!("emu-direct:{}", file.display()).parse().unwrap(),
        device: 0,
        emu_boot: EmuBoot::Stalled,
    })
    .unwrap()
}

/// `gpuflash write` of the whole chip with the backup in `backup_dir` (`None`: no backup).
pub fn write(
    board: &mut Board,
    image: &[u8],
    backup_dir: Option<&Path>,
    progress: &mut dyn FnMut(FlashEvent),
) -> Result<WriteReport, FlashToolError> {
    let req = WriteRequest {
        flash: FlashOptions::default(),
        range: WriteOptions {
            start_sector: 0,
            sector_count: None,
            clear_cmp: false,
        },
        backup_dir: backup_dir.map(Path::to_path_buf),
    };
    flash::write(board, &req, image, |_| {}, progress)
}

/// The backup files `gpuflash-backup-*.bin` in `dir`, with their contents.
pub fn backups_in(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|r| {
            r.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.to_string_lossy().contains("gpuflash-backup-"))
                .map(|p| {
                    let d = std::fs::read(&p).unwrap();
                    (p, d)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Every file name in `dir`.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
