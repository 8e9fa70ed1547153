//! PSP early-boot flash mailbox model (docs/hw/navi31-spi-flash.md §8, §12 item 7): COMMAND/COMMAND_DATA/DOORBELL, the
//! boot phase, the transfer state machine and the item request schedule, with error injection.
//!
//! Emulator choices (not in the sources), all configurable through [`PspConfig`]:
//! * the default item schedule and the probe values are invented but shaped like the reference's
//!   `(phase << 8) | item` words, ending with phase 2;
//! * in the SOS phase GET_TRANSFER_TYPE and the transfer commands return 0x0A (docs/hw/navi31-spi-flash.md §8: "update
//!   commands gated"); the probe queries still answer;
//! * DATA without a transfer → 0x11, overflow → 0x02 (suggested codes, docs/hw/navi31-spi-flash.md §12); START with
//!   an item the firmware did not request or a bad length → 0x03; an END whose count does not
//!   match → 0x11 and the transfer is dropped without advancing the schedule;
//! * after the phase-2 item the model refuses further transfers with 0x10 until power-on, like a
//!   board that needs a hard power cycle;
//! * COMMAND bits 30:16 are cleared on completion.
//!
//! It records the streamed items; it does **not** reproduce what the real PSP then writes to the
//! SPI flash (the observed result is not a byte-identical rewrite) — only hardware shows that.

/// Boot phase of the PSP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PspPhase {
    /// Autonomous PSP boot done, SOS not loaded: early item streaming works.
    EarlyPbl,
    /// SOS loaded (host driver initialized): update commands gated.
    Sos,
}

/// Make the `occurrence`-th (0-based) execution of `command` return `error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InjectError {
    /// Command id.
    pub command: u8,
    /// Which execution of it fails.
    pub occurrence: u32,
    /// Error code returned.
    pub error: u16,
}

/// Mailbox model configuration.
#[derive(Clone, Debug)]
pub struct PspConfig {
    /// Boot phase at power-on.
    pub phase: PspPhase,
    /// GET_BOOT_PARTITION response.
    pub boot_partition: u32,
    /// GET_FB_STATE response.
    pub fb_state: u32,
    /// SPI_GET_MODEL_ID response.
    pub spi_model_id: u32,
    /// `(phase << 8) | item` words the firmware requests, in order.
    pub schedule: Vec<u32>,
    /// Emulated time a command keeps the mailbox busy (ns).
    pub busy_ns: u64,
    /// Error injection.
    pub inject: Option<InjectError>,
}

impl Default for PspConfig {
    fn default() -> Self {
        let items = [
            0x01u32, 0x80, 0x81, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x89,
        ];
        let mut schedule: Vec<u32> = items.iter().map(|i| (1 << 8) | i).collect();
        if let Some(last) = schedule.last_mut() {
            *last = (2 << 8) | (*last & 0xFF);
        }
        PspConfig {
            phase: PspPhase::EarlyPbl,
            boot_partition: 0,
            fb_state: 0,
            spi_model_id: 0x0000_C860,
            schedule,
            busy_ns: 20_000,
            inject: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Transfer {
    Idle,
    Receiving {
        item: u8,
        expected: usize,
        data: Vec<u8>,
    },
}

/// One executed command (log for tests and `--verbose`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoggedCommand {
    /// Command id.
    pub command: u8,
    /// COMMAND_DATA at submission.
    pub arg: u32,
    /// Error returned.
    pub error: u16,
}

/// The mailbox.
pub struct Psp {
    cfg: PspConfig,
    command: u32,
    data: u32,
    busy_left_ns: Option<u64>,
    pending: Option<(u16, u32)>,
    transfer: Transfer,
    pos: usize,
    finished: bool,
    counts: [u32; 256],
    /// Items fully received, in order.
    pub received: Vec<(u8, Vec<u8>)>,
    /// Every executed command.
    pub log: Vec<LoggedCommand>,
}

impl Psp {
    /// Power-on state.
    pub fn new(cfg: PspConfig) -> Self {
        Psp {
            cfg,
            command: 0x8000_0000,
            data: 0,
            busy_left_ns: None,
            pending: None,
            transfer: Transfer::Idle,
            pos: 0,
            finished: false,
            counts: [0; 256],
            received: Vec::new(),
            log: Vec::new(),
        }
    }

    /// COMMAND register.
    pub fn read_command(&self) -> u32 {
        self.command
    }

    /// COMMAND_DATA register.
    pub fn read_data(&self) -> u32 {
        self.data
    }

    /// Host writes COMMAND.
    pub fn write_command(&mut self, v: u32) {
        self.command = v;
    }

    /// Host writes COMMAND_DATA.
    pub fn write_data(&mut self, v: u32) {
        self.data = v;
    }

    /// Host rings the doorbell.
    pub fn doorbell(&mut self, v: u32) {
        if v != 1 || self.pending.is_some() {
            return;
        }
        let id = ((self.command >> 16) & 0xFF) as u8;
        let arg = self.data;
        let (error, response) = self.execute(id, arg);
        self.log.push(LoggedCommand {
            command: id,
            arg,
            error,
        });
        self.pending = Some((error, response));
        self.busy_left_ns = Some(self.cfg.busy_ns);
        self.command &= !0x8000_0000;
        if self.cfg.busy_ns == 0 {
            self.advance(0);
        }
    }

    /// Let emulated time pass.
    pub fn advance(&mut self, ns: u64) {
        let Some(left) = self.busy_left_ns else {
            return;
        };
        if ns >= left {
            self.busy_left_ns = None;
            if let Some((error, response)) = self.pending.take() {
                self.command = 0x8000_0000 | error as u32;
                self.data = response;
            }
        } else {
            self.busy_left_ns = Some(left - ns);
        }
    }

    fn execute(&mut self, id: u8, arg: u32) -> (u16, u32) {
        let n = self.counts[id as usize];
        self.counts[id as usize] += 1;
        if let Some(inj) = self.cfg.inject {
            if inj.command == id && inj.occurrence == n {
                return (inj.error, 0);
            }
        }
        let gated = self.cfg.phase == PspPhase::Sos;
        match id {
            0x01 => (0, self.cfg.boot_partition),
            0x06 => (0, self.cfg.fb_state),
            0x0B => (0, self.cfg.spi_model_id),
            0x07..=0x0A if gated => (0x0A, 0),
            0x07..=0x0A if self.finished => (0x10, 0),
            0x07 => match self.cfg.schedule.get(self.pos) {
                Some(&w) => (0, w),
                None => (0x10, 0),
            },
            0x08 => {
                let item = (arg & 0xFF) as u8;
                let len = (arg >> 8) as usize;
                let wanted = self.cfg.schedule.get(self.pos).map(|w| (w & 0xFF) as u8);
                if self.transfer != Transfer::Idle {
                    (0x11, 0)
                } else if wanted != Some(item) || len == 0 || !len.is_multiple_of(4) {
                    (0x03, 0)
                } else {
                    self.transfer = Transfer::Receiving {
                        item,
                        expected: len,
                        data: Vec::new(),
                    };
                    (0, 0)
                }
            }
            0x09 => match &mut self.transfer {
                Transfer::Idle => (0x11, 0),
                Transfer::Receiving { expected, data, .. } => {
                    if data.len() + 4 > *expected {
                        (0x02, 0)
                    } else {
                        data.extend_from_slice(&arg.to_le_bytes());
                        (0, 0)
                    }
                }
            },
            0x0A => match std::mem::replace(&mut self.transfer, Transfer::Idle) {
                Transfer::Idle => (0x11, 0),
                Transfer::Receiving {
                    item,
                    expected,
                    data,
                } => {
                    let sent = (arg >> 8) as usize;
                    if (arg & 0xFF) as u8 != item || sent != data.len() || sent != expected {
                        return (0x11, 0);
                    }
                    let phase = self.cfg.schedule.get(self.pos).map(|w| w >> 8).unwrap_or(0);
                    self.received.push((item, data));
                    self.pos += 1;
                    if phase == 2 {
                        self.finished = true;
                    }
                    (0, 0)
                }
            },
            _ => (0x0E, 0),
        }
    }
}
