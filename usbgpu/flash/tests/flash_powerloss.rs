//! Power-loss injection during `write`: the emulated board loses power at every sector boundary
//! (before each erase), before random page programs, and at random points inside erase/program
//! operations; after power-on the resume path (re-running the same write) must leave the flash
//! equal to the target with zero bytes lost, and the pre-write backup must restore the original.
//! The `gpuflash` engine loses power after each of its phases (backup, erase, program, verify,
//! final compare): the backup of the original survives and a re-run resumes.
use modelrt_gpuflash::emu::direct::{DirectMmio, SharedModel};
use modelrt_gpuflash::emu::flash_board::{Navi31Bar5, Navi31Config, PowerCut};
use modelrt_gpuflash::flashtool::FlashEvent;
use modelrt_gpuflash::navi31::romsw::{RomSw, RomSwConfig, RomSwError};
use modelrt_gpuflash::navi31::spi_nor::{FlashError, SpiNor};
use modelrt_gpuflash::navi31::writer::{write_image, WriteError, WriteOptions, WriteSummary};
use modelrt_hal::embedded_hal::delay::DelayNs;

mod common {
    pub mod tool;
}

use common::tool;

const SIZE: usize = 0x20_0000;
const SECTOR: usize = 0x1000;
/// Sectors covered by the write (a small range keeps the test fast; the property is per sector).
const RANGE: u32 = 6;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn images() -> (Vec<u8>, Vec<u8>) {
    let mut r = Rng(0x1234_5678);
    let original: Vec<u8> = (0..SIZE).map(|_| r.next() as u8).collect();
    let mut target = original.clone();
    // sector 0: fully new data; 1: unchanged; 2: new data with blank (0xFF) pages;
    // 3: one byte changed; 4: all 0xFF; 5: fully new.
    for b in &mut target[0..SECTOR] {
        *b = r.next() as u8;
    }
    for (i, b) in target[2 * SECTOR..3 * SECTOR].iter_mut().enumerate() {
        *b = if (i / 256) % 2 == 0 {
            0xFF
        } else {
            r.next() as u8
        };
    }
    target[3 * SECTOR + 77] ^= 0x5A;
    target[4 * SECTOR..5 * SECTOR].fill(0xFF);
    for b in &mut target[5 * SECTOR..6 * SECTOR] {
        *b = r.next() as u8;
    }
    (original, target)
}

struct NoDelay;
impl DelayNs for NoDelay {
    fn delay_ns(&mut self, _: u32) {}
}

type Err = WriteError<RomSwError<modelrt_gpuflash::emu::direct::DirectError>>;

fn opts() -> WriteOptions {
    WriteOptions {
        start_sector: 0,
        sector_count: Some(RANGE),
        clear_cmp: false,
    }
}

/// One tool run against the board: open session, probe, write the range.
fn run_write(model: &SharedModel<Navi31Bar5>, image: &[u8]) -> Result<WriteSummary, Err> {
    let engine = RomSw::open(
        DirectMmio::new(model.clone()),
        model.delay(),
        RomSwConfig::default(),
    )
    .map_err(|e| WriteError::Flash {
        sector: None,
        error: FlashError::Spi(e),
    })?;
    let mut nor = SpiNor::probe(engine, model.delay()).map_err(|error| WriteError::Flash {
        sector: None,
        error,
    })?;
    write_image(&mut nor, image, None, &opts(), |_| {})
}

/// The backup the tool takes before writing (a full read of the original board).
fn backup(original: &[u8]) -> Vec<u8> {
    let model =
        SharedModel::new(Navi31Bar5::new(original.to_vec(), Navi31Config::default()).unwrap());
    let engine = RomSw::open(
        DirectMmio::new(model.clone()),
        model.delay(),
        RomSwConfig::default(),
    )
    .unwrap();
    let mut nor = SpiNor::probe(engine, NoDelay).unwrap();
    let mut b = vec![0u8; SIZE];
    nor.read(0, &mut b).unwrap();
    assert!(b == original, "backup equals the original flash");
    b
}

/// Cut the power at `cut` during a write, reboot, resume; check zero loss. Returns whether the cut
/// actually happened during the first run.
/// `saved` is the full backup the tool took of the original flash before the first run.
fn scenario(cut: PowerCut, original: &[u8], target: &[u8], saved: &[u8]) -> bool {
    let model =
        SharedModel::new(Navi31Bar5::new(original.to_vec(), Navi31Config::default()).unwrap());
    model.lock().schedule_power_cut(cut);
    let first = run_write(&model, target);
    let cut_happened = !model.lock().powered();
    if cut_happened {
        let err = first.expect_err("a write that lost power must fail");
        let gone = matches!(
            err,
            WriteError::Flash {
                error: FlashError::Spi(RomSwError::DeviceGone),
                ..
            }
        );
        assert!(
            gone,
            "{cut:?}: power loss reported as device gone, got {err:?}"
        );
        model.lock().power_on();
    } else {
        first.expect("write without a cut succeeds");
        model.lock().cancel_power_cut();
    }
    // Resume: the same write again.
    let summary =
        run_write(&model, target).unwrap_or_else(|e| panic!("{cut:?}: resume failed: {e:?}"));
    assert_eq!(summary.written + summary.skipped, RANGE);
    {
        let g = model.lock();
        let arr = g.flash().array();
        assert!(
            arr[..RANGE as usize * SECTOR] == target[..RANGE as usize * SECTOR],
            "{cut:?}: range equals target"
        );
        assert!(
            arr[RANGE as usize * SECTOR..] == original[RANGE as usize * SECTOR..],
            "{cut:?}: outside untouched"
        );
    }
    // Rolling back from the backup restores the original exactly.
    run_write(&model, saved).expect("restore from backup");
    assert!(
        model.lock().flash().array() == original,
        "{cut:?}: backup restores the original"
    );
    cut_happened
}

#[test]
fn power_cut_at_every_sector_boundary() {
    let (original, target) = images();
    let saved = backup(&original);
    // Sectors 0, 2, 3, 4, 5 change (sector 1 is identical and skipped): 5 erases.
    let mut cuts = 0;
    for k in 0..5 {
        cuts += scenario(
            PowerCut::BeforeCommand {
                opcode: 0x20,
                occurrence: k,
            },
            &original,
            &target,
            &saved,
        ) as u32;
    }
    assert_eq!(cuts, 5, "every erase was interrupted once");
    // A cut point past the last erase does not fire; the write simply completes.
    assert!(!scenario(
        PowerCut::BeforeCommand {
            opcode: 0x20,
            occurrence: 5
        },
        &original,
        &target,
        &saved
    ));
}

#[test]
fn power_cut_before_random_page_programs() {
    let (original, target) = images();
    let saved = backup(&original);
    let mut r = Rng(99);
    // 16 + 8 + 1 + 0 + 16 = 41 page programs in the first run.
    for _ in 0..8 {
        let j = r.below(41) as u32;
        assert!(
            scenario(
                PowerCut::BeforeCommand {
                    opcode: 0x02,
                    occurrence: j
                },
                &original,
                &target,
                &saved
            ),
            "program {j}"
        );
    }
}

#[test]
fn power_cut_inside_erase_and_program() {
    let (original, target) = images();
    let saved = backup(&original);
    let mut r = Rng(7);
    // Busy operations of the first run: 5 erases + 41 programs = 46.
    let mut fired = 0;
    for _ in 0..16 {
        let occurrence = r.below(46);
        let permille = 1 + r.below(998);
        fired += scenario(
            PowerCut::DuringBusy {
                occurrence,
                permille,
            },
            &original,
            &target,
            &saved,
        ) as u32;
    }
    assert_eq!(fired, 16, "every cut landed inside an operation");
}

#[test]
fn partial_erase_is_visible_until_resumed() {
    // Directly check the emulator's partial effect, so the resume test above is not vacuous.
    let (original, target) = images();
    let model =
        SharedModel::new(Navi31Bar5::new(original.clone(), Navi31Config::default()).unwrap());
    model.lock().schedule_power_cut(PowerCut::DuringBusy {
        occurrence: 0,
        permille: 500,
    });
    assert!(run_write(&model, &target).is_err());
    let g = model.lock();
    let s0 = &g.flash().array()[..SECTOR];
    assert!(
        s0[..SECTOR / 2].iter().all(|&b| b == 0xFF),
        "first half erased"
    );
    assert!(
        s0[SECTOR / 2..] == original[SECTOR / 2..SECTOR],
        "second half not yet erased"
    );
}

#[test]
fn power_cut_while_clearing_cmp_is_resumable() {
    use modelrt_gpuflash::emu::flash_board::Gd25Config;
    let (original, target) = images();
    let cfg = || Navi31Config {
        flash: Gd25Config {
            sr2: 0x40,
            ..Gd25Config::default()
        },
        ..Navi31Config::default()
    };
    let model = SharedModel::new(Navi31Bar5::new(original.clone(), cfg()).unwrap());
    // The WRSR that clears CMP is the first busy operation.
    model.lock().schedule_power_cut(PowerCut::DuringBusy {
        occurrence: 0,
        permille: 400,
    });
    let write = |m: &SharedModel<Navi31Bar5>| {
        let engine = RomSw::open(
            DirectMmio::new(m.clone()),
            m.delay(),
            RomSwConfig::default(),
        )
        .unwrap();
        let mut nor = SpiNor::probe(engine, m.delay()).unwrap();
        let o = WriteOptions {
            clear_cmp: true,
            ..opts()
        };
        write_image(&mut nor, &target, None, &o, |_| {})
    };
    assert!(write(&model).is_err());
    assert_eq!(
        model.lock().flash().sr2() & 0x40,
        0x40,
        "interrupted WRSR left CMP set"
    );
    assert!(
        model.lock().flash().array() == original,
        "nothing written while protected"
    );
    model.lock().power_on();
    let s = write(&model).unwrap();
    assert!(s.cleared_cmp);
    assert!(
        model.lock().flash().array()[..RANGE as usize * SECTOR]
            == target[..RANGE as usize * SECTOR]
    );
}

/// Where the `gpuflash` engine's write loses power: after each of its phases.
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// The backup is saved and checked; the first erase has not started.
    Backup,
    /// The first changed sector is erased; nothing programmed.
    Erase,
    /// The first changed sector is programmed; its read-back has not started.
    Program,
    /// The first changed sector is read back and verified; the next erase has not started.
    Verify,
    /// Every sector is written; the final whole-chip compare has started.
    FinalVerify,
}

#[test]
fn power_cut_after_each_phase_of_the_tool_keeps_the_backup_and_resumes() {
    let original = tool::navi31_image(31);
    let mut target = original.clone();
    for s in [2usize, 7, 300] {
        for b in &mut target[s * SECTOR..(s + 1) * SECTOR] {
            *b = !*b;
        }
    }
    for phase in [
        Phase::Backup,
        Phase::Erase,
        Phase::Program,
        Phase::Verify,
        Phase::FinalVerify,
    ] {
        let dir = tool::Scratch::new(&format!("phase-{phase:?}"));
        let file = dir.join("board.bin");
        std::fs::write(&file, &original).unwrap();
        let backups = dir.join("backups");
        std::fs::create_dir_all(&backups).unwrap();
        let mut b = tool::board(&file);
        let model = b.emulated_model().unwrap();
        let cut = match phase {
            Phase::Backup => Some(PowerCut::BeforeCommand {
                opcode: 0x20,
                occurrence: 0,
            }),
            Phase::Erase => Some(PowerCut::BeforeCommandAfter {
                opcode: 0x02,
                after: 0x20,
            }),
            Phase::Program => Some(PowerCut::BeforeCommandAfter {
                opcode: 0x03,
                after: 0x02,
            }),
            Phase::Verify => Some(PowerCut::BeforeCommand {
                opcode: 0x20,
                occurrence: 1,
            }),
            Phase::FinalVerify => None,
        };
        if let Some(c) = cut {
            model.lock().schedule_power_cut(c);
        }
        let first = tool::write(&mut b, &target, Some(&backups), &mut |ev| {
            if let (Phase::FinalVerify, FlashEvent::Start { what: "verify", .. }) = (phase, ev) {
                model.lock().power_off();
            }
        });
        assert!(!model.lock().powered(), "{phase:?}: the power was cut");
        let e = first.expect_err("a write that lost power fails");
        assert!(e.to_string().contains("re-run"), "{phase:?}: {e}");
        drop(b);
        // The user keeps a good backup of the original flash.
        let saved = tool::backups_in(&backups);
        assert!(
            saved.iter().any(|(_, d)| *d == original),
            "{phase:?}: the backup of the original survives"
        );
        // Power on (a fresh board over the same image file) and re-run: it resumes.
        let mut b = tool::board(&file);
        let r = tool::write(&mut b, &target, Some(&backups), &mut |_| {})
            .unwrap_or_else(|e| panic!("{phase:?}: resume failed: {e}"));
        assert!(r.summary.written <= 3, "{phase:?}: {:?}", r.summary);
        drop(b);
        assert!(
            std::fs::read(&file).unwrap() == target,
            "{phase:?}: the flash equals the image"
        );
        let saved = tool::backups_in(&backups);
        assert!(
            saved.iter().any(|(_, d)| *d == original),
            "{phase:?}: the original's backup is still there"
        );
    }
}
