//! The Navi31 model behind the bridge emulator, reached through the real bridge driver over the
//! emulated USB link: registers over BAR5, the discovery table over BAR0 (and the MM_INDEX/MM_DATA
//! fallback), and the copy-out pipeline (docs/hw/amd-gpu.md §3.2): an SRAM read is armed, SDMA
//! copies VRAM into
//! the SRAM window and its write to the CQ dword (PCIe 0x82200C) releases the bulk IN.
use modelrt_amd::emu::navi31_gpu::{GpuConfig, Navi31Model};
use modelrt_asm24::emu::bridge::BridgeEmulator;
use modelrt_asm24::pcie::PciDevice;
use modelrt_asm24::Bridge;
use modelrt_hal::mmio::Mmio;

const VRAM: u64 = 24 << 30;
const RCC_CONFIG_MEMSIZE: u64 = 0x378C;
const MM_INDEX: u64 = 0x0;
const MM_DATA: u64 = 0x4;
const MM_INDEX_HI: u64 = 0x18;

fn open() -> (PciDevice<BridgeEmulator>, Navi31Model) {
    let gpu = Navi31Model::new(GpuConfig::default());
    let dev = PciDevice::open(Bridge::new(gpu.bridge_emulator())).expect("bring-up");
    (dev, gpu)
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

#[test]
fn discovery_is_readable_over_bar0_and_mm_index() {
    let (mut dev, _gpu) = open();
    let mib = dev.bar_mmio(5).unwrap().read32(RCC_CONFIG_MEMSIZE).unwrap();
    assert_eq!(mib as u64, VRAM >> 20);
    let at = (mib as u64) * (1 << 20) - 64 * 1024;
    let mut table = vec![0u8; 1024];
    dev.bar_mmio(0).unwrap().read_bytes(at, &mut table).unwrap();
    // docs/hw/amd-gpu.md §4: binary signature at +0; table 0 (IP discovery) offset at +12.
    assert_eq!(u32_at(&table, 0), 0x2821_1407);
    let ipd = u16::from_le_bytes([table[12], table[13]]) as usize;
    assert_eq!(u32_at(&table, ipd), 0x5344_5049);
    // Small-BAR fallback: the same dwords through MM_INDEX_HI / MM_INDEX / MM_DATA.
    let mut bar5 = dev.bar_mmio(5).unwrap();
    for i in 0..8u64 {
        let addr = at + 4 * i;
        bar5.write32(MM_INDEX_HI, (addr >> 31) as u32).unwrap();
        bar5.write32(MM_INDEX, (addr as u32 & 0x7FFF_FFFF) | 0x8000_0000)
            .unwrap();
        assert_eq!(
            bar5.read32(MM_DATA).unwrap(),
            u32_at(&table, 4 * i as usize)
        );
    }
}

#[test]
fn sdma_copy_out_releases_the_armed_sram_read() {
    let (mut dev, gpu) = open();
    let va_base = 0x2000_0000_0000u64;
    let (root, data) = (0x10_0000u64, 0x100_0000u64);
    let sram_va = va_base + 0x100_0000;
    // Page tables (docs/hw/amd-gpu.md §3.1, 4 levels, shifts 39/30/21/12): VA_BASE → VRAM `data` in
    // 4 KiB pages,
    // and two 2 MiB SYSTEM huge pages (PDE-as-PTE, bit 54, at the PDB0 level) onto the bridge
    // windows: VA offset 0x100_0000 → bus 0x200000 (SRAM), VA offset 0x160_0000 → bus 0x800000
    // (which holds the CQ dword at 0x82200C).
    let pdb1 = root + 0x1000;
    let pdb0 = root + 0x2000;
    let ptb = root + 0x3000;
    let mut tables = vec![0u64; 4 * 512];
    tables[0] = pdb1 | 1;
    tables[512] = pdb0 | 1;
    tables[1024] = ptb | 1;
    for p in 0..16u64 {
        tables[1536 + p as usize] = (data + p * 4096) | 1 | 0x70;
    }
    tables[1024 + 8] = 0x20_0000 | 1 | 2 | 0x70 | (1 << 54);
    tables[1024 + 11] = 0x80_0000 | 1 | 2 | 0x70 | (1 << 54);
    let bytes: Vec<u8> = tables.iter().flat_map(|e| e.to_le_bytes()).collect();
    let payload: Vec<u8> = (0..3000u32).map(|i| (i * 7 + 3) as u8).collect();
    {
        let mut bar0 = dev.bar_mmio(0).unwrap();
        bar0.write_bytes(root, &bytes).unwrap();
        bar0.write_bytes(
            data + 0x1000,
            &payload.iter().copied().chain([0; 8]).collect::<Vec<_>>(),
        )
        .unwrap();
    }
    let cq = va_base + 0x160_0000 + 0x2200C;
    let src = va_base + 0x1000;
    let ring = va_base + 0x8000;
    let mut pkts = vec![
        1u32,
        payload.len() as u32 - 1,
        0,
        src as u32,
        (src >> 32) as u32,
    ];
    pkts.extend([sram_va as u32, (sram_va >> 32) as u32]); // COPY_LINEAR → SRAM window
    pkts.extend([2, cq as u32, (cq >> 32) as u32, 0, 0]); // WRITE dword 0 → CQ (releases)
    let ring_bytes: Vec<u8> = pkts.iter().flat_map(|d| d.to_le_bytes()).collect();
    dev.bar_mmio(0)
        .unwrap()
        .write_bytes(data + 0x8000, &ring_bytes)
        .unwrap();
    {
        let mut r = dev.bar_mmio(5).unwrap();
        let end = (va_base + (1 << 44) - 1) >> 12;
        for (reg, v) in [
            (0xA54C, root as u32 | 1),
            (0xA550, 0),
            (0xA5CC, (va_base >> 12) as u32),
            (0xA5D0, (va_base >> 44) as u32),
            (0xA64C, end as u32),
            (0xA650, (end >> 32) as u32),
            (0xA3A0, 0x180_0000 | (3 << 1) | 1),
            (0xA470, 0xF8_0001),
            // SDMA queue 0 (docs/hw/amd-gpu.md §8): base, doorbell 512 dwords = byte 0x800, RB_CNTL
            // enable.
            (0x4B84, (ring >> 8) as u32),
            (0x4B88, (ring >> 40) as u32),
            (0x4C2C, 512 << 2),
            (0x4BC8, 1 << 28),
            (0x4B80, (1 << 23) | (1 << 12) | (10 << 1) | 1),
        ] {
            r.write32(reg, v).unwrap();
        }
        assert_eq!(r.read32(0xA4B8).unwrap() & 1, 1);
    }
    dev.bridge().sram_read_arm(payload.len()).unwrap();
    let mut buf = vec![0u8; Bridge::<BridgeEmulator>::sram_wire_len(payload.len())];
    // Doorbell (BAR2 byte 0x800) with the write pointer in bytes; without the CQ write the bulk IN
    // below would time out.
    dev.bar_mmio(2)
        .unwrap()
        .write32(0x800, ring_bytes.len() as u32)
        .unwrap();
    dev.bar_mmio(2).unwrap().write32(0x804, 0).unwrap();
    dev.bridge().sram_read(&mut buf).unwrap();
    assert_eq!(&buf[..payload.len()], &payload[..]);
    assert_eq!(gpu.take_errors(), vec![]);
}
