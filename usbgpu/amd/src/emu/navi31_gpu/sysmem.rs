//! A stand-alone [`SystemBus`] with the bridge's three DMA windows (SRAM 0x200000 512 KiB,
//! sys_buf 0x820000 4 KiB, CQ 0x822000 4 KiB), for driving the GPU model without a bridge.
use modelrt_asm24::emu::SystemBus;

/// Window bases and sizes (docs/hw/asm24-bridge.md §4; docs/hw/amd-gpu.md §3.2).
pub const WINDOWS: [(u64, usize); 3] = [
    (0x20_0000, 0x8_0000),
    (0x82_0000, 0x1000),
    (0x82_2000, 0x1000),
];

/// Host memory behind the three windows.
pub struct WindowMemory {
    windows: Vec<(u64, Vec<u8>)>,
}

impl Default for WindowMemory {
    fn default() -> Self {
        WindowMemory {
            windows: WINDOWS.iter().map(|&(b, n)| (b, vec![0; n])).collect(),
        }
    }
}

impl WindowMemory {
    fn slice(&mut self, address: u64, len: usize) -> Option<&mut [u8]> {
        self.windows.iter_mut().find_map(|(base, bytes)| {
            let o = address.checked_sub(*base)? as usize;
            bytes.get_mut(o..o.checked_add(len)?)
        })
    }
}

impl SystemBus for WindowMemory {
    fn read(&mut self, address: u64, out: &mut [u8]) -> bool {
        self.slice(address, out.len())
            .map(|s| out.copy_from_slice(s))
            .is_some()
    }

    fn write(&mut self, address: u64, data: &[u8]) -> bool {
        self.slice(address, data.len())
            .map(|s| s.copy_from_slice(data))
            .is_some()
    }
}
