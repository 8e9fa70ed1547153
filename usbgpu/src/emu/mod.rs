//! Software models of the hardware behind the ASM24 bridge, selectable by users (`--transport emu…`)
//! and used by tests. They model the documented behaviour, quirks and failures of the devices.

/// A device's MMIO register space (one BAR) as the emulators see it: the bridge emulator routes
/// memory TLPs that hit a BAR here, and `DirectMmio` exposes it as a plain `Mmio`.
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
}
pub mod bridge;
pub mod direct;
pub mod navi31;
