//! The system management unit (MP1, docs/hw/amd-driver.md §4 steps 4 and 8): the message mailbox,
//! the init messages, pinning
//! clocks to their highest DPM level after boot (and back to level 0 in fini), and the mode-1
//! reset used when a previous session left the firmware running.
use super::Am;
use crate::bus::{GpuBus, DEFAULT_TIMEOUT};
use crate::error::{bridge, AmdError};
use crate::regs::{self, Reg};
use core::time::Duration;
use modelrt_hal::usb::UsbTransport;

/// SMU 13.0.0 message ids.
pub mod msg {
    /// Firmware version.
    pub const GET_SMU_VERSION: u32 = 0x2;
    /// Enable every feature.
    pub const ENABLE_ALL_SMU_FEATURES: u32 = 0x6;
    /// Driver table address, high half.
    pub const SET_DRIVER_DRAM_ADDR_HIGH: u32 = 0xE;
    /// Driver table address, low half.
    pub const SET_DRIVER_DRAM_ADDR_LOW: u32 = 0xF;
    /// Soft minimum of a clock.
    pub const SET_SOFT_MIN_BY_FREQ: u32 = 0x19;
    /// Soft maximum of a clock.
    pub const SET_SOFT_MAX_BY_FREQ: u32 = 0x1A;
    /// DPM level frequency (index 0xFF = level count).
    pub const GET_DPM_FREQ_BY_INDEX: u32 = 0x1F;
}

/// Clocks pinned after boot, in the order the reference driver pins them: (name, SMU clock id).
pub const CLOCKS: [(&str, u32); 4] = [("UCLK", 2), ("FCLK", 3), ("SOCCLK", 1), ("GFXCLK", 0)];
/// Most DPM levels a clock can plausibly report.
pub const MAX_DPM_LEVELS: u32 = 16;

struct Mailbox {
    msg: Reg,
    param: Reg,
    resp: Reg,
}

const NORMAL: Mailbox = Mailbox {
    msg: regs::MP1_SMN_C2PMSG_66,
    param: regs::MP1_SMN_C2PMSG_82,
    resp: regs::MP1_SMN_C2PMSG_90,
};
const DEBUG: Mailbox = Mailbox {
    msg: regs::MP1_SMN_C2PMSG_75,
    param: regs::MP1_SMN_C2PMSG_53,
    resp: regs::MP1_SMN_C2PMSG_54,
};

fn send<T: UsbTransport>(
    bus: &mut GpuBus<T>,
    step: &'static str,
    mb: &Mailbox,
    message: u32,
    param: u32,
    timeout: Duration,
) -> Result<u32, AmdError> {
    bus.wreg(step, mb.resp, 0)?;
    bus.wreg(step, mb.param, param)?;
    bus.wreg(step, mb.msg, message)?;
    let resp = bus.poll_with(step, mb.resp, timeout, |v| v != 0)?;
    if resp != 1 {
        return Err(AmdError::Device {
            step,
            what: format!(
                "SMU message {message:#x} (argument {param:#x}) failed with response {resp:#x}"
            ),
        });
    }
    bus.rreg(step, mb.param)
}

/// Send one message on the normal mailbox; returns the result register.
pub fn message<T: UsbTransport>(
    bus: &mut GpuBus<T>,
    step: &'static str,
    message: u32,
    param: u32,
) -> Result<u32, AmdError> {
    send(bus, step, &NORMAL, message, param, DEFAULT_TIMEOUT)
}

/// Whether the SMU answers (GetSmuVersion within 100 ms, errors ignored, then `C2PMSG_90 ≠ 0`).
pub fn alive<T: UsbTransport>(bus: &mut GpuBus<T>) -> Result<bool, AmdError> {
    let step = "SMU probe";
    let _ = send(
        bus,
        step,
        &NORMAL,
        msg::GET_SMU_VERSION,
        0,
        Duration::from_millis(100),
    );
    Ok(bus.rreg(step, regs::MP1_SMN_C2PMSG_90)? != 0)
}

/// Mode-1 reset of a running device (MP0 13.0.0: debug message 2), with bus mastering off
/// around it and the 0.5 s settle (docs/hw/amd-driver.md §4 step 4).
pub fn mode1_reset<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    let step = "SMU mode-1 reset";
    let dev = am.bus.device();
    let cmd = dev.config_read(0x04, 2).map_err(bridge(step))?;
    dev.config_write(0x04, 2, cmd & !0x4)
        .map_err(bridge(step))?;
    send(&mut am.bus, step, &DEBUG, 2, 0, DEFAULT_TIMEOUT)?;
    am.sleep(Duration::from_millis(500));
    let dev = am.bus.device();
    dev.config_write(0x04, 2, cmd | 0x4).map_err(bridge(step))
}

/// SMU init: driver table address, enable every feature.
pub fn init<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    let step = "SMU init";
    let table = am.mc(am.smu_table.paddr);
    message(
        &mut am.bus,
        step,
        msg::SET_DRIVER_DRAM_ADDR_HIGH,
        (table >> 32) as u32,
    )?;
    message(
        &mut am.bus,
        step,
        msg::SET_DRIVER_DRAM_ADDR_LOW,
        table as u32,
    )?;
    message(&mut am.bus, step, msg::ENABLE_ALL_SMU_FEATURES, 0).map(|_| ())
}

fn dpm<T: UsbTransport>(
    bus: &mut GpuBus<T>,
    step: &'static str,
    clk: u32,
    idx: u32,
) -> Result<u32, AmdError> {
    Ok(message(bus, step, msg::GET_DPM_FREQ_BY_INDEX, (clk << 16) | idx)? & 0x7FFF_FFFF)
}

fn set_range<T: UsbTransport>(
    bus: &mut GpuBus<T>,
    step: &'static str,
    clk: u32,
    freq: u32,
) -> Result<(), AmdError> {
    // SetSoftMin: 20 ms, errors ignored (docs/hw/amd-driver.md §2).
    let _ = send(
        bus,
        step,
        &NORMAL,
        msg::SET_SOFT_MIN_BY_FREQ,
        (clk << 16) | freq,
        Duration::from_millis(20),
    );
    message(bus, step, msg::SET_SOFT_MAX_BY_FREQ, (clk << 16) | freq).map(|_| ())
}

/// Pin every clock to its highest DPM level.
pub fn pin_clocks<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    let step = "SMU clocks";
    am.report.dpm_levels.clear();
    for (name, clk) in CLOCKS {
        let levels = dpm(&mut am.bus, step, clk, 0xFF)?;
        if !(1..=MAX_DPM_LEVELS).contains(&levels) {
            return Err(AmdError::Device {
                step,
                what: format!(
                    "SMU reports {levels} DPM levels for {name}, not 1..={MAX_DPM_LEVELS}"
                ),
            });
        }
        am.report.dpm_levels.push((name, levels));
        // Every level's frequency is read (as the reference driver does); the last is the top.
        let mut top = 0;
        for level in 0..levels {
            top = dpm(&mut am.bus, step, clk, level)?;
        }
        set_range(&mut am.bus, step, clk, top)?;
    }
    Ok(())
}

/// Clocks back to level 0 (fini).
pub fn unpin_clocks<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    let step = "SMU clocks (fini)";
    for (_, clk) in CLOCKS {
        let f = dpm(&mut am.bus, step, clk, 0)?;
        set_range(&mut am.bus, step, clk, f)?;
    }
    Ok(())
}
