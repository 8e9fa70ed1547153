//! The typed values of `gpuflash --transport` and `--emu-boot` (parsed by clap through `FromStr`).
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

#[cfg(feature = "emu")]
use crate::emu::flash_board::{EngineMode, Navi31Config, PspPhase};

/// Which board to talk to, and through what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlashTransport {
    /// USB bridges first, then native PCI GPUs (real hardware only).
    Auto,
    /// An ASM24 USB bridge.
    Usb,
    /// A native PCI GPU (Linux sysfs BAR5).
    Pci,
    /// The emulated board behind the emulated ASM24 bridge; the flash is this 2 MiB image file.
    Emu(PathBuf),
    /// The emulated board without the bridge (like native PCI); the flash is this image file.
    EmuDirect(PathBuf),
}

/// A `--transport` value that is none of the known forms.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown transport {0:?} (auto, usb, pci, emu:IMAGE, emu-direct:IMAGE)")]
pub struct UnknownTransport(pub String);

impl FromStr for FlashTransport {
    type Err = UnknownTransport;
    fn from_str(s: &str) -> Result<Self, UnknownTransport> {
        let image = |p: &str| (!p.is_empty()).then(|| PathBuf::from(p));
        if let Some(p) = s.strip_prefix("emu-direct:").and_then(image) {
            return Ok(FlashTransport::EmuDirect(p));
        }
        if let Some(p) = s.strip_prefix("emu:").and_then(image) {
            return Ok(FlashTransport::Emu(p));
        }
        match s {
            "auto" => Ok(FlashTransport::Auto),
            "usb" => Ok(FlashTransport::Usb),
            "pci" => Ok(FlashTransport::Pci),
            other => Err(UnknownTransport(other.to_string())),
        }
    }
}

impl fmt::Display for FlashTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlashTransport::Auto => f.write_str("auto"),
            FlashTransport::Usb => f.write_str("usb"),
            FlashTransport::Pci => f.write_str("pci"),
            FlashTransport::Emu(p) => write!(f, "emu:{}", p.display()),
            FlashTransport::EmuDirect(p) => write!(f, "emu-direct:{}", p.display()),
        }
    }
}

/// Boot state of the emulated board.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum EmuBoot {
    /// The PSP bootloader stalled: the ROM_SW engine works (romless recovery).
    #[default]
    Stalled,
    /// A healthy boot: ROM_SW gated, PSP in its early phase.
    Healthy,
    /// ROM_SW gated and the host driver loaded the SOS.
    Sos,
}

impl EmuBoot {
    /// The emulator configuration of this boot state.
    #[cfg(feature = "emu")]
    pub fn config(self) -> Navi31Config {
        let mut cfg = Navi31Config::default();
        match self {
            EmuBoot::Stalled => {}
            EmuBoot::Healthy => cfg.engine = EngineMode::Gated,
            EmuBoot::Sos => {
                cfg.engine = EngineMode::Gated;
                cfg.psp.phase = PspPhase::Sos;
            }
        }
        cfg
    }
}

impl fmt::Display for EmuBoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EmuBoot::Stalled => "stalled",
            EmuBoot::Healthy => "healthy",
            EmuBoot::Sos => "sos",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transport_form_parses_and_prints_back() {
        for (text, want) in [
            ("auto", FlashTransport::Auto),
            ("usb", FlashTransport::Usb),
            ("pci", FlashTransport::Pci),
            ("emu:a/flash.bin", FlashTransport::Emu("a/flash.bin".into())),
            (
                "emu-direct:/x:y.bin",
                FlashTransport::EmuDirect("/x:y.bin".into()),
            ),
        ] {
            assert_eq!(text.parse::<FlashTransport>(), Ok(want.clone()), "{text}");
            assert_eq!(want.to_string(), text);
        }
        for bad in ["", "emu", "emu:", "emu-direct:", "USB", "bogus"] {
            let e = bad.parse::<FlashTransport>().unwrap_err();
            assert!(e.to_string().starts_with("unknown transport"), "{bad}: {e}");
        }
    }
}
