//! Transport fault injection: a failing BAR5 access at every point of a session (open, primed and
//! pipelined reads, page program, close) must surface as an error — never a panic or a hang — and
//! the session must still restore the pad/mirror/ROM_CNTL registers; over the bridge emulator a
//! USB disconnect in the middle of a dump fails cleanly.
use modelrt_gpuflash::emu::direct::{DirectMmio, SharedModel};
use modelrt_gpuflash::emu::flash_board::{Navi31Bar5, RESET_MIRROR, RESET_PADS, RESET_ROM_CNTL};
use modelrt_gpuflash::navi31::regs::*;
use modelrt_gpuflash::navi31::romsw::{RomSw, RomSwConfig};
use modelrt_gpuflash::navi31::spi_nor::SpiNor;
use modelrt_hal::mmio::Mmio;

mod common {
    pub mod navi31;
}

use common::navi31::{behind_bridge, model};

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
