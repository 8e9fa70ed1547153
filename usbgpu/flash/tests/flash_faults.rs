//! Transport fault injection: a failing BAR5 access at every point of a session (open, primed and
//! pipelined reads, page program, close) must surface as an error — never a panic or a hang — and
//! the session must still restore the pad/mirror/ROM_CNTL registers; over the bridge emulator a
//! USB disconnect in the middle of a dump fails cleanly. Flash faults against the `gpuflash`
//! engine: a bit flipped while the backup is read stops the write before any erase, a skip is
//! never decided by one read, and a program disturb is caught by the final whole-chip compare.
use modelrt_gpuflash::emu::direct::{DirectMmio, SharedModel};
use modelrt_gpuflash::emu::flash_board::{
    Disturb, Navi31Bar5, ReadFlip, RESET_MIRROR, RESET_PADS, RESET_ROM_CNTL,
};
use modelrt_gpuflash::navi31::regs::*;
use modelrt_gpuflash::navi31::romsw::{RomSw, RomSwConfig};
use modelrt_gpuflash::navi31::spi_nor::SpiNor;
use modelrt_hal::mmio::Mmio;

mod common {
    pub mod navi31;
    pub mod tool;
}

use common::navi31::{behind_bridge, model};
use common::tool;
use modelrt_gpuflash::flashtool::FlashEvent;

/// Fails exactly the `fail_at`-th access (0-based), then works again (a transient fault).
struct Faulty<M> {
    inner: M,
    n: u64,
    fail_at: u64,
}

impl<M: Mmio> Faulty<M> {
    fn tick(&mut self) -> Result<(), String> {
        let n = self.n;
        self.n += 1;
        if n == self.fail_at {
            return Err(format!("injected fault at access {n}"));
        }
        Ok(())
    }
}

impl<M: Mmio> Mmio for Faulty<M> {
    type Error = String;
    fn read32(&mut self, o: u64) -> Result<u32, String> {
        self.tick()?;
        self.inner.read32(o).map_err(|e| e.to_string())
    }
    fn write32(&mut self, o: u64, v: u32) -> Result<(), String> {
        self.tick()?;
        self.inner.write32(o, v).map_err(|e| e.to_string())
    }
    fn read_block(&mut self, o: u64, out: &mut [u32]) -> Result<(), String> {
        self.tick()?;
        self.inner.read_block(o, out).map_err(|e| e.to_string())
    }
    fn write_block(&mut self, o: u64, d: &[u32]) -> Result<(), String> {
        self.tick()?;
        self.inner.write_block(o, d).map_err(|e| e.to_string())
    }
}

fn image() -> Vec<u8> {
    (0..0x20_0000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect()
}

/// open → probe → 600-byte read → page program → close. Returns (work ok, close ok).
fn session(model: &SharedModel<Navi31Bar5>, fail_at: u64) -> (bool, bool, u64) {
    let mmio = Faulty {
        inner: DirectMmio::new(model.clone()),
        n: 0,
        fail_at,
    };
    let Ok(engine) = RomSw::open(mmio, model.delay(), RomSwConfig::default()) else {
        return (false, true, 0);
    };
    let Ok(mut nor) = SpiNor::probe(engine, model.delay()) else {
        return (false, true, 0);
    };
    let mut buf = vec![0u8; 600];
    let work =
        nor.read(0x1234, &mut buf).is_ok() && nor.program_page(0x10_0000, &[0x42; 8]).is_ok();
    let closed = nor.spi_mut().close().is_ok();
    let used = nor.spi_mut().mmio().n;
    (work, closed, used)
}

#[test]
fn a_fault_at_any_access_is_an_error_and_registers_are_restored() {
    let img = image();
    let clean = model(img.clone());
    let (ok, closed, total) = session(&clean, u64::MAX);
    assert!(ok && closed);
    assert!(total > 40, "the session makes {total} accesses");
    let mut failures = 0;
    for k in 0..total {
        let m = model(img.clone());
        let (ok, closed, _) = session(&m, k);
        failures += (!ok || !closed) as u32;
        let g = m.lock();
        let regs = [
            g.reg(ROM_CNTL),
            g.reg(PAGE_MIRROR_CNTL),
            g.reg(GPIO_PAD_MASK),
            g.reg(GPIO_PAD_A),
            g.reg(GPIO_PAD_EN),
        ];
        let want = [
            RESET_ROM_CNTL,
            RESET_MIRROR,
            RESET_PADS[0],
            RESET_PADS[1],
            RESET_PADS[2],
        ];
        let wrong = regs.iter().zip(want).filter(|(a, b)| **a != *b).count();
        if closed {
            assert_eq!(
                wrong, 0,
                "fault at access {k}: registers restored {regs:08X?}"
            );
        } else {
            // The fault hit one restore write itself: only that register can be left over.
            assert!(wrong <= 1, "fault at access {k} during close: {regs:08X?}");
        }
        if ok {
            assert_eq!(g.flash().array()[0x10_0000], 0x42 & img[0x10_0000]);
        }
    }
    assert_eq!(failures as u64, total, "every injected fault was reported");
}

#[test]
fn usb_disconnect_mid_dump_fails_cleanly() {
    let model = model(image());
    let (mut dev, h) = behind_bridge(&model);
    let mut bar5 = dev.bar_mmio(5).unwrap();
    let engine = RomSw::open(&mut bar5, model.delay(), RomSwConfig::default()).unwrap();
    let mut nor = SpiNor::probe(engine, model.delay()).unwrap();
    h.faults(|f| f.disconnect_after_bulk_bytes = Some(100_000));
    let mut buf = vec![0u8; 0x20_0000];
    let e = nor.read(0, &mut buf).unwrap_err();
    assert!(e.to_string().to_lowercase().contains("disconnect"), "{e}");
}

/// The original flash and a target that changes sectors 3, 4 and 200 (all pages non-blank).
fn original_and_target() -> (Vec<u8>, Vec<u8>) {
    let original = tool::navi31_image(21);
    let mut target = original.clone();
    for s in [3usize, 4, 200] {
        for b in &mut target[s * tool::SECTOR..(s + 1) * tool::SECTOR] {
            *b = b.rotate_left(3) ^ 0x5A;
        }
    }
    (original, target)
}

#[test]
fn a_bit_flip_while_taking_the_backup_stops_the_write_before_any_erase() {
    let (original, target) = original_and_target();
    // 0x5123 lies inside a 64 KiB read chunk: one wire read of it per whole-chip read. The flip
    // hits the backup read (occurrence 0) or the read that checks it (occurrence 1).
    for first in [0u32, 1] {
        let dir = tool::Scratch::new(&format!("flip-backup-{first}"));
        let file = dir.join("board.bin");
        std::fs::write(&file, &original).unwrap();
        let backups = dir.join("backups");
        std::fs::create_dir_all(&backups).unwrap();
        let mut b = tool::board(&file);
        let model = b.emulated_model().unwrap();
        model.lock().schedule_read_flip(ReadFlip {
            addr: 0x5123,
            mask: 0x10,
            first,
            count: 1,
        });
        let e = tool::write(&mut b, &target, Some(&backups), &mut |_| {})
            .expect_err("a backup that does not match the flash stops the write");
        let msg = e.to_string();
        assert!(
            msg.contains("backup")
                && msg.contains("0x005123")
                && msg.contains("nothing was erased"),
            "occurrence {first}: {msg}"
        );
        assert_eq!(model.lock().flash().stats().erases, 0, "no erase");
        assert!(model.lock().flash().array() == original, "flash untouched");
        drop(b);
        // No unverified backup is left behind to be restored from later.
        for (p, d) in tool::backups_in(&backups) {
            assert!(d == original, "{} is a good backup", p.display());
        }
        // A clean re-run backs up the original and writes.
        let mut b = tool::board(&file);
        let r = tool::write(&mut b, &target, Some(&backups), &mut |_| {}).unwrap();
        assert_eq!(r.summary.written, 3);
        drop(b);
        let saved = tool::backups_in(&backups);
        assert_eq!(saved.len(), 1, "{saved:?}");
        assert!(saved[0].1 == original, "the backup is the original flash");
        assert!(std::fs::read(&file).unwrap() == target);
    }
}

#[test]
fn a_sector_is_skipped_only_after_a_second_read_agrees() {
    // The flash differs from the image in one bit of sector 9; the one read that decides whether
    // to skip sector 9 sees that bit flipped (it looks identical). Without a backup the writer's
    // own read is that read; with one, the backup and its check both see it.
    for (name, backup, flips) in [("nobackup", false, 1u32), ("backup", true, 2)] {
        let (original, _) = original_and_target();
        let addr = 9 * tool::SECTOR + 0x123;
        let mut target = original.clone();
        target[addr] ^= 0x04;
        let dir = tool::Scratch::new(&format!("skip-{name}"));
        let file = dir.join("board.bin");
        std::fs::write(&file, &original).unwrap();
        let mut b = tool::board(&file);
        b.emulated_model()
            .unwrap()
            .lock()
            .schedule_read_flip(ReadFlip {
                addr,
                mask: 0x04,
                first: 0,
                count: flips,
            });
        let backups = backup.then(|| dir.join("backups"));
        if let Some(d) = &backups {
            std::fs::create_dir_all(d).unwrap();
        }
        let r = tool::write(&mut b, &target, backups.as_deref(), &mut |_| {});
        drop(b);
        let r = r.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.summary.written, 1, "{name}: sector 9 was written");
        assert!(
            std::fs::read(&file).unwrap() == target,
            "{name}: the flash equals the image"
        );
    }
}

#[test]
fn a_program_disturb_is_caught_by_the_final_whole_chip_compare() {
    let (original, target) = original_and_target();
    let dir = tool::Scratch::new("disturb");
    let file = dir.join("board.bin");
    std::fs::write(&file, &original).unwrap();
    // Sector 3 is written and verified (programs 0..16); the first program of sector 4 then
    // clears a bit back in sector 3.
    let addr = (0..tool::SECTOR)
        .map(|i| 3 * tool::SECTOR + i)
        .find(|&a| target[a] & 0x01 != 0)
        .unwrap();
    let mut b = tool::board(&file);
    b.emulated_model()
        .unwrap()
        .lock()
        .schedule_disturb(Disturb {
            addr,
            mask: 0x01,
            program: 16,
        });
    let e = tool::write(&mut b, &target, None, &mut |_| {})
        .expect_err("the final compare finds the disturbed byte");
    let msg = e.to_string();
    assert!(
        msg.contains("sector 3")
            && msg.contains(&format!("0x{addr:06X}"))
            && msg.contains("re-run"),
        "{msg}"
    );
    drop(b);
    // The advice works: the same write again repairs sector 3.
    let mut b = tool::board(&file);
    let r = tool::write(&mut b, &target, None, &mut |_| {}).unwrap();
    assert_eq!(r.summary.written, 1);
    drop(b);
    assert!(std::fs::read(&file).unwrap() == target);
}

#[test]
fn a_disconnect_while_checking_the_backup_keeps_no_unchecked_backup() {
    let (original, target) = original_and_target();
    let dir = tool::Scratch::new("check-cut");
    let file = dir.join("board.bin");
    std::fs::write(&file, &original).unwrap();
    let backups = dir.join("backups");
    std::fs::create_dir_all(&backups).unwrap();
    let mut b = tool::board(&file);
    let model = b.emulated_model().unwrap();
    let e = tool::write(&mut b, &target, Some(&backups), &mut |ev| {
        if let FlashEvent::Start {
            what: "backup check",
            ..
        } = ev
        {
            model.lock().power_off();
        }
    })
    .expect_err("the check cannot run without power");
    assert_eq!(model.lock().flash().stats().erases, 0, "{e}");
    drop(b);
    assert!(tool::backups_in(&backups).is_empty(), "{e}");
    assert!(std::fs::read(&file).unwrap() == original);
}
