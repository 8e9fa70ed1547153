//! Opening "a bridge" for tools (std): real hardware through [`crate::host`] or the bridge emulator,
//! chosen by `--transport auto|usb|emu`, behind one type with transfer counting and a clock.
//! `auto` means hardware only: without a bridge it says so plainly and never falls back to the
//! emulator. Built without the `emu` feature (a real-hardware-only build), `emu` is refused with an
//! error line.
use crate::counting::{Counting, TransferCounts};
#[cfg(feature = "emu")]
use crate::emu::bridge::{BridgeEmulator, EmuHandle};
use crate::host::{self, BridgeInfo, HostError, NusbTransport, Selector};
use crate::Bridge;
use modelrt_hal::usb::UsbTransport;
use std::time::Instant;

/// `--transport` choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportKind {
    /// Real hardware if present (never the emulator).
    Auto,
    /// Real hardware.
    Usb,
    /// The bridge emulator with a Navi31-like endpoint.
    Emu,
}

impl core::str::FromStr for TransportKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(TransportKind::Auto),
            "usb" => Ok(TransportKind::Usb),
            "emu" => Ok(TransportKind::Emu),
            other => Err(format!("unknown transport {other:?} (auto, usb, emu)")),
        }
    }
}

/// Failure to open a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no ASM24 bridge found (looked for add1:0001 and 3801:0001 with custom firmware); use --transport emu for the emulator")]
    NoBridge,
    #[error("this build has no emulator (built without the `emu` feature); use --transport usb, or rebuild with the default features")]
    NoEmulator,
    #[error(transparent)]
    Host(#[from] HostError),
}

/// A boxed transport (hardware or emulator).
pub type DynTransport = Box<dyn UsbTransport + Send>;

/// What is behind a session.
pub enum Backend {
    Usb(BridgeInfo),
    #[cfg(feature = "emu")]
    Emu(EmuHandle),
}

/// One bridge, ready for protocol use.
pub struct Session {
    pub bridge: Bridge<Counting<DynTransport>>,
    pub backend: Backend,
    started: Instant,
}

/// One row of `usb list`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    pub name: String,
    pub vendor_id: u16,
    pub product_id: u16,
    pub product: Option<String>,
    pub bcd_device: u16,
    pub custom_firmware: bool,
    pub emulated: bool,
}

/// Bridges visible through `kind`.
pub fn list(kind: TransportKind) -> Result<Vec<Listing>, SessionError> {
    #[cfg(not(feature = "emu"))]
    if kind == TransportKind::Emu {
        return Err(SessionError::NoEmulator);
    }
    #[cfg(feature = "emu")]
    if kind == TransportKind::Emu {
        let id = BridgeEmulator::new().handle().identity();
        return Ok(vec![Listing {
            name: "emu:0".into(),
            vendor_id: id.vendor_id,
            product_id: id.product_id,
            product: Some(id.product),
            bcd_device: id.bcd_device,
            custom_firmware: true,
            emulated: true,
        }]);
    }
    Ok(host::list_bridges()?
        .into_iter()
        .map(|b| Listing {
            name: b.name(),
            vendor_id: b.vendor_id,
            product_id: b.product_id,
            custom_firmware: b.is_custom_firmware(),
            product: b.product,
            bcd_device: b.bcd_device,
            emulated: false,
        })
        .collect())
}

impl Session {
    /// Open by transport kind; `selector` picks among hardware bridges.
    pub fn open(kind: TransportKind, selector: Selector) -> Result<Self, SessionError> {
        match kind {
            #[cfg(feature = "emu")]
            TransportKind::Emu => Ok(Self::from_emulator(BridgeEmulator::new())),
            #[cfg(not(feature = "emu"))]
            TransportKind::Emu => Err(SessionError::NoEmulator),
            TransportKind::Auto | TransportKind::Usb => {
                if host::list_bridges()?.is_empty() {
                    return Err(SessionError::NoBridge);
                }
                let t = NusbTransport::open(selector)?;
                let info = t.info().clone();
                Ok(Self::wrap(Box::new(t), Backend::Usb(info)))
            }
        }
    }

    #[cfg(feature = "emu")]
    /// A session on a custom-built emulator (e.g. with a device model plugged into BAR5).
    pub fn from_emulator(emu: BridgeEmulator) -> Self {
        let handle = emu.handle();
        Self::wrap(Box::new(emu), Backend::Emu(handle))
    }

    fn wrap(t: DynTransport, backend: Backend) -> Self {
        Session {
            bridge: Bridge::new(Counting::new(t)),
            backend,
            started: Instant::now(),
        }
    }

    pub fn is_emulated(&self) -> bool {
        match self.backend {
            Backend::Usb(_) => false,
            #[cfg(feature = "emu")]
            Backend::Emu(_) => true,
        }
    }

    /// Name for messages (`usb:B-A` or `emu`).
    pub fn name(&self) -> String {
        match &self.backend {
            Backend::Usb(i) => i.name(),
            #[cfg(feature = "emu")]
            Backend::Emu(_) => "emu".into(),
        }
    }

    /// Transfers issued so far.
    pub fn counts(&self) -> TransferCounts {
        self.bridge.transport().counts()
    }

    /// Nanoseconds since open: wall clock on hardware, emulated time on the emulator.
    pub fn now_ns(&self) -> u64 {
        match &self.backend {
            #[cfg(feature = "emu")]
            Backend::Emu(h) => h.clock_ns(),
            Backend::Usb(_) => self.started.elapsed().as_nanos() as u64,
        }
    }
}
