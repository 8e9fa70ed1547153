//! The IP discovery parser (`modelrt_amd::discovery`) against tables assembled here byte by byte from
//! the documented layout (docs/hw/amd-firmware.md §IP discovery): a Navi31-shaped single-die table with
//! 32-bit bases, a two-die table with 64-bit bases and a harvested instance, GC info v1.x and v2.x, and
//! malformed variants; the table tinygrad's own mock encodes for a Navi31, compared with how tinygrad's driver
//! decodes it (`golden/navi31_boot_run.json`); plus a proptest that no input makes the parser panic.
use modelrt_amd::discovery::{hw_id, Discovery, DiscoveryError, TABLE_BYTES};
use proptest::prelude::*;

mod common {
    pub mod amd_golden;
}

/// One IP entry: (hw_id, instance, (major, minor, rev), bases).
type Ip = (u16, u8, (u8, u8, u8), Vec<u64>);

/// Navi31's IP versions with base tuples of the shape Linux's navi31 offset header gives (values here only
/// need to be distinct).
fn navi31_ips() -> Vec<Ip> {
    vec![
        (
            hw_id::GC,
            0,
            (11, 0, 0),
            vec![0x1260, 0xA000, 0x1C000, 0x2402C00],
        ),
        (
            hw_id::SDMA0,
            0,
            (6, 0, 0),
            vec![0x1260, 0xA000, 0x1C000, 0x2402C00],
        ),
        (hw_id::MMHUB, 0, (3, 0, 0), vec![0x1A000, 0x2408800]),
        (
            hw_id::NBIF,
            0,
            (4, 3, 0),
            vec![0, 0x14, 0xD20, 0x10400, 0x241B000, 0x4040000],
        ),
        (
            hw_id::MP0,
            0,
            (13, 0, 0),
            vec![0x16000, 0xDC0000, 0xE00000, 0xE40000, 0x243FC00],
        ),
        (
            hw_id::MP1,
            0,
            (13, 0, 0),
            vec![0x16000, 0xDC0000, 0xE00000, 0xE40000, 0x243FC00],
        ),
        (hw_id::HDP, 0, (6, 0, 0), vec![0xF20, 0x240A400]),
        (hw_id::OSSSYS, 0, (6, 0, 0), vec![0x10A0, 0x240A000]),
    ]
}

fn p16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn p32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn set16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn set32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// A discovery binary: binary header (60 bytes), IP-discovery header (80 bytes), dies, then optional GC
/// info (`gc`: version major) and harvest tables; padded to 10 KiB like the driver's read.
fn build(dies: &[Vec<Ip>], wide: bool, gc: Option<u16>, harvest: &[(u16, u8)]) -> Vec<u8> {
    let mut b = vec![0u8; 60];
    set32(&mut b, 0, 0x2821_1407);
    set16(&mut b, 4, 1);
    set16(&mut b, 12, 60); // table 0: IP discovery at 60
    let ip = b.len();
    b.resize(ip + 80, 0);
    set32(&mut b, ip, 0x5344_5049);
    set16(&mut b, ip + 4, 4);
    set16(&mut b, ip + 12, dies.len() as u16);
    if wide {
        b[ip + 78] = 1;
    }
    for (d, ips) in dies.iter().enumerate() {
        let off = b.len();
        set16(&mut b, ip + 14 + 4 * d, d as u16);
        set16(&mut b, ip + 16 + 4 * d, off as u16);
        p16(&mut b, d as u16);
        p16(&mut b, ips.len() as u16);
        for (id, inst, (ma, mi, rev), bases) in ips {
            p16(&mut b, *id);
            b.extend_from_slice(&[*inst, bases.len() as u8, *ma, *mi, *rev, 0]);
            for &x in bases {
                if wide {
                    b.extend_from_slice(&x.to_le_bytes());
                } else {
                    p32(&mut b, x as u32);
                }
            }
        }
    }
    if let Some(major) = gc {
        let off = b.len();
        set16(&mut b, 12 + 8, off as u16); // table 1: GC
        p32(&mut b, 1); // table id
        p16(&mut b, major);
        p16(&mut b, 0);
        p32(&mut b, 96);
        // fields from +12: se, then v1: wgp0/wgp1 per SA, v2: cu per sh / sh per se
        for v in [
            6u32, 5, 5, 4, 0, 1536, 0, 0, 0, 0, 0, 32, 16, 32, 64, 0, 2, 0, 0, 0, 0,
        ] {
            p32(&mut b, v);
        }
    }
    if !harvest.is_empty() {
        let off = b.len();
        set16(&mut b, 12 + 16, off as u16); // table 2: harvest
        p32(&mut b, 0x5652_4148);
        p32(&mut b, 0);
        for i in 0..32 {
            let (id, inst) = harvest.get(i).copied().unwrap_or((0, 0));
            p16(&mut b, id);
            b.extend_from_slice(&[inst, 0]);
        }
    }
    b.resize(10 << 10, 0);
    b
}

#[test]
fn navi31_table_gives_versions_and_bases() {
    let t = build(&[navi31_ips()], false, Some(2), &[]);
    let d = Discovery::parse(&t).expect("parse");
    assert_eq!(
        (d.num_dies(), d.base_addr_64_bit(), d.version_major),
        (1, false, 1)
    );
    assert_eq!(d.ips().count(), 8);
    for (id, inst, ver, bases) in navi31_ips() {
        let e = d.find(id, inst).unwrap_or_else(|| panic!("hw id {id}"));
        assert_eq!(e.version(), ver);
        assert_eq!(d.version(id), Some(ver));
        assert_eq!(e.bases().collect::<Vec<_>>(), bases);
        assert_eq!(e.num_bases(), bases.len());
        assert_eq!(e.base(bases.len()), None);
    }
    let gc = d.find(hw_id::GC, 0).expect("gc");
    assert_eq!(gc.base(1), Some(0xA000));
    assert_eq!(d.find(hw_id::GC, 1), None);
    assert_eq!(d.find(hw_id::SMUIO, 0), None);
    let info = d.gc_info.expect("gc info");
    assert_eq!(
        (
            info.version_major,
            info.num_se,
            info.num_cu_per_sa,
            info.num_sa_per_se
        ),
        (2, 6, 5, 5)
    );
    assert_eq!(
        (
            info.num_rb_per_se,
            info.wave_size,
            info.max_waves_per_simd,
            info.lds_size
        ),
        (4, 32, 16, 64)
    );
}

#[test]
fn tinygrads_navi31_table_decodes_as_tinygrad_decodes_it() {
    let golden = common::amd_golden::Trace::load().discovery;
    let mut table = golden.table.clone();
    table.resize(TABLE_BYTES, 0);
    let d = Discovery::parse(&table).expect("parse");
    assert_eq!(d.ips().count(), 8);
    for ip in &golden.decoded {
        for (&inst, bases) in &ip.instances {
            let e = d
                .find(ip.hw_id, inst)
                .unwrap_or_else(|| panic!("hw id {} instance {inst}", ip.hw_id));
            assert_eq!(e.version(), ip.version, "hw id {}", ip.hw_id);
            // tinygrad pads its tuples to ten entries with zeros.
            let mut ours: Vec<u64> = e.bases().collect();
            ours.resize(bases.len(), 0);
            assert_eq!(&ours, bases, "hw id {}", ip.hw_id);
        }
    }
    let gc = d.gc_info.expect("gc info");
    let want = |k: &str| golden.gc_info[k].as_u64().map(|v| v as u32);
    assert_eq!(
        Some(u32::from(gc.version_major)),
        golden.gc_info["version"][0].as_u64().map(|v| v as u32)
    );
    assert_eq!(Some(gc.num_se), want("gc_num_se"));
    assert_eq!(Some(gc.num_cu_per_sa), want("gc_num_cu_per_sh"));
    assert_eq!(Some(gc.num_sa_per_se), want("gc_num_sh_per_se"));
    assert_eq!(Some(gc.num_rb_per_se), want("gc_num_rb_per_se"));
    assert_eq!(Some(gc.wave_size), want("gc_wave_size"));
    assert_eq!(Some(gc.max_waves_per_simd), want("gc_max_waves_per_simd"));
    assert_eq!(
        Some(gc.max_scratch_slots_per_cu),
        want("gc_max_scratch_slots_per_cu")
    );
    assert_eq!(Some(gc.lds_size), want("gc_lds_size"));
}

#[test]
fn gc_info_v1_counts_cus_from_wgps() {
    let t = build(&[navi31_ips()], false, Some(1), &[]);
    let info = Discovery::parse(&t).expect("parse").gc_info.expect("gc");
    // v1: WGP0 5 + WGP1 5 per SA, two CUs per WGP; SAs per SE at +76.
    assert_eq!((info.num_cu_per_sa, info.num_sa_per_se), (20, 2));
}

#[test]
fn two_dies_wide_bases_and_harvest() {
    let die0 = vec![
        (hw_id::SDMA0, 0, (6, 0, 0), vec![0x1_0000_1260u64]),
        (hw_id::SDMA0, 1, (6, 0, 0), vec![0x2_0000_1260u64]),
    ];
    let die1 = vec![(hw_id::GC, 0, (11, 0, 3), vec![0xDEAD_BEEF_0000_A000u64, 7])];
    let t = build(&[die0, die1], true, None, &[(hw_id::SDMA0, 0)]);
    let d = Discovery::parse(&t).expect("parse");
    assert!(d.base_addr_64_bit() && d.gc_info.is_none());
    let all: Vec<_> = d
        .ips()
        .map(|e| (e.die, e.hw_id, e.instance, e.harvested))
        .collect();
    assert_eq!(
        all,
        [
            (0, hw_id::SDMA0, 0, true),
            (0, hw_id::SDMA0, 1, false),
            (1, hw_id::GC, 0, false)
        ]
    );
    assert_eq!(
        d.find(hw_id::SDMA0, 0),
        None,
        "harvested instance is excluded"
    );
    assert_eq!(
        d.find(hw_id::SDMA0, 1).and_then(|e| e.base(0)),
        Some(0x2_0000_1260)
    );
    assert_eq!(
        d.find(hw_id::GC, 0).map(|e| e.bases().collect::<Vec<_>>()),
        Some(vec![0xDEAD_BEEF_0000_A000, 7])
    );
    assert_eq!(d.version(hw_id::GC), Some((11, 0, 3)));
}

#[test]
fn malformed_tables_are_errors() {
    let good = build(&[navi31_ips()], false, Some(2), &[]);
    let mut t = good.clone();
    t[0] ^= 1;
    assert_eq!(
        Discovery::parse(&t).unwrap_err(),
        DiscoveryError::BinarySignature(0x2821_1406)
    );
    let mut t = good.clone();
    t[60] = 0;
    let e = Discovery::parse(&t).unwrap_err();
    assert!(matches!(e, DiscoveryError::IpSignature(_)));
    assert!(e.to_string().starts_with("IP discovery: table signature"));
    let mut t = good.clone();
    set16(&mut t, 60 + 12, 17);
    assert_eq!(
        Discovery::parse(&t).unwrap_err(),
        DiscoveryError::TooManyDies(17)
    );
    // A die offset past the end.
    let mut t = good.clone();
    set16(&mut t, 60 + 16, 0xFFF0);
    assert!(matches!(
        Discovery::parse(&t).unwrap_err(),
        DiscoveryError::Truncated {
            what: "die header",
            ..
        }
    ));
    // More IPs than the buffer holds.
    let mut t = good.clone();
    set16(&mut t, 140 + 2, 5000);
    assert!(matches!(
        Discovery::parse(&t).unwrap_err(),
        DiscoveryError::Truncated { .. }
    ));
    // An unknown GC info version.
    let mut t = good.clone();
    let gc = usize::from(u16::from_le_bytes([t[20], t[21]]));
    set16(&mut t, gc + 4, 7);
    assert_eq!(
        Discovery::parse(&t).unwrap_err(),
        DiscoveryError::GcInfoVersion { major: 7, minor: 0 }
    );
    // Truncations anywhere inside the used part are errors, never panics.
    for n in 0..300 {
        assert!(Discovery::parse(&good[..n]).is_err(), "truncated to {n}");
    }
    let e = Discovery::parse(&good[..100]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "IP discovery: IP discovery header at offset 0x3c needs 80 bytes, the table has 100"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_random_bytes(b in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(d) = Discovery::parse(&b) {
            for e in d.ips() {
                let _ = e.bases().count();
            }
        }
    }

    #[test]
    fn never_panics_on_mutated_tables(wide in any::<bool>(), edits in proptest::collection::vec((0usize..700, any::<u8>()), 1..12), cut in 0usize..800) {
        let mut b = build(&[navi31_ips()], wide, Some(2), &[(hw_id::GC, 1)]);
        for (at, v) in edits {
            b[at] = v;
        }
        b.truncate(cut);
        if let Ok(d) = Discovery::parse(&b) {
            for e in d.ips() {
                prop_assert!(e.bases().count() == e.num_bases());
                let _ = d.find(e.hw_id, e.instance);
            }
        }
    }
}
