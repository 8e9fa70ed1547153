//! PCIe behind the bridge: bring-up of the bridge chain and the GPU ([`bringup`]), the resulting
//! device view ([`device::PciDevice`]) and MMIO implementations ([`mmio::BridgedMmio`] over USB,
//! [`mapped::MappedMmio`] for a native PCI BAR on Linux).
pub mod bringup;
pub mod device;
#[cfg(all(feature = "std", target_os = "linux"))]
#[allow(unsafe_code)]
pub mod mapped;
pub mod mmio;

pub use bringup::{Bar, BarMap, BusSetup};
pub use device::{PciDevice, SramRegion};
pub use mmio::BridgedMmio;
#[cfg(feature = "std")]
pub mod topology;
