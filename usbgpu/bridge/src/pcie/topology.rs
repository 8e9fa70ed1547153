//! Read back the topology behind the bridge after bring-up (for `modelrt usb lspci`): each function
//! on buses 0..=gpu_bus with ids, class, bridge bus numbers and windows, and the endpoint's BARs.
use super::bringup::Bar;
use super::device::PciDevice;
use crate::proto::CplStatus;
use crate::BridgeError;
use modelrt_hal::pci::{Bdf, PciConfig};
use modelrt_hal::usb::UsbTransport;

/// Forwarding windows of a type-1 bridge (inclusive ranges; `None` when base > limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BridgeWindows {
    pub primary: u8,
    pub secondary: u8,
    pub subordinate: u8,
    pub memory: Option<(u64, u64)>,
    pub prefetchable: Option<(u64, u64)>,
}

/// One function found behind the bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub bdf: Bdf,
    pub vendor: u16,
    pub device: u16,
    /// Class code (base, sub, prog-if).
    pub class: u32,
    /// Type-1 header: bus numbers and windows.
    pub bridge: Option<BridgeWindows>,
    /// Assigned BARs (endpoint only): (index, bar).
    pub bars: Vec<(u8, Bar)>,
}

fn window(base: u64, limit: u64) -> Option<(u64, u64)> {
    (base <= limit).then_some((base, limit))
}

/// Scan buses 0..=gpu_bus (device 0 function 0 on each link; absent functions are skipped).
pub fn scan<T: UsbTransport>(dev: &mut PciDevice<T>) -> Result<Vec<Function>, BridgeError> {
    let gpu = dev.bdf();
    let bars = *dev.bars();
    let mut out = Vec::new();
    for bus in 0..=gpu.bus {
        let bdf = Bdf {
            bus,
            dev: 0,
            func: 0,
        };
        let cfg = dev.bridge();
        let id = match cfg.config_read(bdf, 0, 4) {
            Ok(id) => id,
            Err(BridgeError::Completion {
                status: CplStatus::UnsupportedRequest,
                ..
            }) => continue,
            Err(e) => return Err(e),
        };
        let class = cfg.config_read(bdf, 0x08, 4)? >> 8;
        let header = cfg.config_read(bdf, 0x0E, 1)? & 0x7F;
        let bridge = if header == 1 {
            let buses = cfg.config_read(bdf, 0x18, 4)?;
            let mem = cfg.config_read(bdf, 0x20, 4)?;
            let pref = cfg.config_read(bdf, 0x24, 4)?;
            let pref_hi_base = cfg.config_read(bdf, 0x28, 4)? as u64;
            let pref_hi_limit = cfg.config_read(bdf, 0x2C, 4)? as u64;
            Some(BridgeWindows {
                primary: buses as u8,
                secondary: (buses >> 8) as u8,
                subordinate: (buses >> 16) as u8,
                memory: window(
                    ((mem & 0xFFF0) as u64) << 16,
                    (((mem >> 16) & 0xFFF0) as u64) << 16 | 0xF_FFFF,
                ),
                prefetchable: window(
                    pref_hi_base << 32 | ((pref & 0xFFF0) as u64) << 16,
                    pref_hi_limit << 32 | (((pref >> 16) & 0xFFF0) as u64) << 16 | 0xF_FFFF,
                ),
            })
        } else {
            None
        };
        let bars = if bdf == gpu {
            bars.iter()
                .enumerate()
                .filter_map(|(i, b)| b.map(|b| (i as u8, b)))
                .collect()
        } else {
            Vec::new()
        };
        out.push(Function {
            bdf,
            vendor: id as u16,
            device: (id >> 16) as u16,
            class,
            bridge,
            bars,
        });
    }
    Ok(out)
}
