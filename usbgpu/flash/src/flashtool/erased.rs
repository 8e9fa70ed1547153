//! Type-erased BAR5 access for [`super::Board`]: every transport's MMIO behind one
//! `Mmio<Error = String>` that counts accesses, and one delay type (emulated time on the emulator,
//! sleeping on hardware), so the flash and PSP drivers are instantiated once.
use std::time::Duration;

use modelrt_hal::embedded_hal::delay::DelayNs;
use modelrt_hal::mmio::Mmio;

/// Any transport's BAR5 with its errors as text; every access adds one to a counter the board owns.
pub struct Bar5<'a> {
    inner: Box<dyn Mmio<Error = String> + 'a>,
    accesses: &'a mut u64,
}

impl<'a> Bar5<'a> {
    /// Erase `mmio`, counting into `accesses`.
    pub fn new(mmio: impl Mmio + 'a, accesses: &'a mut u64) -> Self {
        Bar5 {
            inner: Box::new(TextErr(mmio)),
            accesses,
        }
    }
}

/// An [`Mmio`] whose errors are their `Display` text.
struct TextErr<M>(M);

impl<M: Mmio> Mmio for TextErr<M> {
    type Error = String;
    fn read32(&mut self, o: u64) -> Result<u32, String> {
        self.0.read32(o).map_err(|e| e.to_string())
    }
    fn write32(&mut self, o: u64, v: u32) -> Result<(), String> {
        self.0.write32(o, v).map_err(|e| e.to_string())
    }
    fn write32_posted(&mut self, o: u64, v: u32) -> Result<(), String> {
        self.0.write32_posted(o, v).map_err(|e| e.to_string())
    }
    fn flush(&mut self) -> Result<(), String> {
        self.0.flush().map_err(|e| e.to_string())
    }
    fn read_block(&mut self, o: u64, out: &mut [u32]) -> Result<(), String> {
        self.0.read_block(o, out).map_err(|e| e.to_string())
    }
    fn write_block(&mut self, o: u64, d: &[u32]) -> Result<(), String> {
        self.0.write_block(o, d).map_err(|e| e.to_string())
    }
}

impl Mmio for Bar5<'_> {
    type Error = String;
    fn read32(&mut self, o: u64) -> Result<u32, String> {
        *self.accesses += 1;
        self.inner.read32(o)
    }
    fn write32(&mut self, o: u64, v: u32) -> Result<(), String> {
        *self.accesses += 1;
        self.inner.write32(o, v)
    }
    fn write32_posted(&mut self, o: u64, v: u32) -> Result<(), String> {
        *self.accesses += 1;
        self.inner.write32_posted(o, v)
    }
    fn flush(&mut self) -> Result<(), String> {
        self.inner.flush()
    }
    fn read_block(&mut self, o: u64, out: &mut [u32]) -> Result<(), String> {
        *self.accesses += 1;
        self.inner.read_block(o, out)
    }
    fn write_block(&mut self, o: u64, d: &[u32]) -> Result<(), String> {
        *self.accesses += 1;
        self.inner.write_block(o, d)
    }
}

/// Any delay source.
pub struct BoardDelay(Box<dyn DelayNs>);

impl BoardDelay {
    /// Erase `delay`.
    pub fn new(delay: impl DelayNs + 'static) -> Self {
        BoardDelay(Box::new(delay))
    }
}

impl DelayNs for BoardDelay {
    fn delay_ns(&mut self, ns: u32) {
        self.0.delay_ns(ns)
    }
}

/// Wall-clock delay for hardware.
pub struct SleepDelay;

impl DelayNs for SleepDelay {
    fn delay_ns(&mut self, ns: u32) {
        std::thread::sleep(Duration::from_nanos(ns as u64));
    }
}
