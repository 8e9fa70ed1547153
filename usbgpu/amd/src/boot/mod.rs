//! The AM boot of a Navi31 behind the bridge, in the fact sheet's order (§4): discovery of VRAM
//! size and FB location, the partial-boot test, then SOC → GMC (MM hub) → IH → PSP → SMU (full
//! boot only), then GFX (GC hub, MEC, compute HQD) and SDMA (queue 0), SMU clocks, and the
//! "booted" scratch markers. [`Am::fini`] undoes the queues. Every step is a function; every poll is
//! bounded and its timeout names the step and the register.
pub mod firmware;
pub mod gfx;
pub mod gmc;
pub mod ih;
pub mod psp;
pub mod sdma;
pub mod smu;
pub mod soc;

use super::bus::GpuBus;
use super::error::AmdError;
use super::ip::IpTable;
use super::mem::{Alloc, PageTables, VramAlloc, RESERVED_TAIL};
use super::regs;
use core::time::Duration;
use firmware::FirmwareSet;
use modelrt_asm24::counting::TransferCounts;
use modelrt_asm24::pcie::PciDevice;
use modelrt_asm24::Bridge;
use modelrt_hal::usb::UsbTransport;
use std::path::Path;

/// `SCRATCH_REG7` value meaning "booted by this driver" (docs/hw/amd-driver.md §4 steps 3 and 9).
pub const BOOTED_MAGIC: u32 = 0xA000_0008;

/// How the boot went, per step.
#[derive(Clone, Debug, Default)]
pub struct BootReport {
    /// Whether the partial-boot path was taken (firmware already running).
    pub partial: bool,
    /// (step, USB transfers, emulated-or-wall nanoseconds as measured by the caller's clock).
    pub steps: Vec<(&'static str, TransferCounts)>,
    /// DPM level counts per clock (UCLK, FCLK, SOCCLK, GFXCLK).
    pub dpm_levels: Vec<(&'static str, u32)>,
}

/// Knobs of a boot.
#[derive(Clone, Debug)]
pub struct BootOptions {
    /// Force a full boot even if the firmware is already up (`AM_RESET=1`).
    pub force_reset: bool,
    /// Record every register access from discovery on ([`GpuBus::take_trace`]).
    pub trace: bool,
}

impl Default for BootOptions {
    fn default() -> Self {
        BootOptions {
            force_reset: true,
            trace: false,
        }
    }
}

/// The booted (or booting) device.
pub struct Am<T> {
    /// Register/VRAM/doorbell access.
    pub bus: GpuBus<T>,
    /// VRAM bytes.
    pub vram_size: u64,
    /// MC address of VRAM offset 0.
    pub fb_base: u64,
    /// VRAM allocator.
    pub alloc: VramAlloc,
    /// Root page-table VRAM offset.
    pub pt_root: u64,
    /// Page for accesses outside the system aperture.
    pub scratch_page: Alloc,
    /// Page for faults.
    pub dummy_page: Alloc,
    /// The firmware in use.
    pub fw: FirmwareSet,
    /// PSP state.
    pub psp: psp::PspState,
    /// SMU driver table.
    pub smu_table: Alloc,
    /// IH rings.
    pub ih: ih::IhState,
    /// The compute queue (after GFX init).
    pub compute: Option<gfx::ComputeQueue>,
    /// The SDMA queue (after SDMA init).
    pub sdma: Option<sdma::SdmaQueue>,
    /// What happened.
    pub report: BootReport,
    /// The discovery table's GC info (CU and scratch-slot counts; sizes the scratch area,
    /// docs/hw/amd-driver.md §5.1). `None` when booted without discovery ([`Am::boot`]).
    pub gc_info: Option<crate::discovery::GcInfo>,
}

impl<T: UsbTransport> Am<T> {
    /// The MC address of a VRAM offset.
    pub fn mc(&self, paddr: u64) -> u64 {
        self.fb_base + paddr
    }

    /// Bring up PCIe behind `bridge`, run IP discovery, load the firmware from `fw_dir` and boot.
    /// `counts` reads the transport's transfer counters (for the per-step report).
    pub fn open(
        bridge: Bridge<T>,
        fw_dir: &Path,
        opts: &BootOptions,
        counts: impl FnMut(&mut GpuBus<T>) -> TransferCounts,
    ) -> Result<Am<T>, AmdError> {
        let dev = PciDevice::open(bridge).map_err(super::error::bridge("PCIe bring-up"))?;
        let mut bus = GpuBus::new(dev, IpTable::navi31())?;
        if opts.trace {
            bus.start_trace();
        }
        let (vram_size, _) = soc::discover(&mut bus)?;
        let (ips, gc) = soc::ip_discovery(&mut bus, vram_size)?;
        bus.set_ips(ips);
        let fw = FirmwareSet::load(fw_dir, &ips)?;
        let mut am = Am::boot(bus, fw, opts, counts)?;
        am.gc_info = gc;
        Ok(am)
    }

    /// Boot with `fw` (already checked) over `bus`, whose register map is the discovered one.
    pub fn boot(
        mut bus: GpuBus<T>,
        fw: FirmwareSet,
        opts: &BootOptions,
        mut counts: impl FnMut(&mut GpuBus<T>) -> TransferCounts,
    ) -> Result<Am<T>, AmdError> {
        let mut last = counts(&mut bus);
        let (vram_size, fb_base) = soc::discover(&mut bus)?;
        let limit = bus.vram_bar_size().min(vram_size - RESERVED_TAIL);
        let mut alloc = VramAlloc::new(limit);
        let tables = PageTables::build(vram_size, &mut alloc)?;
        let scratch_page = alloc.alloc("scratch page", 4096, 4096)?;
        let dummy_page = alloc.alloc("dummy page", 4096, 4096)?;
        let psp_state = psp::PspState::alloc(&mut alloc)?;
        let smu_table = alloc.alloc("SMU driver table", 16 << 10, 4096)?;
        let ih_state = ih::IhState::alloc(&mut alloc)?;
        for (paddr, entries) in &tables.pages {
            let mut bytes = Vec::with_capacity(4096);
            for e in entries {
                bytes.extend_from_slice(&e.to_le_bytes());
            }
            bus.vram_write("page tables", *paddr, &bytes)?;
        }
        let mut am = Am {
            bus,
            vram_size,
            fb_base,
            alloc,
            pt_root: tables.root,
            scratch_page,
            dummy_page,
            fw,
            psp: psp_state,
            smu_table,
            ih: ih_state,
            compute: None,
            sdma: None,
            report: BootReport::default(),
            gc_info: None,
        };
        let mut step = |am: &mut Am<T>, name: &'static str| {
            let now = counts(&mut am.bus);
            am.report.steps.push((name, now.since(&last)));
            last = now;
        };
        step(&mut am, "discovery + page tables");

        let partial = !opts.force_reset && soc::partial_boot_possible(&mut am.bus)?;
        am.report.partial = partial;
        if !partial {
            if psp::sos_alive(&mut am.bus)? && smu::alive(&mut am.bus)? {
                smu::mode1_reset(&mut am)?;
            }
            soc::init(&mut am)?;
            step(&mut am, "SOC");
            gmc::init_hub(&mut am, gmc::Hub::MM)?;
            gmc::flush_tlb(&mut am, &gmc::Hub::MM)?;
            step(&mut am, "GMC (MM hub)");
            ih::init(&mut am)?;
            step(&mut am, "IH");
            psp::init(&mut am)?;
            step(&mut am, "PSP");
            smu::init(&mut am)?;
            step(&mut am, "SMU");
        }
        gfx::init(&mut am, partial)?;
        step(&mut am, "GFX");
        sdma::init(&mut am)?;
        step(&mut am, "SDMA");
        smu::pin_clocks(&mut am)?;
        step(&mut am, "SMU clocks");
        am.bus.wreg("boot done", regs::SCRATCH_REG7, BOOTED_MAGIC)?;
        am.bus.wreg("boot done", regs::SCRATCH_REG6, 1)?;
        gmc::flush_tlbs(&mut am)?;
        am.compute = Some(gfx::ComputeQueue::create(&mut am)?);
        am.sdma = Some(sdma::SdmaQueue::create(&mut am)?);
        step(&mut am, "queues");
        Ok(am)
    }

    /// Tear down: dequeue the compute HQD, stop SDMA, clocks back to level 0, clear the
    /// "session open" marker. Best effort on hardware errors: the first error is returned after
    /// every step was tried.
    pub fn fini(&mut self) -> Result<(), AmdError> {
        let mut first: Option<AmdError> = None;
        let mut keep = |r: Result<(), AmdError>| {
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        };
        keep(gfx::fini(self));
        keep(sdma::fini(self));
        keep(smu::unpin_clocks(self));
        keep(self.bus.wreg("fini", regs::SCRATCH_REG6, 0));
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Sleep on the transport.
    pub fn sleep(&mut self, d: Duration) {
        self.bus.sleep(d)
    }
}
