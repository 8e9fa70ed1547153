//! Discovery of the VRAM size and FB location, the partial-boot test and the SOC (NBIO) init
//! (docs/hw/amd-driver.md §3, §4 steps 1, 3, 4), plus the HDP flush used after host writes.
use super::{Am, BOOTED_MAGIC};
use crate::bus::GpuBus;
use crate::error::AmdError;
use crate::regs;
use modelrt_hal::usb::UsbTransport;

/// `RCC_DEV0_EPF2_STRAP2.strap_no_soft_reset_dev0_f2` (bit 7).
const STRAP_NO_SOFT_RESET: u32 = 1 << 7;

/// VRAM size (bytes, from `RCC_CONFIG_MEMSIZE` in MiB) and the FB base MC address.
pub fn discover<T: UsbTransport>(bus: &mut GpuBus<T>) -> Result<(u64, u64), AmdError> {
    let step = "discovery";
    let mib = bus.rreg(step, regs::RCC_CONFIG_MEMSIZE)? as u64;
    if !(256..=(1 << 20)).contains(&mib) {
        return Err(AmdError::Device {
            step,
            what: format!("RCC_CONFIG_MEMSIZE reports {mib} MiB of VRAM, not a plausible size"),
        });
    }
    let fb = bus.rreg(step, regs::MMMC_VM_FB_LOCATION_BASE)? as u64;
    Ok((mib << 20, (fb & 0xFF_FFFF) << 24))
}

/// Whether the firmware is still running from a previous clean session (docs/hw/amd-driver.md §4
/// step 3):
/// `SCRATCH_REG7` holds the magic, the previous session was finalised (`SCRATCH_REG6 == 0`) and
/// no GC VM protection fault is pending.
pub fn partial_boot_possible<T: UsbTransport>(bus: &mut GpuBus<T>) -> Result<bool, AmdError> {
    let step = "partial-boot check";
    if bus.rreg(step, regs::SCRATCH_REG7)? != BOOTED_MAGIC {
        return Ok(false);
    }
    if bus.rreg(step, regs::SCRATCH_REG6)? != 0 {
        return Ok(false);
    }
    Ok(bus.rreg(step, regs::GCVM_L2_PROTECTION_FAULT_STATUS)? == 0)
}

/// SOC init: allow function-2 soft reset, open the doorbell aperture.
pub fn init<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    let step = "SOC init";
    am.bus
        .rmw(step, regs::RCC_DEV0_EPF2_STRAP2, STRAP_NO_SOFT_RESET, 0)?;
    am.bus
        .wreg(step, regs::RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN, 1)
}

/// Flush the host data path: write the register whose address the remap register reports.
pub fn hdp_flush<T: UsbTransport>(bus: &mut GpuBus<T>, step: &'static str) -> Result<(), AmdError> {
    let at = bus.rreg(step, regs::BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL)? as u64;
    bus.wreg_at(step, "HDP_MEM_FLUSH (remapped)", at, 0)
}

/// Bytes of the discovery binary read (docs/hw/amd-driver.md §4 step 1).
pub const DISCOVERY_BYTES: usize = 10 << 10;
/// Its distance below the top of VRAM.
pub const DISCOVERY_FROM_TOP: u64 = 64 << 10;

/// Read the IP discovery binary (BAR0 when the window reaches it, else `MM_INDEX`/`MM_DATA`) and
/// build the register map from it. Every block the boot needs must be present.
pub fn ip_discovery<T: UsbTransport>(
    bus: &mut GpuBus<T>,
    vram_size: u64,
) -> Result<(crate::ip::IpTable, Option<crate::discovery::GcInfo>), AmdError> {
    use crate::discovery::Discovery;
    use crate::ip::{IpTable, IpVersion, ALL_IPS, SEGMENTS};
    let step = "IP discovery";
    let at = vram_size - DISCOVERY_FROM_TOP;
    let mut buf = vec![0u8; DISCOVERY_BYTES];
    if at + DISCOVERY_BYTES as u64 <= bus.vram_bar_size() {
        bus.vram_read(step, at, &mut buf)?;
    } else {
        for (i, c) in buf.chunks_exact_mut(4).enumerate() {
            let a = at + 4 * i as u64;
            bus.wreg(step, regs::MM_INDEX_HI, (a >> 31) as u32)?;
            bus.wreg(step, regs::MM_INDEX, (a as u32 & 0x7FFF_FFFF) | 0x8000_0000)?;
            c.copy_from_slice(&bus.rreg(step, regs::MM_DATA)?.to_le_bytes());
        }
    }
    let d = Discovery::parse(&buf).map_err(|e| AmdError::Device {
        step,
        what: format!("discovery table at VRAM {at:#x}: {e}"),
    })?;
    let mut t = IpTable::empty();
    for ip in ALL_IPS {
        let Some(e) = d.find(ip.hw_id(), 0) else {
            return Err(AmdError::Device {
                step,
                what: format!(
                    "the discovery table lists no {} (hardware id {})",
                    ip.name(),
                    ip.hw_id()
                ),
            });
        };
        let mut bases = [0u64; SEGMENTS];
        for (slot, b) in bases.iter_mut().zip(e.bases()) {
            *slot = b;
        }
        let (maj, min, rev) = e.version();
        t.set(ip, IpVersion(maj, min, rev), bases);
    }
    Ok((t, d.gc_info))
}
