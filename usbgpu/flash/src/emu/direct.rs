//! `DirectMmio`: a plain [`Mmio`] over a [`RegisterModel`] — the emulator path without a bridge in
//! between (what native PCI looks like to the tools), with access counters and emulated time.
//!
//! [`SharedModel`] lets the same model sit behind an `Mmio` and a [`ModelDelay`] (the tools'
//! polling delays advance the model's clock instead of sleeping), or be handed to the bridge
//! emulator while a test keeps a handle for back-door checks and power-loss injection.
use std::sync::{Arc, Mutex, MutexGuard};

use modelrt_hal::embedded_hal::delay::DelayNs;
use modelrt_hal::mmio::Mmio;

use modelrt_asm24::emu::RegisterModel;

/// Emulated duration of one direct access (about a native PCIe MMIO round trip).
pub const DEFAULT_ACCESS_NS: u64 = 1_000;

/// Counted accesses; each block access counts once (it is one burst on any transport).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccessCounts {
    /// `read32` calls.
    pub reads: u64,
    /// `write32` and `write32_posted` calls.
    pub writes: u64,
    /// `read_block` calls.
    pub block_reads: u64,
    /// `write_block` calls.
    pub block_writes: u64,
}

impl AccessCounts {
    /// All accesses.
    pub fn total(&self) -> u64 {
        self.reads + self.writes + self.block_reads + self.block_writes
    }
}

/// Invalid access (the model contract requires aligned offsets inside the BAR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirectError {
    /// Offending byte offset.
    pub offset: u64,
}

impl core::fmt::Display for DirectError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "emulated BAR access at 0x{:X} is unaligned or outside the BAR",
            self.offset
        )
    }
}

/// A plain `Mmio` over a model.
pub struct DirectMmio<M: RegisterModel> {
    model: M,
    access_ns: u64,
    counts: AccessCounts,
}

impl<M: RegisterModel> DirectMmio<M> {
    /// Wrap `model`; each access lets [`DEFAULT_ACCESS_NS`] of emulated time pass.
    pub fn new(model: M) -> Self {
        DirectMmio {
            model,
            access_ns: DEFAULT_ACCESS_NS,
            counts: AccessCounts::default(),
        }
    }

    /// Set the emulated duration of one access.
    pub fn with_access_ns(mut self, ns: u64) -> Self {
        self.access_ns = ns;
        self
    }

    /// Access counters.
    pub fn counts(&self) -> AccessCounts {
        self.counts
    }

    /// Reset the counters.
    pub fn reset_counts(&mut self) {
        self.counts = AccessCounts::default();
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }

    fn check(&self, offset: u64, dwords: usize) -> Result<(), DirectError> {
        let end = offset.checked_add(4 * dwords as u64);
        match end {
            Some(e) if offset.is_multiple_of(4) && e <= self.model.size() => Ok(()),
            _ => Err(DirectError { offset }),
        }
    }
}

impl<M: RegisterModel> Mmio for DirectMmio<M> {
    type Error = DirectError;

    fn read32(&mut self, offset: u64) -> Result<u32, DirectError> {
        self.check(offset, 1)?;
        self.counts.reads += 1;
        self.model.advance(self.access_ns);
        Ok(self.model.read32(offset))
    }

    fn write32(&mut self, offset: u64, value: u32) -> Result<(), DirectError> {
        self.check(offset, 1)?;
        self.counts.writes += 1;
        self.model.advance(self.access_ns);
        self.model.write32(offset, value);
        Ok(())
    }

    fn read_block(&mut self, offset: u64, out: &mut [u32]) -> Result<(), DirectError> {
        self.check(offset, out.len())?;
        self.counts.block_reads += 1;
        self.model.advance(self.access_ns);
        for (i, w) in out.iter_mut().enumerate() {
            *w = self.model.read32(offset + 4 * i as u64);
        }
        Ok(())
    }

    fn write_block(&mut self, offset: u64, data: &[u32]) -> Result<(), DirectError> {
        self.check(offset, data.len())?;
        self.counts.block_writes += 1;
        self.model.advance(self.access_ns);
        for (i, w) in data.iter().enumerate() {
            self.model.write32(offset + 4 * i as u64, *w);
        }
        Ok(())
    }
}

/// A model shared between an `Mmio`, a [`ModelDelay`] and test code.
pub struct SharedModel<M>(Arc<Mutex<M>>);

impl<M> Clone for SharedModel<M> {
    fn clone(&self) -> Self {
        SharedModel(Arc::clone(&self.0))
    }
}

impl<M> SharedModel<M> {
    /// Share `model`.
    pub fn new(model: M) -> Self {
        SharedModel(Arc::new(Mutex::new(model)))
    }

    /// Lock the model (a poisoned lock is recovered: the model has no invariants a panic breaks
    /// that matter more than reporting).
    pub fn lock(&self) -> MutexGuard<'_, M> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A delay that advances this model's clock.
    pub fn delay(&self) -> ModelDelay<M> {
        ModelDelay(self.clone())
    }
}

impl<M: RegisterModel> RegisterModel for SharedModel<M> {
    fn size(&self) -> u64 {
        self.lock().size()
    }
    fn read32(&mut self, offset: u64) -> u32 {
        self.lock().read32(offset)
    }
    fn write32(&mut self, offset: u64, value: u32) {
        self.lock().write32(offset, value)
    }
    fn advance(&mut self, ns: u64) {
        self.lock().advance(ns)
    }
}

/// `DelayNs` in emulated time: advances the model's clock, returns at once.
pub struct ModelDelay<M>(SharedModel<M>);

impl<M: RegisterModel> DelayNs for ModelDelay<M> {
    fn delay_ns(&mut self, ns: u32) {
        self.0.lock().advance(ns as u64);
    }
}
