//! The golden trace of tinygrad 0.14's AM driver (`golden/navi31_boot_run.json`, see
//! `golden/README.md`) read through its loader (`tests/common/amd_golden.rs`) and checked against facts
//! recorded elsewhere: the boot order and step counts in docs/hw/amd-driver.md §4 and §7, and the real firmware
//! blobs as this crate's parsers see them — every firmware upload in the trace must have the size of the component
//! the parsers find, in the documented order.
use modelrt_amd::fw::{Imu, PspBundle, PspComponent, Rlc, Rs64Gfx, Sdma, Smc};
use std::path::{Path, PathBuf};

mod common {
    pub mod amd_golden;
}
use common::amd_golden::{Event, Trace};

/// The one skip helper of the workspace's tests (modelrt-amd cannot depend on `modelrt-tests`).
#[path = "../../../tests/src/skip.rs"]
mod skip;

fn fw(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn trace_matches_the_fact_sheet_steps() {
    let t = Trace::load();
    assert_eq!(t.vram_size, 512 << 20);
    // Step 1: 47 config writes; resizable BAR control 0x900 (512 MiB) at 0x108 and command 0x7 on the GPU (bus 4).
    assert_eq!(t.config_writes.len(), 47);
    let gpu = |off: u16, v: u32| {
        t.config_writes
            .iter()
            .any(|c| (c.bus, c.offset, c.value) == (4, off, v))
    };
    assert!(gpu(0x108, 0x900) && gpu(0x4, 0x7));
    // Step 2: discovery reads 10 KiB at vram - 64 KiB (first VRAM access of the boot).
    let first_vram = t
        .phase("boot")
        .iter()
        .find(|e| matches!(e, Event::VramRead { .. }));
    assert_eq!(
        first_vram,
        Some(&Event::VramRead {
            offset: (512 << 20) - (64 << 10),
            len: 10 << 10
        })
    );
    // Steps 9, 10: 15 PSP ring frames (write pointer 0x10 … 0xF0), then the SMU's first three messages.
    let wptrs = t.values_written("boot", "regMP0_SMN_C2PMSG_67");
    assert_eq!(wptrs, (1..=15).map(|i| i * 16).collect::<Vec<_>>());
    let smu = t.values_written("boot", "mmMP1_SMN_C2PMSG_66");
    assert_eq!(smu[..3], [0xE, 0xF, 0x6]);
    // Step 13 with the frozen SMU answers: one level-count query per clock plus one query per level, not the
    // 394,240 messages of the echoing mock.
    let levels: usize = t.frozen_answers["smu_dpm_mhz"]
        .as_object()
        .expect("dpm")
        .values()
        .map(|l| l.as_array().expect("levels").len())
        .sum();
    assert_eq!(smu.iter().filter(|&&m| m == 0x1F).count(), 4 + levels);
    // Step 14: the boot ends with SCRATCH_REG7 = 0xA0000008 and SCRATCH_REG6 = 1; fini clears REG6.
    let boot_writes: Vec<_> = t.writes("boot").collect();
    assert_eq!(
        boot_writes[boot_writes.len() - 2..],
        [
            ("GC:regSCRATCH_REG7", 0xA000_0008),
            ("GC:regSCRATCH_REG6", 1)
        ]
    );
    assert_eq!(t.writes("fini").last(), Some(("GC:regSCRATCH_REG6", 0)));
    // Step 17: the run touches no register; 3 SDMA doorbells (BAR2 0x800) and 1 compute doorbell (0x18), and
    // these USB transfers.
    let run = t.phase("run");
    assert!(!run
        .iter()
        .any(|e| matches!(e, Event::Read { .. } | Event::Write { .. })));
    let doorbells: Vec<u64> = run
        .iter()
        .filter_map(|e| match e {
            Event::Doorbell { offset, .. } => Some(*offset),
            _ => None,
        })
        .collect();
    assert_eq!(
        (
            doorbells.iter().filter(|&&o| o == 0x800).count(),
            doorbells.iter().filter(|&&o| o == 0x18).count()
        ),
        (3, 1)
    );
    let usb = &t.usb_counts["run"];
    let want = [
        ("ctrl_out_F0", 100),
        ("ctrl_out_E5", 8),
        ("ctrl_out_F2", 5),
        ("ctrl_in_E4", 4),
        ("bulk_out", 102),
        ("bulk_in", 3),
    ];
    for (k, n) in want {
        assert_eq!(usb.get(k).copied(), Some(n), "{k}");
    }
    // Every register the trace touches has a name, except one hole of the HQD block copied from the MQD.
    assert_eq!(t.names.values().filter(|n| n.as_str() == "?").count(), 1);
}

/// Bytes one firmware upload moves through the bridge SRAM: the blob plus 4 zero bytes, in 512-byte sectors.
fn sram_len(size: usize) -> u64 {
    (size as u64 + 4).div_ceil(512) * 512
}

#[test]
fn firmware_uploads_match_the_parsed_blobs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/amdgpu-firmware");
    let Some(dir): Option<PathBuf> = skip::require(
        dir.join("MANIFEST").exists().then_some(dir),
        "no target/amdgpu-firmware (run `cargo xtask firmware`)",
    ) else {
        return;
    };
    let t = Trace::load();
    let sos_blob = fw(&dir, "psp_13_0_0_sos.bin");
    let sos = PspBundle::parse(&sos_blob).expect("sos");
    let size = |c| sos.component(c).map(|d| d.span.size as usize);

    // Bootloader (docs/hw/amd-driver.md §4): KDB, KDB again for the SPL slot (MP0 < 14), SYS/SOC/INTF/DBG/RAS drivers, sOS —
    // each only if the bundle has it.
    let order = [
        (PspComponent::Kdb, 0x80000u32),
        (PspComponent::Kdb, 0x1000_0000),
        (PspComponent::SysDrv, 0x10000),
        (PspComponent::SocDrv, 0xB0000),
        (PspComponent::IntfDrv, 0xD0000),
        (PspComponent::DbgDrv, 0xC0000),
        (PspComponent::RasDrv, 0xE0000),
        (PspComponent::Sos, 0x20000),
    ];
    let present: Vec<_> = order
        .iter()
        .filter_map(|&(c, cmd)| size(c).map(|s| (cmd, sram_len(s))))
        .collect();
    assert_eq!(
        t.values_written("boot", "regMP0_SMN_C2PMSG_35"),
        present.iter().map(|p| p.0).collect::<Vec<_>>()
    );

    // Ring loads: TOC, SMU, then every IP image in the driver's order.
    let smu_blob = fw(&dir, "smu_13_0_0.bin");
    let sdma_blob = fw(&dir, "sdma_6_0_0.bin");
    let mec_blob = fw(&dir, "gc_11_0_0_mec.bin");
    let imu_blob = fw(&dir, "gc_11_0_0_imu.bin");
    let rlc_blob = fw(&dir, "gc_11_0_0_rlc.bin");
    let sdma = Sdma::parse(&sdma_blob).expect("sdma");
    let mec = Rs64Gfx::parse(&mec_blob).expect("mec");
    let imu = Imu::parse(&imu_blob).expect("imu");
    let rlc = Rlc::parse(&rlc_blob).expect("rlc");
    let [iram, dram] = rlc.iram_dram.expect("rlc v2.2+");
    let [p, v] = rlc.rlcp_rlcv.expect("rlc v2.3");
    let ring_loads = [
        size(PspComponent::Toc).expect("toc"),
        Smc::parse(&smu_blob).expect("smu").ucode().len(),
        sdma.th1.expect("th1").size as usize,
        sdma.th0.size as usize,
        mec.ucode.size as usize,
        mec.data.size as usize,
        imu.iram.size as usize,
        imu.dram.size as usize,
        iram.size as usize,
        dram.size as usize,
        p.span.size as usize,
        v.span.size as usize,
        rlc.common.ucode.size as usize,
    ];
    let mut want: Vec<u64> = present.iter().map(|p| p.1).collect();
    want.extend(ring_loads.iter().map(|&s| sram_len(s)));
    let got: Vec<u64> = t
        .phase("boot")
        .iter()
        .filter_map(|e| match e {
            Event::SramWrite { len, .. } => Some(*len),
            _ => None,
        })
        .collect();
    assert_eq!(got, want);
}
