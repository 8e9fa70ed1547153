//! Device models (emulators) of the hardware behind the ASM24 bridge, selectable by users
//! (`--transport emu…`) and used by tests. They model the documented behaviour, quirks and failures
//! of the devices. Here: the interface every device model implements ([`RegisterModel`], reaching
//! host memory through [`SystemBus`]) and [`bridge`] (the ASM24 bridge with its PCIe fabric). The
//! models of the devices behind it live with their drivers: the flash board in `modelrt-gpuflash`
//! (`emu::flash_board`, with `emu::direct`, a model as a plain `Mmio`), the Navi31 GPU in
//! `modelrt-amd` (`emu::navi31_gpu`).

/// A device's MMIO register space (one BAR) as the emulators see it: the bridge emulator routes
/// memory TLPs that hit a BAR here, and `modelrt-gpuflash`'s `DirectMmio` exposes it as a plain `Mmio`.
///
/// Emulated time: models that have timing (flash busy, PSP states) advance their clock in
/// [`RegisterModel::advance`], which the transports call with the emulated duration of each access.
pub trait RegisterModel: Send {
    /// Size of the BAR in bytes (a power of two).
    fn size(&self) -> u64;
    /// A 32-bit read at byte `offset` (aligned, inside `size`).
    fn read32(&mut self, offset: u64) -> u32;
    /// A 32-bit write at byte `offset` (aligned, inside `size`).
    fn write32(&mut self, offset: u64, value: u32);
    /// Let `ns` nanoseconds of emulated time pass.
    fn advance(&mut self, ns: u64) {
        let _ = ns;
    }
    /// Read `out.len()` bytes (a multiple of 4) from `offset` (aligned): one streaming burst.
    /// Default: dword by dword; memory-like models override it.
    fn read_bytes(&mut self, offset: u64, out: &mut [u8]) {
        read_by_dwords(self, offset, out)
    }
    /// Write `data` (a multiple of 4 bytes) at `offset` (aligned): one streaming burst.
    fn write_bytes(&mut self, offset: u64, data: &[u8]) {
        write_by_dwords(self, offset, data)
    }
    /// Run work that earlier register/doorbell writes started (DMA engines, command processors),
    /// with `bus` reaching host memory behind the bridge's DMA windows. The bridge emulator calls
    /// this after every USB transfer, outside any BAR access. Default: nothing to do.
    fn service(&mut self, bus: &mut dyn SystemBus) {
        let _ = bus;
    }
}

/// [`RegisterModel::read_bytes`] as a sequence of `read32`s.
pub fn read_by_dwords<M: RegisterModel + ?Sized>(model: &mut M, offset: u64, out: &mut [u8]) {
    for (i, w) in out.chunks_exact_mut(4).enumerate() {
        w.copy_from_slice(&model.read32(offset + 4 * i as u64).to_le_bytes());
    }
}

/// [`RegisterModel::write_bytes`] as a sequence of `write32`s.
pub fn write_by_dwords<M: RegisterModel + ?Sized>(model: &mut M, offset: u64, data: &[u8]) {
    for (i, w) in data.chunks_exact(4).enumerate() {
        model.write32(
            offset + 4 * i as u64,
            u32::from_le_bytes([w[0], w[1], w[2], w[3]]),
        );
    }
}

/// Host memory a device reaches by PCIe bus address (the bridge's DMA windows: SRAM 0x200000,
/// sys_buf 0x820000, CQ 0x822000, …). `false` = no window covers the whole range.
pub trait SystemBus {
    /// Read `out.len()` bytes at bus address `address`.
    fn read(&mut self, address: u64, out: &mut [u8]) -> bool;
    /// Write `data` at bus address `address`.
    fn write(&mut self, address: u64, data: &[u8]) -> bool;
}
pub mod bridge;
