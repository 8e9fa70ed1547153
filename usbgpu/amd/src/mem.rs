//! GPU memory layout of the driver (docs/hw/amd-driver.md §3): a bump allocator over VRAM, the
//! address
//! forms (physical, MC, GPU VA) and the 4-level page tables that map all of VRAM once at
//! [`VA_BASE`] with 2 MiB huge pages and the bridge's DMA windows as SYSTEM pages at [`SYS_VA`].
use super::error::AmdError;
use modelrt_asm24::proto::SRAM_SIZE;
use modelrt_asm24::{BUS_CQ, BUS_SRAM, BUS_SYS_BUF};

/// Start of the GPU VA space (context 0 start).
pub const VA_BASE: u64 = 0x2000_0000_0000;
/// Where the bridge windows are mapped: `SYS_VA + bus_address` (1 TiB above VRAM's identity map).
pub const SYS_VA: u64 = VA_BASE + (1 << 40);
/// Tail of VRAM reserved for firmware and the discovery table (docs/hw/amd-driver.md §3).
pub const RESERVED_TAIL: u64 = 64 << 20;
/// Page-table page size.
pub const PAGE: u64 = 4096;
/// Huge page size at the PDB0 level.
pub const HUGE: u64 = 2 << 20;

/// PTE/PDE bits (GC 10/11, docs/hw/amd-driver.md §3).
pub mod pte {
    /// Entry valid.
    pub const VALID: u64 = 1 << 0;
    /// Physical address is a system (PCIe bus) address.
    pub const SYSTEM: u64 = 1 << 1;
    /// Snooped.
    pub const SNOOPED: u64 = 1 << 2;
    /// Executable.
    pub const EXECUTABLE: u64 = 1 << 4;
    /// Readable.
    pub const READABLE: u64 = 1 << 5;
    /// Writeable.
    pub const WRITEABLE: u64 = 1 << 6;
    /// PDE used as a PTE (huge page).
    pub const PDE_PTE: u64 = 1 << 54;
    /// Memory type UC (bits 50:48 = 3).
    pub const MTYPE_UC: u64 = 3 << 48;
    /// Address field mask (bits 47:12).
    pub const ADDR: u64 = 0x0000_FFFF_FFFF_F000;
    /// A leaf that can be read, written and executed.
    pub const RWX: u64 = VALID | READABLE | WRITEABLE | EXECUTABLE;
}

/// One allocation: VRAM physical offset and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alloc {
    /// Offset in VRAM (= BAR0 offset).
    pub paddr: u64,
    /// Size in bytes.
    pub size: u64,
}

impl Alloc {
    /// GPU virtual address (identity map).
    pub fn va(&self) -> u64 {
        VA_BASE + self.paddr
    }
}

/// Bump allocator over the CPU-visible part of VRAM.
#[derive(Clone, Debug)]
pub struct VramAlloc {
    next: u64,
    limit: u64,
}

impl VramAlloc {
    /// Allocate from `[0, limit)`.
    pub fn new(limit: u64) -> VramAlloc {
        VramAlloc { next: 0, limit }
    }

    /// `size` bytes aligned to `align` (a power of two), zero-size requests take one page.
    pub fn alloc(&mut self, what: &'static str, size: u64, align: u64) -> Result<Alloc, AmdError> {
        let size = size.max(PAGE).next_multiple_of(PAGE);
        let paddr = self.next.next_multiple_of(align.max(PAGE));
        if paddr.checked_add(size).is_none_or(|e| e > self.limit) {
            return Err(AmdError::Invalid {
                step: "VRAM allocation",
                what: format!(
                    "out of VRAM for {what}: {size} bytes requested, {} of {} used",
                    self.next, self.limit
                ),
            });
        }
        self.next = paddr + size;
        Ok(Alloc { paddr, size })
    }

    /// Bytes handed out so far.
    pub fn used(&self) -> u64 {
        self.next
    }
}

/// The bridge windows mapped as SYSTEM pages: (bus address, bytes).
pub const SYSTEM_WINDOWS: [(u64, u64); 3] = [
    (BUS_SRAM, SRAM_SIZE as u64),
    (BUS_SYS_BUF, 0x1000),
    (BUS_CQ, 0x1000),
];

/// GPU VA of a bridge bus address (only meaningful inside [`SYSTEM_WINDOWS`]).
pub const fn sys_va(bus: u64) -> u64 {
    SYS_VA + bus
}

/// Page tables as (VRAM offset, dwords) blocks to write, plus the root's VRAM offset.
pub struct PageTables {
    /// Physical VRAM offset of the root (PDB2).
    pub root: u64,
    /// Table pages: (paddr, 512 entries).
    pub pages: Vec<(u64, Vec<u64>)>,
}

/// Table index of `va` at a level: the walker indexes relative to the context's start
/// (`PAGE_TABLE_START_ADDR`), not by absolute VA.
fn index(va: u64, level_shift: u32) -> usize {
    (((va - VA_BASE) >> level_shift) & 0x1FF) as usize
}

impl PageTables {
    /// Build tables mapping `[0, vram)` at [`VA_BASE`] (2 MiB pages, `vram` rounded up to 2 MiB)
    /// and the [`SYSTEM_WINDOWS`] at [`SYS_VA`] (4 KiB SYSTEM pages), allocating table pages.
    pub fn build(vram: u64, alloc: &mut VramAlloc) -> Result<PageTables, AmdError> {
        let mut pages: Vec<(u64, Vec<u64>)> = Vec::new();
        let mut new_page = |pages: &mut Vec<(u64, Vec<u64>)>| -> Result<usize, AmdError> {
            let a = alloc.alloc("page tables", PAGE, PAGE)?;
            pages.push((a.paddr, vec![0u64; 512]));
            Ok(pages.len() - 1)
        };
        let root = new_page(&mut pages)?;
        // VRAM: PDB2 → PDB1 → PDB0 (huge leaves).
        let huge_leaves = vram.div_ceil(HUGE);
        let mut pdb1 = usize::MAX;
        let mut pdb0 = usize::MAX;
        for i in 0..huge_leaves {
            let pa = i * HUGE;
            let va = VA_BASE + pa;
            // A new PDB1 at the start and at every 512 GiB boundary, a new PDB0 every 1 GiB.
            if pdb1 == usize::MAX || (index(va, 30) == 0 && index(va, 21) == 0) {
                pdb1 = new_page(&mut pages)?;
                let e = pages[pdb1].0 | pte::VALID;
                pages[root].1[index(va, 39)] = e;
            }
            if pdb0 == usize::MAX || index(va, 21) == 0 {
                pdb0 = new_page(&mut pages)?;
                let e = pages[pdb0].0 | pte::VALID;
                pages[pdb1].1[index(va, 30)] = e;
            }
            pages[pdb0].1[index(va, 21)] = (pa & pte::ADDR) | pte::RWX | pte::PDE_PTE;
        }
        // System windows: one PDB1/PDB0 chain, 4 KiB PTBs.
        let s_pdb1 = new_page(&mut pages)?;
        pages[root].1[index(SYS_VA, 39)] = pages[s_pdb1].0 | pte::VALID;
        let s_pdb0 = new_page(&mut pages)?;
        pages[s_pdb1].1[index(SYS_VA, 30)] = pages[s_pdb0].0 | pte::VALID;
        let mut ptbs: Vec<(usize, usize)> = Vec::new();
        for (bus, len) in SYSTEM_WINDOWS {
            for off in (0..len).step_by(PAGE as usize) {
                let va = sys_va(bus + off);
                let slot = index(va, 21);
                let ptb = match ptbs.iter().find(|(s, _)| *s == slot) {
                    Some((_, p)) => *p,
                    None => {
                        let p = new_page(&mut pages)?;
                        pages[s_pdb0].1[slot] = pages[p].0 | pte::VALID;
                        ptbs.push((slot, p));
                        p
                    }
                };
                pages[ptb].1[index(va, 12)] = ((bus + off) & pte::ADDR)
                    | pte::RWX
                    | pte::SYSTEM
                    | pte::SNOOPED
                    | pte::MTYPE_UC;
            }
        }
        Ok(PageTables {
            root: pages[root].0,
            pages,
        })
    }

    /// Translate `va` by walking the tables (what the GPU's walker does; used by tests and checks).
    pub fn translate(&self, va: u64) -> Option<(u64, u64)> {
        if va < VA_BASE {
            return None;
        }
        let find = |pa: u64| self.pages.iter().find(|(p, _)| *p == pa).map(|(_, e)| e);
        let mut table = find(self.root)?;
        for shift in [39u32, 30, 21, 12] {
            let e = table[index(va, shift)];
            if e & pte::VALID == 0 {
                return None;
            }
            if shift == 12 || e & pte::PDE_PTE != 0 {
                let span = 1u64 << shift;
                return Some(((e & pte::ADDR) + (va & (span - 1)), e));
            }
            table = find(e & pte::ADDR)?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vram_and_windows_translate_through_the_tables() {
        let mut a = VramAlloc::new(1 << 30);
        let t = PageTables::build(3 << 30, &mut a).unwrap();
        let (pa, e) = t.translate(VA_BASE + 0x8765_4321).unwrap();
        assert_eq!(pa, 0x8765_4321);
        assert_eq!(e & pte::SYSTEM, 0);
        let (pa, e) = t.translate(VA_BASE + (3 << 30) - 4).unwrap();
        assert_eq!(pa, (3 << 30) - 4);
        assert_ne!(e & pte::PDE_PTE, 0);
        let (pa, e) = t.translate(sys_va(BUS_CQ + 12)).unwrap();
        assert_eq!(pa, BUS_CQ + 12);
        assert_ne!(e & pte::SYSTEM, 0);
        let (pa, _) = t.translate(sys_va(BUS_SRAM + 0x7FFFC)).unwrap();
        assert_eq!(pa, BUS_SRAM + 0x7FFFC);
        assert!(t.translate(sys_va(BUS_SRAM + 0x80000)).is_none());
        assert!(t.translate(VA_BASE + (3 << 30)).is_none());
    }

    #[test]
    fn allocator_refuses_past_its_limit() {
        let mut a = VramAlloc::new(1 << 20);
        assert!(a.alloc("x", 0x80000, 0x1000).is_ok());
        let e = a.alloc("big", 0x100000, 0x1000).unwrap_err().to_string();
        assert!(e.contains("out of VRAM for big"), "{e}");
    }
}
