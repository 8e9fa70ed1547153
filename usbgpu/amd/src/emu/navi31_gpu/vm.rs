//! GPU virtual memory of one VM hub (GC or MM), context 0: the registers latched by an
//! invalidate request and the 4-level page-table walk (docs/hw/amd-gpu.md §3).
use super::vram::Vram;

/// PTE/PDE bits (GC 10/11).
const VALID: u64 = 1 << 0;
const SYSTEM: u64 = 1 << 1;
const READABLE: u64 = 1 << 5;
const WRITEABLE: u64 = 1 << 6;
/// A PDE that is itself a leaf ("PDE as PTE", huge page) on GC 11.
const PDE_IS_PTE: u64 = 1 << 54;
/// Physical address bits 47:12.
const ADDR_MASK: u64 = 0x0000_FFFF_FFFF_F000;

/// Context 0 of a hub as the last invalidate request latched it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// `CONTEXT0_CNTL.enable_context`.
    pub enabled: bool,
    /// `CONTEXT0_CNTL.page_table_depth` (3 = four levels).
    pub depth: u32,
    /// `PAGE_TABLE_BASE_ADDR` (root table physical address | valid).
    pub base: u64,
    /// First VA page (`PAGE_TABLE_START_ADDR`, in 4 KiB pages).
    pub start: u64,
    /// Last VA page (`PAGE_TABLE_END_ADDR`).
    pub end: u64,
}

/// Where a translated address lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// VRAM physical byte address.
    Vram(u64),
    /// PCIe bus address (a SYSTEM page: the bridge's DMA windows).
    System(u64),
}

/// Why a walk failed (docs/hw/amd-gpu.md §3.3 maps each to the fault status register).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkError {
    /// Context disabled or the VA is outside start..=end.
    Range,
    /// An entry on the way has VALID clear (or a table lies outside VRAM).
    Invalid,
    /// The leaf lacks READABLE (read) or WRITEABLE (write).
    Permission,
}

/// A translation: target of `va` and the bytes left in its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translation {
    pub target: Target,
    pub remaining: u64,
}

/// Walk `ctx`'s tables in `vram` for `va`.
pub fn walk(ctx: &Context, vram: &Vram, va: u64, write: bool) -> Result<Translation, WalkError> {
    let page = va >> 12;
    if !ctx.enabled || page < ctx.start || page > ctx.end {
        return Err(WalkError::Range);
    }
    let offset = va - (ctx.start << 12);
    let mut table = ctx.base & ADDR_MASK;
    if ctx.base & VALID == 0 {
        return Err(WalkError::Invalid);
    }
    for level in (0..=ctx.depth.min(3)).rev() {
        let shift = 12 + 9 * level;
        let index = (offset >> shift) & 0x1FF;
        let at = table + index * 8;
        if !vram.contains(at, 8) {
            return Err(WalkError::Invalid);
        }
        let mut b = [0u8; 8];
        vram.read(at, &mut b);
        let entry = u64::from_le_bytes(b);
        if entry & VALID == 0 {
            return Err(WalkError::Invalid);
        }
        if level == 0 || entry & PDE_IS_PTE != 0 {
            let size = 1u64 << shift;
            let need = if write { WRITEABLE } else { READABLE };
            if entry & need == 0 {
                return Err(WalkError::Permission);
            }
            let within = offset & (size - 1);
            let phys = (entry & ADDR_MASK & !(size - 1)) + within;
            let target = if entry & SYSTEM != 0 {
                Target::System(phys)
            } else {
                Target::Vram(phys)
            };
            return Ok(Translation {
                target,
                remaining: size - within,
            });
        }
        table = entry & ADDR_MASK;
    }
    Err(WalkError::Invalid)
}
