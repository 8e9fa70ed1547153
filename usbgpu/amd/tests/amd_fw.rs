//! The firmware header parsers (`modelrt_amd::fw`) against three independent references:
//! the real Navi31 blobs of Debian's firmware-amd-graphics (unpacked by `cargo xtask firmware` into
//! target/amdgpu-firmware/) as tinygrad 0.14's own AM driver reads them (`golden/fw_layout.json`,
//! recorded by `golden/fw_layout.py`); facts about the files that do not come from the headers'
//! decoding (IP version in the file name, zlib CRC-32 of the payload, the USB staging limit); and
//! synthetic blobs built here from the layouts in docs/hw/amd-firmware.md, valid and malformed.
use std::path::{Path, PathBuf};

use modelrt_amd::fw::{
    CommonHeader, FwError, Imu, Mes, Named, PspBundle, PspComponent, Rlc, Rs64Gfx, Sdma, Smc, Span,
};
use proptest::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The one skip helper of the workspace's tests (modelrt-amd cannot depend on `modelrt-tests`).
#[path = "../../../tests/src/skip.rs"]
mod skip;

fn fw_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/amdgpu-firmware");
    skip::require(
        dir.join("MANIFEST").exists().then_some(dir),
        "no target/amdgpu-firmware (run `cargo xtask firmware`)",
    )
}

fn golden() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/fw_layout.json");
    serde_json::from_str(&std::fs::read_to_string(p).expect("golden/fw_layout.json")).expect("json")
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// zlib's CRC-32 (reflected polynomial 0xEDB88320), written here as the reference.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// The golden regions of `file` as (types, offset, size).
fn regions(g: &Value, file: &str) -> Vec<(Vec<String>, u64, u64)> {
    g["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .filter(|r| r["file"] == file)
        .map(|r| {
            let types = r["types"]
                .as_array()
                .expect("types")
                .iter()
                .map(|t| t.as_str().expect("type").to_string())
                .collect();
            (
                types,
                r["offset"].as_u64().expect("offset"),
                r["size"].as_u64().expect("size"),
            )
        })
        .collect()
}

fn region(g: &Value, file: &str, ty: &str) -> Span {
    let (_, offset, size) = regions(g, file)
        .into_iter()
        .find(|(t, _, _)| t.iter().any(|x| x == ty))
        .unwrap_or_else(|| panic!("golden has no {ty} in {file}"));
    Span {
        offset: offset as u32,
        size: size as u32,
    }
}

#[test]
fn real_blobs_parse_as_tinygrad_reads_them() {
    let Some(dir) = fw_dir() else { return };
    let g = golden();
    let headers = g["headers"].as_object().expect("headers");
    assert_eq!(
        headers.len(),
        11,
        "every blob of the package is in the golden"
    );
    for (name, h) in headers {
        let blob = read(&dir, name);
        assert_eq!(
            hex(&Sha256::digest(&blob)),
            h["sha256"].as_str().expect("sha256"),
            "{name} differs from the blob the golden was recorded from (re-run golden/fw_layout.py)"
        );
        let c = CommonHeader::parse(&blob, "test", 32).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = [
            ("size_bytes", u64::from(c.size_bytes)),
            ("header_size_bytes", c.header_size_bytes.into()),
            ("header_version_major", c.header_version_major.into()),
            ("header_version_minor", c.header_version_minor.into()),
            ("ip_version_major", c.ip_version_major.into()),
            ("ip_version_minor", c.ip_version_minor.into()),
            ("ucode_version", c.ucode_version.into()),
            ("ucode_size_bytes", c.ucode.size.into()),
            ("ucode_array_offset_bytes", c.ucode.offset.into()),
            ("crc32", c.crc32.into()),
        ];
        for (k, v) in got {
            assert_eq!(Some(v), h[k].as_u64(), "{name}: {k}");
        }
    }

    // PSP sOS: every component tinygrad extracts, same type, offset and size, and nothing more.
    let sos_blob = read(&dir, "psp_13_0_0_sos.bin");
    let sos = PspBundle::parse(&sos_blob).expect("sos");
    let want: Vec<(u64, u64, u64)> = g["sos_components"]
        .as_array()
        .expect("sos_components")
        .iter()
        .map(|c| {
            (
                c["type_id"].as_u64().unwrap(),
                c["offset"].as_u64().unwrap(),
                c["size"].as_u64().unwrap(),
            )
        })
        .collect();
    let got: Vec<(u64, u64, u64)> = sos
        .descriptors()
        .map(|d| (d.fw_type.into(), d.span.offset.into(), d.span.size.into()))
        .collect();
    assert_eq!(got, want);
    assert!(
        sos.component(PspComponent::Sos).is_some() && sos.component(PspComponent::SysDrv).is_some()
    );

    let smu_blob = read(&dir, "smu_13_0_0.bin");
    let smu = Smc::parse(&smu_blob).expect("smu");
    assert_eq!(
        smu.common.ucode,
        region(&g, "smu_13_0_0.bin", "GFX_FW_TYPE_SMU")
    );

    let sdma_blob = read(&dir, "sdma_6_0_0.bin");
    let sdma = Sdma::parse(&sdma_blob).expect("sdma");
    assert_eq!(
        sdma.th0,
        region(&g, "sdma_6_0_0.bin", "GFX_FW_TYPE_SDMA_UCODE_TH0")
    );
    assert_eq!(
        sdma.th1,
        Some(region(&g, "sdma_6_0_0.bin", "GFX_FW_TYPE_SDMA_UCODE_TH1"))
    );

    let mec_blob = read(&dir, "gc_11_0_0_mec.bin");
    let mec = Rs64Gfx::parse(&mec_blob).expect("mec");
    assert_eq!(
        mec.ucode,
        region(&g, "gc_11_0_0_mec.bin", "GFX_FW_TYPE_RS64_MEC")
    );
    assert_eq!(
        mec.data,
        region(&g, "gc_11_0_0_mec.bin", "GFX_FW_TYPE_RS64_MEC_P0_STACK")
    );
    assert_eq!(
        mec.ucode_start_addr,
        g["ucode_start"]["MEC"].as_u64().expect("MEC start")
    );

    let imu_blob = read(&dir, "gc_11_0_0_imu.bin");
    let imu = Imu::parse(&imu_blob).expect("imu");
    assert_eq!(
        imu.iram,
        region(&g, "gc_11_0_0_imu.bin", "GFX_FW_TYPE_IMU_I")
    );
    // tinygrad places IMU_D right after IMU_I; the header's own DRAM offset must agree.
    assert_eq!(
        imu.dram,
        region(&g, "gc_11_0_0_imu.bin", "GFX_FW_TYPE_IMU_D")
    );

    let rlc_blob = read(&dir, "gc_11_0_0_rlc.bin");
    let rlc = Rlc::parse(&rlc_blob).expect("rlc");
    assert_eq!(
        rlc.common.ucode,
        region(&g, "gc_11_0_0_rlc.bin", "GFX_FW_TYPE_RLC_G")
    );
    let [iram, dram] = rlc.iram_dram.expect("v2.2+ images");
    assert_eq!(
        iram,
        region(&g, "gc_11_0_0_rlc.bin", "GFX_FW_TYPE_RLC_IRAM")
    );
    assert_eq!(
        dram,
        region(&g, "gc_11_0_0_rlc.bin", "GFX_FW_TYPE_RLC_DRAM_BOOT")
    );
    let [p, v] = rlc.rlcp_rlcv.expect("v2.3 images");
    assert_eq!(p.span, region(&g, "gc_11_0_0_rlc.bin", "GFX_FW_TYPE_RLC_P"));
    assert_eq!(v.span, region(&g, "gc_11_0_0_rlc.bin", "GFX_FW_TYPE_RLC_V"));
    assert!(rlc.restore_lists.is_some() && rlc.tap_delays.is_none());
}

#[test]
fn real_blobs_agree_with_facts_outside_their_headers() {
    let Some(dir) = fw_dir() else { return };
    for name in [
        "psp_13_0_0_sos.bin",
        "psp_13_0_0_ta.bin",
        "smu_13_0_0.bin",
        "gc_11_0_0_pfp.bin",
        "gc_11_0_0_me.bin",
        "gc_11_0_0_mec.bin",
        "gc_11_0_0_rlc.bin",
        "gc_11_0_0_imu.bin",
        "gc_11_0_0_mes.bin",
        "gc_11_0_0_mes1.bin",
        "sdma_6_0_0.bin",
    ] {
        let blob = read(&dir, name);
        // Over USB every blob is staged through the bridge's 512 KiB SRAM (fact sheet §5).
        assert!(blob.len() <= 512 * 1024, "{name}");
        let c = CommonHeader::parse(&blob, "test", 32).expect(name);
        // The IP version is in the file name: <ip>_<major>_<minor>_<rev>.
        let digits: Vec<u16> = name
            .split(|ch: char| !ch.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(
            (c.ip_version_major, c.ip_version_minor),
            (digits[0], digits[1]),
            "{name}"
        );
        // Every blob except RLC and SMU stores zlib's CRC-32 of everything after the common header.
        if !name.starts_with("gc_11_0_0_rlc") && !name.starts_with("smu") {
            assert_eq!(c.crc32, crc32(&blob[32..]), "{name}");
        }
        let ok = match name {
            n if n.starts_with("psp") => PspBundle::parse(&blob).map(|_| ()),
            n if n.starts_with("smu") => Smc::parse(&blob).map(|_| ()),
            n if n.starts_with("sdma") => Sdma::parse(&blob).map(|_| ()),
            n if n.ends_with("rlc.bin") => Rlc::parse(&blob).map(|_| ()),
            n if n.ends_with("imu.bin") => Imu::parse(&blob).map(|_| ()),
            n if n.contains("_mes") => Mes::parse(&blob).map(|_| ()),
            _ => Rs64Gfx::parse(&blob).map(|g| {
                // RS64 images: instruction image, then the data image, up to the end of the file.
                assert_eq!(g.ucode.offset, g.common.ucode.offset, "{name}");
                assert_eq!(g.ucode.end(), u64::from(g.data.offset), "{name}");
                assert_eq!(g.data.end(), blob.len() as u64, "{name}");
            }),
        };
        ok.unwrap_or_else(|e| {
            panic!(
                "{}",
                Named {
                    file: name,
                    error: e
                }
            )
        });
    }
    // The TA bundle uses the sOS layout with trusted-application types (ASD 1 … SECUREDISPLAY 7).
    let ta = read(&dir, "psp_13_0_0_ta.bin");
    let ta = PspBundle::parse(&ta).expect("ta");
    assert!(!ta.is_empty() && ta.descriptors().all(|d| (1..=7).contains(&d.fw_type)));
    // SMU 13.0.0 ships v2.1 soft power-play tables (the soft-pptable ids, one per SKU), all inside the file.
    let smu_blob = read(&dir, "smu_13_0_0.bin");
    let smu = Smc::parse(&smu_blob).expect("smu");
    assert!(smu.pptables().count() > 0);
    assert!(smu.pptables().all(|t| !t.span.of(&smu_blob).is_empty()));
}

// ---- synthetic blobs, laid out from docs/hw/amd-firmware.md ----

fn put(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// A blob of `len` bytes with a common header: header version, IP 11.0, ucode array at 256.
fn common(len: usize, header_size: u32, major: u16, minor: u16, ucode_size: u32) -> Vec<u8> {
    let mut b = vec![0u8; len];
    put(&mut b, 0, len as u32);
    put(&mut b, 4, header_size);
    b[8..10].copy_from_slice(&major.to_le_bytes());
    b[10..12].copy_from_slice(&minor.to_le_bytes());
    b[12..14].copy_from_slice(&11u16.to_le_bytes());
    put(&mut b, 16, 0x1234);
    put(&mut b, 20, ucode_size);
    put(&mut b, 24, 256);
    b
}

fn synth_psp() -> Vec<u8> {
    let mut b = common(1024, 36, 2, 0, 768);
    put(&mut b, 32, 2);
    // SYS_DRV at array+0 (100 bytes), SOS at array+128 (200 bytes)
    for (i, (ty, ver, off, size)) in [(2u32, 7u32, 0u32, 100u32), (1, 8, 128, 200)]
        .into_iter()
        .enumerate()
    {
        let at = 36 + 16 * i;
        put(&mut b, at, ty);
        put(&mut b, at + 4, ver);
        put(&mut b, at + 8, off);
        put(&mut b, at + 12, size);
    }
    b
}

fn synth_gfx() -> Vec<u8> {
    let mut b = common(1024, 60, 2, 0, 768);
    for (off, v) in [
        (32, 0x1d),
        (36, 0x200),
        (40, 0x100),
        (44, 0x100),
        (48, 0x300),
        (52, 0x3000),
        (56, 0x7),
    ] {
        put(&mut b, off, v);
    }
    b
}

fn synth_sdma() -> Vec<u8> {
    let mut b = common(1024, 64, 2, 0, 768);
    for (off, v) in [(36, 0x180), (48, 0x280), (52, 0x100)] {
        put(&mut b, off, v);
    }
    b
}

fn synth_imu() -> Vec<u8> {
    let mut b = common(1024, 48, 1, 0, 768);
    for (off, v) in [(32, 0x100), (36, 0), (40, 0x100), (44, 0x100)] {
        put(&mut b, off, v);
    }
    b
}

fn synth_smc() -> Vec<u8> {
    let mut b = common(1024, 44, 2, 1, 512);
    put(&mut b, 32, 0x20000);
    put(&mut b, 36, 1);
    put(&mut b, 40, 768);
    for (off, v) in [(768, 0x50325358), (772, 800), (776, 64)] {
        put(&mut b, off, v);
    }
    b
}

fn synth_rlc() -> Vec<u8> {
    let mut b = common(2048, 204, 2, 3, 512);
    // restore lists (ver, feature, size, offset) and images (size, offset), all inside the file
    for (off, v) in [
        (116, 16),
        (120, 1024),
        (132, 16),
        (136, 1040),
        (148, 16),
        (152, 1056),
        (156, 64),
        (160, 1100),
        (164, 64),
        (168, 1200),
        (180, 32),
        (184, 1300),
        (196, 32),
        (200, 1400),
    ] {
        put(&mut b, off, v);
    }
    b
}

#[test]
fn synthetic_blobs_parse_to_their_layout() {
    let psp = synth_psp();
    let p = PspBundle::parse(&psp).expect("psp");
    let d: Vec<_> = p.descriptors().collect();
    assert_eq!(d.len(), 2);
    assert_eq!(
        (d[1].fw_type, d[1].fw_version, d[1].span),
        (
            1,
            8,
            Span {
                offset: 256 + 128,
                size: 200
            }
        )
    );
    assert_eq!(
        p.component(PspComponent::Sos).map(|d| p.bytes(&d).len()),
        Some(200)
    );
    assert_eq!(p.component(PspComponent::Toc), None);

    let gfx = synth_gfx();
    let g = Rs64Gfx::parse(&gfx).expect("gfx");
    assert_eq!(
        (g.ucode, g.data),
        (
            Span {
                offset: 0x100,
                size: 0x200
            },
            Span {
                offset: 0x300,
                size: 0x100
            }
        )
    );
    assert_eq!(g.ucode_start_addr, 0x7_0000_3000);

    let sdma = synth_sdma();
    let s = Sdma::parse(&sdma).expect("sdma");
    assert_eq!(
        (s.th0, s.th1),
        (
            Span {
                offset: 256,
                size: 0x180
            },
            Some(Span {
                offset: 0x280,
                size: 0x100
            })
        )
    );

    let imu = synth_imu();
    let i = Imu::parse(&imu).expect("imu");
    assert_eq!(
        (i.iram, i.dram),
        (
            Span {
                offset: 256,
                size: 0x100
            },
            Span {
                offset: 512,
                size: 0x100
            }
        )
    );

    let smc = synth_smc();
    let m = Smc::parse(&smc).expect("smc");
    assert_eq!(m.ucode_start_addr, 0x20000);
    let t: Vec<_> = m.pptables().collect();
    assert_eq!(
        (t.len(), t[0].id, t[0].span),
        (
            1,
            0x50325358,
            Span {
                offset: 800,
                size: 64
            }
        )
    );

    let rlc = synth_rlc();
    let r = Rlc::parse(&rlc).expect("rlc");
    assert_eq!(
        r.restore_lists.expect("lists")[2].span,
        Span {
            offset: 1056,
            size: 16
        }
    );
    assert_eq!(
        r.iram_dram,
        Some([
            Span {
                offset: 1100,
                size: 64
            },
            Span {
                offset: 1200,
                size: 64
            }
        ])
    );
    assert_eq!(
        r.rlcp_rlcv.expect("p/v")[1].span,
        Span {
            offset: 1400,
            size: 32
        }
    );
}

/// Every parser over `b`; an accepted blob's spans must lie inside it.
fn parse_all(b: &[u8]) -> Vec<Result<(), FwError>> {
    let inside = |s: Span| {
        assert!(
            s.end() <= b.len() as u64,
            "span {s:?} outside {} bytes",
            b.len()
        )
    };
    vec![
        PspBundle::parse(b).map(|p| p.descriptors().for_each(|d| inside(d.span))),
        Smc::parse(b).map(|s| {
            inside(s.common.ucode);
            s.pptables().for_each(|t| inside(t.span));
        }),
        Rs64Gfx::parse(b).map(|g| {
            inside(g.ucode);
            inside(g.data);
        }),
        Sdma::parse(b).map(|s| {
            inside(s.th0);
            s.th1.into_iter().for_each(inside);
        }),
        Imu::parse(b).map(|i| {
            inside(i.iram);
            inside(i.dram);
        }),
        Rlc::parse(b).map(|r| {
            inside(r.common.ucode);
            r.reg_lists.into_iter().for_each(inside);
            r.iram_dram.into_iter().flatten().for_each(inside);
            r.restore_lists
                .into_iter()
                .flatten()
                .for_each(|i| inside(i.span));
            r.rlcp_rlcv
                .into_iter()
                .flatten()
                .for_each(|i| inside(i.span));
        }),
        Mes::parse(b).map(|m| {
            inside(m.ucode);
            inside(m.data);
        }),
    ]
}

#[test]
fn malformed_blobs_are_typed_one_line_errors() {
    // Every truncation of a valid blob is refused (the length no longer matches size_bytes, or the header is cut).
    for (name, blob) in [
        ("psp", synth_psp()),
        ("gfx", synth_gfx()),
        ("rlc", synth_rlc()),
        ("smc", synth_smc()),
    ] {
        for n in 0..blob.len() {
            assert!(
                parse_all(&blob[..n]).iter().all(Result::is_err),
                "{name} truncated to {n}"
            );
        }
    }
    assert!(matches!(
        Rs64Gfx::parse(&synth_gfx()[..20]),
        Err(FwError::Truncated {
            need: 32,
            have: 20,
            ..
        })
    ));
    // size_bytes disagreeing with the file.
    let mut b = synth_gfx();
    put(&mut b, 0, 4096);
    assert_eq!(
        Rs64Gfx::parse(&b).unwrap_err(),
        FwError::SizeMismatch {
            header: 4096,
            file: 1024
        }
    );
    // Wrong header versions.
    let mut b = synth_gfx();
    b[8] = 1;
    let e = Rs64Gfx::parse(&b).unwrap_err();
    assert_eq!(
        e,
        FwError::Version {
            format: "RS64 GFX",
            major: 1,
            minor: 0
        }
    );
    assert_eq!(
        Named {
            file: "gc_11_0_0_mec.bin",
            error: e
        }
        .to_string(),
        "gc_11_0_0_mec.bin: RS64 GFX header version 1.0 is not supported"
    );
    let mut b = synth_rlc();
    b[10] = 9;
    assert!(matches!(
        Rlc::parse(&b),
        Err(FwError::Version {
            major: 2,
            minor: 9,
            ..
        })
    ));
    // A v2.3 RLC whose header is too short for its version.
    let mut b = synth_rlc();
    put(&mut b, 4, 180);
    assert!(matches!(
        Rlc::parse(&b),
        Err(FwError::HeaderSize {
            header: 180,
            min: 204,
            ..
        })
    ));
    // Offsets outside the file.
    let mut b = synth_gfx();
    put(&mut b, 48, 0x3F0);
    let e = Rs64Gfx::parse(&b).unwrap_err();
    assert_eq!(
        e,
        FwError::Range {
            what: "RS64 data",
            offset: 0x3F0,
            size: 0x100,
            file: 1024
        }
    );
    assert_eq!(
        e.to_string(),
        "RS64 data at offset 0x3f0 size 0x100 lies outside the 1024-byte file"
    );
    let mut b = synth_psp();
    put(&mut b, 36 + 16 + 8, 700); // SOS at array+700, 200 bytes: past the 768-byte ucode array
    assert!(matches!(
        PspBundle::parse(&b),
        Err(FwError::Range {
            what: "PSP component",
            ..
        })
    ));
    let mut b = synth_psp();
    put(&mut b, 32, 0xFFFF_FFFF);
    assert!(matches!(
        PspBundle::parse(&b),
        Err(FwError::Count {
            count: 0xFFFF_FFFF,
            ..
        })
    ));
    let mut b = synth_smc();
    put(&mut b, 40, 1020); // entry table runs off the end
    assert!(matches!(Smc::parse(&b), Err(FwError::Range { .. })));
    let mut b = synth_imu();
    put(&mut b, 44, 0x2FF); // DRAM image past the ucode array
    assert!(matches!(
        Imu::parse(&b),
        Err(FwError::Range {
            what: "IMU DRAM image",
            ..
        })
    ));
    let mut b = synth_sdma();
    put(&mut b, 24, u32::MAX); // ucode array offset overflowing
    assert!(matches!(
        Sdma::parse(&b),
        Err(FwError::Range {
            what: "ucode array",
            ..
        })
    ));
    // Every message is one line.
    for blob in [vec![0u8; 3], synth_gfx()[..100].to_vec()] {
        for r in parse_all(&blob) {
            assert!(!r.unwrap_err().to_string().contains('\n'));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parsers_never_panic_on_random_bytes(b in proptest::collection::vec(any::<u8>(), 0..600)) {
        parse_all(&b);
    }

    #[test]
    fn parsers_never_panic_on_mutated_blobs(which in 0usize..6, edits in proptest::collection::vec((0usize..2048, any::<u32>()), 1..8), cut in 0usize..2048) {
        let mut b = [synth_psp, synth_gfx, synth_sdma, synth_imu, synth_smc, synth_rlc][which]();
        for (at, v) in edits {
            let at = at % (b.len() - 3);
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        b.truncate(cut.max(1));
        // Keep size_bytes consistent half of the time so the deeper checks run.
        if b.len() >= 4 && cut % 2 == 0 {
            let n = b.len() as u32;
            b[..4].copy_from_slice(&n.to_le_bytes());
        }
        parse_all(&b);
    }
}
