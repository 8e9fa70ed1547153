//! Opening the board `gpuflash` works on — an ASM24 USB bridge, a native PCI GPU, or the emulated
//! Navi31 board (behind the bridge emulator, or directly) — as one owned [`Board`] that hands out a
//! counted, type-erased BAR5 ([`Bar5`]) and the matching polling delay. Without the `emu` feature
//! (a real-hardware-only build) the emulator transports are refused with an error line.
use std::path::{Path, PathBuf};

#[cfg(feature = "emu")]
use crate::emu::direct::{DirectMmio, SharedModel};
#[cfg(feature = "emu")]
use crate::emu::flash_board::Navi31Bar5;
use modelrt_asm24::counting::Counting;
#[cfg(feature = "emu")]
use modelrt_asm24::emu::bridge::{BridgeEmulator, EmuHandle};
use modelrt_asm24::host::{self, Selector};
#[cfg(target_os = "linux")]
use modelrt_asm24::pcie::mapped::MappedMmio;
use modelrt_asm24::pcie::PciDevice;
use modelrt_asm24::session::{DynTransport, Session, TransportKind};

use super::erased::{Bar5, BoardDelay, SleepDelay};
use super::{EmuBoot, FlashToolError, FlashTransport};

/// PCI vendor:device of Navi31 (RX 7900 class), as config dword 0 reads.
const NAVI31_ID: u32 = 0x744C_1002;

/// Which board to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardOptions {
    /// The transport.
    pub transport: FlashTransport,
    /// Index in the combined USB + PCI candidate list (hardware transports).
    pub device: usize,
    /// Boot state of the emulated board (emulator transports).
    pub emu_boot: EmuBoot,
}

/// How BAR5 is reached.
enum Access {
    /// Through the ASM24 bridge (real or emulated).
    Bridged(Box<PciDevice<Counting<DynTransport>>>),
    /// The emulated board's register model, without a bridge.
    #[cfg(feature = "emu")]
    Direct(DirectMmio<SharedModel<Navi31Bar5>>),
    /// A native PCI BAR mapped from sysfs.
    #[cfg(target_os = "linux")]
    Mapped(MappedMmio),
}

/// An opened board.
pub struct Board {
    access: Access,
    #[cfg(feature = "emu")]
    emulated: Option<SharedModel<Navi31Bar5>>,
    #[cfg(feature = "emu")]
    usb: Option<EmuHandle>,
    accesses: u64,
    description: String,
}

impl Board {
    /// Open the board `opts` selects. Hardware transports never fall back to the emulator.
    pub fn open(opts: &BoardOptions) -> Result<Board, FlashToolError> {
        match &opts.transport {
            #[cfg(not(feature = "emu"))]
            FlashTransport::EmuDirect(_) | FlashTransport::Emu(_) => {
                Err(FlashToolError::NoEmulator)
            }
            #[cfg(feature = "emu")]
            FlashTransport::EmuDirect(path) => {
                let shared = open_emu(path, opts.emu_boot)?;
                Ok(Board {
                    access: Access::Direct(DirectMmio::new(shared.clone())),
                    emulated: Some(shared),
                    usb: None,
                    accesses: 0,
                    description: format!(
                        "emulator, direct BAR5 model (native-PCI-like; board state {}); the flash is EMULATED, backed by {} (writes persist to that file)",
                        opts.emu_boot,
                        path.display()
                    ),
                })
            }
            #[cfg(feature = "emu")]
            FlashTransport::Emu(path) => {
                let shared = open_emu(path, opts.emu_boot)?;
                let emu = BridgeEmulator::builder()
                    .gpu_bar(5, Box::new(shared.clone()))
                    .build();
                let handle = emu.handle();
                let dev = open_navi31(Session::from_emulator(emu))?;
                Ok(Board {
                    access: Access::Bridged(Box::new(dev)),
                    emulated: Some(shared),
                    usb: Some(handle),
                    accesses: 0,
                    description: format!(
                        "emulator, ASM24 bridge emulator + BAR5 model (board state {}); the flash is EMULATED, backed by {} (writes persist to that file)",
                        opts.emu_boot,
                        path.display()
                    ),
                })
            }
            hw => open_hardware(hw, opts.device),
        }
    }

    /// What was opened, for the user (says EMULATED for the emulator).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Whether this is the emulated board.
    pub fn is_emulated(&self) -> bool {
        #[cfg(feature = "emu")]
        return self.emulated.is_some();
        #[cfg(not(feature = "emu"))]
        false
    }

    /// BAR5, counting accesses into this board.
    pub fn bar5(&mut self) -> Result<Bar5<'_>, FlashToolError> {
        let accesses = &mut self.accesses;
        Ok(match &mut self.access {
            Access::Bridged(dev) => Bar5::new(dev.bar_mmio(5)?, accesses),
            #[cfg(feature = "emu")]
            Access::Direct(m) => Bar5::new(m, accesses),
            #[cfg(target_os = "linux")]
            Access::Mapped(m) => Bar5::new(m, accesses),
        })
    }

    /// A polling delay: emulated time on the emulator, sleeping on hardware.
    pub fn delay(&self) -> BoardDelay {
        #[cfg(feature = "emu")]
        if let Some(s) = &self.emulated {
            return BoardDelay::new(s.delay());
        }
        BoardDelay::new(SleepDelay)
    }

    /// The emulated board's model (emulator transports only): a handle for fault injection and
    /// back-door checks in tests.
    #[cfg(feature = "emu")]
    pub fn emulated_model(&self) -> Option<SharedModel<Navi31Bar5>> {
        self.emulated.clone()
    }

    /// BAR5 accesses so far.
    pub fn accesses(&self) -> u64 {
        self.accesses
    }

    /// USB transfers the bridge emulator saw so far (emulated bridge only).
    pub fn usb_transfers(&self) -> Option<u64> {
        #[cfg(feature = "emu")]
        return self.usb.as_ref().map(|h| h.counters().transfers());
        #[cfg(not(feature = "emu"))]
        None
    }

    /// The emulated flash's image-file error, if persisting a write failed.
    pub fn emulated_flash_error(&self) -> Option<FlashToolError> {
        #[cfg(feature = "emu")]
        {
            let m = self.emulated.as_ref()?;
            let e = m.lock().flash().io_error().map(str::to_string);
            e.map(FlashToolError::EmulatedFlashIo)
        }
        #[cfg(not(feature = "emu"))]
        None
    }
}

#[cfg(feature = "emu")]
fn open_emu(path: &Path, boot: EmuBoot) -> Result<SharedModel<Navi31Bar5>, FlashToolError> {
    if !path.exists() {
        return Err(FlashToolError::EmulatorImage(format!(
            "emulated flash image {} does not exist; create an erased 2 MiB one with \
             `head -c 2097152 /dev/zero | tr '\\0' '\\377' > {}`",
            path.display(),
            path.display()
        )));
    }
    let model =
        Navi31Bar5::open_image(path, boot.config()).map_err(FlashToolError::EmulatorImage)?;
    Ok(SharedModel::new(model))
}

/// Bring up the PCIe link behind the bridge and require a Navi31 there.
fn open_navi31(session: Session) -> Result<PciDevice<Counting<DynTransport>>, FlashToolError> {
    let mut dev = PciDevice::open(session.bridge)?;
    let id = dev.config_read(0, 4)?;
    if id != NAVI31_ID {
        return Err(FlashToolError::NotNavi31 {
            vendor: (id & 0xFFFF) as u16,
            device: (id >> 16) as u16,
        });
    }
    Ok(dev)
}

fn open_hardware(transport: &FlashTransport, device: usize) -> Result<Board, FlashToolError> {
    let (usb, pci) = match transport {
        FlashTransport::Usb => (usb_candidates(), Vec::new()),
        FlashTransport::Pci => (0, pci_candidates()),
        _ => (usb_candidates(), pci_candidates()),
    };
    let count = usb + pci.len();
    if count == 0 {
        return Err(FlashToolError::NoDevice(transport.clone()));
    }
    if device >= count {
        return Err(FlashToolError::DeviceIndex {
            index: device,
            count,
        });
    }
    if device < usb {
        let session = Session::open(TransportKind::Usb, Selector::Index(device))?;
        let name = session.name();
        let dev = open_navi31(session)?;
        return Ok(Board {
            access: Access::Bridged(Box::new(dev)),
            #[cfg(feature = "emu")]
            emulated: None,
            #[cfg(feature = "emu")]
            usb: None,
            accesses: 0,
            description: format!("USB bridge {name} (real hardware)"),
        });
    }
    open_pci(&pci[device - usb])
}

#[cfg(target_os = "linux")]
fn open_pci(dev: &Path) -> Result<Board, FlashToolError> {
    if dev.join("driver").exists() {
        return Err(FlashToolError::DriverBound(dev.to_path_buf()));
    }
    let mmio = MappedMmio::open_path(&dev.join("resource5"))?;
    Ok(Board {
        access: Access::Mapped(mmio),
        #[cfg(feature = "emu")]
        emulated: None,
        #[cfg(feature = "emu")]
        usb: None,
        accesses: 0,
        description: format!("native PCI {} BAR5 (real hardware)", dev.display()),
    })
}

#[cfg(not(target_os = "linux"))]
fn open_pci(dev: &Path) -> Result<Board, FlashToolError> {
    Err(FlashToolError::NativePciUnsupported(dev.to_path_buf()))
}

/// Native PCI Navi31 GPUs (vendor 0x1002, device 0x744C) in sysfs, sorted by address.
fn pci_candidates() -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir("/sys/bus/pci/devices") else {
        return Vec::new();
    };
    let read_id = |p: &Path, f: &str| {
        std::fs::read_to_string(p.join(f))
            .ok()
            .and_then(|s| u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok())
    };
    let mut v: Vec<PathBuf> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            read_id(p, "vendor") == Some(NAVI31_ID & 0xFFFF)
                && read_id(p, "device") == Some(NAVI31_ID >> 16)
        })
        .collect();
    v.sort();
    v
}

fn usb_candidates() -> usize {
    host::list_bridges().map(|l| l.len()).unwrap_or(0)
}
