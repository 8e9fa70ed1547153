//! [`FlashToolError`]: every way a `gpuflash` operation fails, each a one-line message.
use std::path::PathBuf;

#[cfg(target_os = "linux")]
use modelrt_asm24::pcie::mapped::MappedMmioError;
use modelrt_asm24::session::SessionError;
use modelrt_asm24::BridgeError;

use super::FlashTransport;

/// What `transport` looked for and did not find (only what it searched: `usb` never mentions PCI).
fn no_device(transport: &FlashTransport) -> &'static str {
    match transport {
        FlashTransport::Usb => "no supported ASM24 USB bridge found",
        FlashTransport::Pci => "no supported Navi31 PCI GPU (1002:744c) found",
        _ => "no supported USB bridge or PCI AMD GPU found",
    }
}

/// Why a flash-tool operation failed.
#[derive(Debug, thiserror::Error)]
pub enum FlashToolError {
    /// No candidate board for the transport.
    #[error("{} (transport {}); without hardware, try the emulated board: --transport emu:IMAGE (see `gpuflash --help`)", no_device(.0), .0)]
    NoDevice(FlashTransport),
    /// `--device` past the end of the candidate list.
    #[error("device index {index} out of range ({count} devices)")]
    DeviceIndex { index: usize, count: usize },
    /// The endpoint behind the bridge is not a Navi31.
    #[error(
        "no supported AMD GPU behind the bridge (ids {vendor:04x}:{device:04x}, need 1002:744c)"
    )]
    NotNavi31 { vendor: u16, device: u16 },
    /// A native PCI GPU still bound to a kernel driver.
    #[error("{} is bound to a kernel driver; unbind it first (this tool never unbinds drivers itself)", .0.display())]
    DriverBound(PathBuf),
    /// Native PCI access on an OS without sysfs BAR mapping.
    #[error("native PCI access to {} is only supported on Linux", .0.display())]
    NativePciUnsupported(PathBuf),
    /// Opening the USB session failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The ASM24 bridge or the PCIe link behind it failed.
    #[error(transparent)]
    Bridge(#[from] BridgeError),
    /// Mapping the native PCI BAR failed.
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Mapped(#[from] MappedMmioError),
    /// An emulator transport in a build without the `emu` feature.
    #[error("this gpuflash was built without the emulator (the `emu` feature); use a hardware transport (usb, pci), or rebuild with the default features")]
    NoEmulator,
    /// The emulated board's flash image could not be opened.
    #[error("{0}")]
    EmulatorImage(String),
    /// The emulated flash could not persist a write to its image file.
    #[error("{0}")]
    EmulatedFlashIo(String),
    /// The ROM_SW engine, the SPI-NOR protocol, the PSP mailbox or the ROM aperture reported an error
    /// (over the type-erased BAR5, whose access errors are text).
    #[error("{0}")]
    Device(String),
    /// A read range outside the flash.
    #[error("range 0x{addr:X}+0x{size:X} is outside the {total}-byte flash")]
    OutOfRange { addr: u32, size: u32, total: u32 },
    /// An image file of the wrong size.
    #[error("image {} is {len} bytes, the flash is exactly {size} bytes", .path.display())]
    ImageSize {
        path: PathBuf,
        len: usize,
        size: u32,
    },
    /// The probed chip's size differs from the image's.
    #[error("image size does not match the {0}-byte flash")]
    ChipSize(u32),
    /// Flash and image differ.
    #[error("verify mismatch at 0x{addr:06X}: flash={flash:02x} image={image:02x}")]
    Mismatch { addr: usize, flash: u8, image: u8 },
    /// Writing is refused on a chip missing from the chip table.
    #[error("unknown flash chip (JEDEC capture {0:02X?}); refusing to write")]
    UnknownChip([u8; 4]),
    /// A write stopped part-way.
    #[error("{0} (re-run the same write to resume; identical sectors are skipped)")]
    WriteStopped(String),
    /// An output file exists and replacing it was not asked for.
    #[error("{} exists; pass --yes to replace it", .0.display())]
    Exists(PathBuf),
    /// An image to write does not have the Navi31 flash layout (docs/hw/navi31-spi-flash.md §7).
    #[error("{} is not a Navi31 flash image: {reason}; pass --force-image to write it anyway", .path.display())]
    NotNavi31Image { path: PathBuf, reason: String },
    /// The backup file does not read back as written.
    #[error("backup {} reads back differently at 0x{addr:06X} (the disk did not keep it); nothing was erased; free space or pick another --backup-dir and re-run", .path.display())]
    BackupFile { path: PathBuf, addr: usize },
    /// A second read of the flash disagrees with the backup just taken.
    #[error("backup check failed: a second read of the flash gave {flash:02x} at 0x{addr:06X}, the backup read {backup:02x}; nothing was erased{}; check the connection (cable, bridge, --prescale) and re-run", match .removed { Some(p) => format!(" and the unverified backup {} was removed", p.display()), None => String::new() })]
    BackupMismatch {
        addr: usize,
        flash: u8,
        backup: u8,
        removed: Option<PathBuf>,
    },
    /// The whole-chip read after a write differs from what the flash should hold.
    #[error("read-back after the write: sector {sector} differs at 0x{addr:06X} (flash={flash:02x}, expected {want:02x}); re-run the same write to rewrite it (identical sectors are skipped){}", match .backup { Some(p) => format!("; the flash before this write is in the backup {}", p.display()), None => String::new() })]
    ReadBackMismatch {
        sector: u32,
        addr: usize,
        flash: u8,
        want: u8,
        backup: Option<PathBuf>,
    },
    /// A file could not be read or written.
    #[error("{what} {}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl FlashToolError {
    /// A [`FlashToolError::Device`] from any library error of the type-erased BAR5.
    pub fn device(e: impl std::fmt::Display) -> Self {
        FlashToolError::Device(e.to_string())
    }
}
