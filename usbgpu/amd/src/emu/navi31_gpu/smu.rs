//! SMU (MP1 13.0.0) message mailboxes: the normal channel (C2PMSG_66 message, 82 argument and
//! result, 90 response) and the debug channel (75 / 53 / 54), answering with DPM tables of a
//! Navi31 board instead of echoing the argument (docs/hw/amd-gpu.md §6).
use super::regs::*;
use super::state::GpuFaults;

/// Response codes written to the response register.
pub const RESP_OK: u32 = 0x1;
pub const RESP_FAIL: u32 = 0xFF;
pub const RESP_UNKNOWN: u32 = 0xFE;
pub const RESP_BAD_PREREQ: u32 = 0xFD;

/// Message ids (SMU 13.0.0, docs/hw/amd-gpu.md §6.1).
pub const MSG_GET_SMU_VERSION: u32 = 0x2;
pub const MSG_ENABLE_ALL_FEATURES: u32 = 0x6;
pub const MSG_SET_DRIVER_DRAM_ADDR_HIGH: u32 = 0xE;
pub const MSG_SET_DRIVER_DRAM_ADDR_LOW: u32 = 0xF;
pub const MSG_TRANSFER_TABLE_SMU2DRAM: u32 = 0x12;
pub const MSG_SET_SOFT_MIN_BY_FREQ: u32 = 0x19;
pub const MSG_SET_SOFT_MAX_BY_FREQ: u32 = 0x1A;
pub const MSG_GET_DPM_FREQ_BY_INDEX: u32 = 0x1F;
pub const MSG_MODE1_RESET: u32 = 0x2F;
pub const MSG_SET_PPT_LIMIT: u32 = 0x32;
/// Debug-channel message that asks for a mode-1 reset (MP0 13.0.0 path, docs/hw/amd-gpu.md §6.1).
pub const DEBUG_MODE1_RESET: u32 = 0x2;

/// The SMU firmware version the model reports (emulator choice).
pub const SMU_VERSION: u32 = 0x004E_3F00;

/// DPM levels in MHz per clock id (GFXCLK 0, SOCCLK 1, UCLK 2, FCLK 3); emulator choice shaped
/// like a 7900 XTX (docs/hw/amd-gpu.md §6.2).
pub const DPM_MHZ: [&[u32]; 4] = [
    &[500, 2500],
    &[500, 960, 1200, 1400],
    &[96, 456, 772, 1249],
    &[400, 1200, 1600, 1900],
];

/// What a register write asks the rest of the GPU to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmuAction {
    None,
    Mode1Reset,
}

/// SMU state.
#[derive(Clone, Debug, Default)]
pub struct Smu {
    /// Normal channel: response (90), argument/result (82).
    resp: u32,
    arg: u32,
    /// Debug channel: response (54), argument (53), message (75).
    dbg_resp: u32,
    dbg_arg: u32,
    driver_table: u64,
    features_enabled: bool,
    /// Soft min/max per clock (MHz), as last set.
    pub soft_min: [u32; 4],
    pub soft_max: [u32; 4],
    pub ppt_limit: u32,
    /// Messages handled.
    pub messages: u64,
}

impl Smu {
    /// The SMU after a mode-1 reset: firmware state cleared, the mailbox registers keep the
    /// response to the reset request (the driver may poll it).
    pub fn after_reset(&self) -> Smu {
        Smu {
            resp: self.resp,
            arg: self.arg,
            dbg_resp: self.dbg_resp,
            dbg_arg: self.dbg_arg,
            ..Smu::default()
        }
    }

    pub fn read(&self, offset: u64) -> Option<u32> {
        Some(match offset {
            MP1_C2PMSG_90 => self.resp,
            MP1_C2PMSG_82 => self.arg,
            MP1_C2PMSG_54 => self.dbg_resp,
            MP1_C2PMSG_53 => self.dbg_arg,
            MP1_C2PMSG_66 | MP1_C2PMSG_75 => 0,
            _ => return None,
        })
    }

    /// `None`: not an SMU register.
    pub fn write(&mut self, offset: u64, value: u32, faults: &GpuFaults) -> Option<SmuAction> {
        match offset {
            MP1_C2PMSG_90 => self.resp = value,
            MP1_C2PMSG_82 => self.arg = value,
            MP1_C2PMSG_54 => self.dbg_resp = value,
            MP1_C2PMSG_53 => self.dbg_arg = value,
            MP1_C2PMSG_66 if !faults.smu_silent => {
                self.messages += 1;
                let (resp, result, action) = self.message(value, self.arg);
                self.arg = result;
                self.resp = resp;
                return Some(action);
            }
            MP1_C2PMSG_75 if !faults.smu_silent => {
                self.messages += 1;
                if value == DEBUG_MODE1_RESET {
                    self.dbg_resp = RESP_OK;
                    return Some(SmuAction::Mode1Reset);
                }
                self.dbg_resp = RESP_UNKNOWN;
            }
            MP1_C2PMSG_66 | MP1_C2PMSG_75 => {}
            _ => return None,
        }
        Some(SmuAction::None)
    }

    /// Handle one message: (response, value left in C2PMSG_82, action).
    fn message(&mut self, msg: u32, arg: u32) -> (u32, u32, SmuAction) {
        let clk = (arg >> 16) as usize;
        let clock_msg = matches!(
            msg,
            MSG_SET_SOFT_MIN_BY_FREQ | MSG_SET_SOFT_MAX_BY_FREQ | MSG_GET_DPM_FREQ_BY_INDEX
        );
        if clock_msg && !self.features_enabled {
            return (RESP_BAD_PREREQ, arg, SmuAction::None);
        }
        if clock_msg && clk >= DPM_MHZ.len() {
            return (RESP_FAIL, arg, SmuAction::None);
        }
        match msg {
            MSG_GET_SMU_VERSION => (RESP_OK, SMU_VERSION, SmuAction::None),
            MSG_SET_DRIVER_DRAM_ADDR_HIGH => {
                self.driver_table = (self.driver_table & 0xFFFF_FFFF) | (arg as u64) << 32;
                (RESP_OK, 0, SmuAction::None)
            }
            MSG_SET_DRIVER_DRAM_ADDR_LOW => {
                self.driver_table = (self.driver_table & !0xFFFF_FFFF) | arg as u64;
                (RESP_OK, 0, SmuAction::None)
            }
            MSG_ENABLE_ALL_FEATURES => {
                self.features_enabled = true;
                (RESP_OK, 0, SmuAction::None)
            }
            MSG_TRANSFER_TABLE_SMU2DRAM if self.driver_table == 0 => {
                (RESP_BAD_PREREQ, arg, SmuAction::None)
            }
            MSG_TRANSFER_TABLE_SMU2DRAM => (RESP_OK, 0, SmuAction::None),
            MSG_SET_SOFT_MIN_BY_FREQ => {
                self.soft_min[clk] = arg & 0xFFFF;
                (RESP_OK, 0, SmuAction::None)
            }
            MSG_SET_SOFT_MAX_BY_FREQ => {
                self.soft_max[clk] = arg & 0xFFFF;
                (RESP_OK, 0, SmuAction::None)
            }
            MSG_GET_DPM_FREQ_BY_INDEX => {
                let levels = DPM_MHZ[clk];
                match (arg & 0xFFFF) as usize {
                    0xFF => (RESP_OK, levels.len() as u32, SmuAction::None),
                    i if i < levels.len() => (RESP_OK, levels[i], SmuAction::None),
                    _ => (RESP_FAIL, arg, SmuAction::None),
                }
            }
            MSG_SET_PPT_LIMIT => {
                self.ppt_limit = arg;
                (RESP_OK, 0, SmuAction::None)
            }
            MSG_MODE1_RESET => (RESP_OK, 0, SmuAction::Mode1Reset),
            _ => (RESP_UNKNOWN, arg, SmuAction::None),
        }
    }
}
