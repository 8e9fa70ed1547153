//! The discovery blob the model puts at `VRAM − 64 KiB`, decoded here from the layout of
//! docs/hw/amd-gpu.md §4
//! (§4 step 2) — binary header, IP-discovery table, GC info, harvest table, checksums — and the
//! boot-time registers around it (§2, §2.2).
use std::collections::BTreeMap;

use super::support::*;
use modelrt_amd::emu::navi31_gpu::GpuConfig;

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn sum(b: &[u8]) -> u16 {
    b.iter().fold(0u16, |s, &x| s.wrapping_add(x as u16))
}

/// Read the 10 KiB the driver reads (docs/hw/amd-gpu.md §4) through BAR0 as the model exposes it.
fn blob(r: &Rig) -> Vec<u8> {
    let mib = r.gpu.reg_read(0x378C) as u64;
    let [bar0, _, _] = r.gpu.bars();
    let mut bar0 = bar0;
    let at = (mib << 20) - 64 * 1024;
    (0..10 * 1024 / 4)
        .flat_map(|i| bar0.read32(at + 4 * i).to_le_bytes())
        .collect()
}

#[test]
fn discovery_table_decodes_to_the_navi31_ip_list() {
    let r = Rig::new();
    let b = blob(&r);
    assert_eq!(u32_at(&b, 0), 0x2821_1407, "binary signature");
    let size = u16_at(&b, 10) as usize;
    assert_eq!(sum(&b[10..size]), u16_at(&b, 8), "binary checksum");
    let table = |i: usize| {
        (
            u16_at(&b, 12 + 8 * i) as usize,
            u16_at(&b, 16 + 8 * i) as usize,
        )
    };
    for i in 0..3 {
        let (off, len) = table(i);
        assert_eq!(
            sum(&b[off..off + len]),
            u16_at(&b, 14 + 8 * i),
            "table {i} checksum"
        );
    }
    let (ipd, _) = table(0);
    assert_eq!(u32_at(&b, ipd), 0x5344_5049, "IP discovery signature");
    assert_eq!(u16_at(&b, ipd + 12), 1, "one die");
    assert_eq!(b[ipd + 78] & 1, 0, "32-bit base addresses");
    let die = u16_at(&b, ipd + 16) as usize;
    let num_ips = u16_at(&b, die + 2) as usize;
    let mut o = die + 4;
    let mut ips = BTreeMap::new();
    for _ in 0..num_ips {
        let (hw, n) = (u16_at(&b, o), b[o + 3] as usize);
        let bases: Vec<u32> = (0..n).map(|i| u32_at(&b, o + 8 + 4 * i)).collect();
        ips.insert((hw, b[o + 2]), ((b[o + 4], b[o + 5], b[o + 6]), bases));
        o += 8 + 4 * n;
    }
    // Hardware ids and Navi31 versions from docs/hw/amd-gpu.md §4.
    let version = |hw: u16| ips[&(hw, 0)].0;
    assert_eq!(version(11), (11, 0, 0), "GC");
    assert_eq!(version(42), (6, 0, 0), "SDMA0");
    assert_eq!(version(34), (3, 0, 0), "MMHUB");
    assert_eq!(version(108), (4, 3, 0), "NBIF/NBIO");
    assert_eq!(version(255), (13, 0, 0), "MP0");
    assert_eq!(version(1), (13, 0, 0), "MP1");
    assert_eq!(version(41), (6, 0, 0), "HDP");
    assert_eq!(version(40), (6, 0, 0), "OSSSYS");
    // The bases reproduce the BAR5 offsets of docs/hw/amd-gpu.md §2 (register offsets from
    // tinygrad's GC 11 / MP 13
    // tables): CP_STAT (GC seg 0 + 0xF40) = 0x8680,
    // MP0 C2PMSG_35 (MP0 seg 0 + 0x0063) = 0x5818C.
    assert_eq!((ips[&(11, 0)].1[0] + 0xF40) * 4, 0x8680);
    assert_eq!((ips[&(255, 0)].1[0] + 0x63) * 4, 0x5818C);
    let (gc, _) = table(1);
    assert_eq!(u32_at(&b, gc), 0x4347, "GC info table id");
    assert_eq!(u32_at(&b, gc + 56), 32, "wave32");
    let (hv, _) = table(2);
    assert_eq!(u32_at(&b, hv), 0x5652_4148, "harvest signature");
    assert!(
        (0..32).all(|i| u16_at(&b, hv + 8 + 4 * i) == 0),
        "nothing harvested"
    );
}

#[test]
fn corrupt_discovery_fault_breaks_the_signature() {
    let mut config = GpuConfig::default();
    config.faults.corrupt_discovery = true;
    let r = Rig::with(config);
    assert_ne!(u32_at(&blob(&r), 0), 0x2821_1407);
}

#[test]
fn boot_registers_answer_consistently() {
    let r = Rig::with(GpuConfig {
        vram_bytes: 512 << 20,
        ..GpuConfig::default()
    });
    assert_eq!(r.gpu.reg_read(0x378C), 512, "RCC_CONFIG_MEMSIZE in MiB");
    let base = r.gpu.reg_read(0x6A3B0) as u64;
    let top = r.gpu.reg_read(0x6A3B4) as u64;
    assert_eq!(
        (top - base + 1) << 24,
        512 << 20,
        "FB_LOCATION_TOP consistent with VRAM"
    );
    // HDP remap is not 0 (docs/hw/amd-gpu.md §2.2): flushes must not land on MM_INDEX.
    assert_ne!(r.gpu.reg_read(0x3934), 0);
    // MM hub invalidate: semaphore acquires, request acknowledged.
    assert_eq!(r.gpu.reg_read(0x69D88), 1);
    r.gpu.reg_write(0x69DD0, 0xF8_0001);
    assert_eq!(r.gpu.reg_read(0x69E18) & 1, 1);
    // SCRATCH_REG6/7 hold what the driver wrote (partial-boot marker).
    r.gpu.reg_write(0x3011C, 0xA000_0008);
    assert_eq!(r.gpu.reg_read(0x3011C), 0xA000_0008);
    assert_eq!(r.gpu.reg_read(CP_STAT), 0);
}
