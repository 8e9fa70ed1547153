//! The QCOM (CL) kernel-container parser (qcom/src/a6xx/cl_container.rs) against tinygrad 0.14's own parser: the six
//! real Qualcomm-compiled binaries of openpilot v0.10.4's warp pickles (qcom/testdata/qcom-cl/) must parse to
//! the values `QCOMProgram._parse_lib` read from them offline (qcom/golden/cl_container.json, written by
//! qcom/golden/cl_container.py — never by our parser). Plus: arbitrary and mutated inputs never panic.
use modelrt_qcom::a6xx::cl_container::{ArgKind, ClContainer};
use proptest::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn data_dir() -> PathBuf {
    root().join("testdata/qcom-cl")
}

fn golden() -> Value {
    let s = std::fs::read_to_string(root().join("golden/cl_container.json")).unwrap();
    serde_json::from_str(&s).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

fn sha256(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The copied files are the ones the README names (SHA256SUMS from the shared data directory).
#[test]
fn testdata_matches_its_checksums() {
    let sums = std::fs::read_to_string(data_dir().join("SHA256SUMS")).unwrap();
    let mut checked = 0;
    for line in sums.lines() {
        let (hash, name) = line.split_once("  ").unwrap();
        if name.ends_with(".pkl") {
            continue; // stored gzipped; the exporter's tests check them after decompressing
        }
        let bytes = std::fs::read(data_dir().join(name)).unwrap();
        assert_eq!(sha256(&bytes), hash, "{name}");
        checked += 1;
    }
    assert_eq!(checked, 12);
}

#[test]
fn real_containers_parse_as_tinygrad_reads_them() {
    let g = golden();
    let kernels = g["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 6);
    for k in kernels {
        let file = k["file"].as_str().unwrap();
        let bytes = std::fs::read(data_dir().join(file)).unwrap();
        let c = ClContainer::parse(&bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(c.name(), k["name"].as_str().unwrap(), "{file}");
        assert_eq!(c.image_size as u64, u(&k["image_size"]), "{file}");
        assert_eq!(
            sha256(c.image()),
            k["image_sha256"].as_str().unwrap(),
            "{file}"
        );
        assert_eq!(c.prg_offset as u64, u(&k["prg_offset"]), "{file}");
        assert_eq!(c.branchstack as u64, u(&k["brnchstck"]), "{file}");
        assert_eq!(c.pvtmem as u64, u(&k["pvtmem"]), "{file}");
        assert_eq!(c.shmem as u64, u(&k["shmem"]), "{file}");
        // tinygrad reserves one sampler more than the file declares.
        let samp = if c.samplers > 0 { c.samplers + 1 } else { 0 };
        assert_eq!(samp as u64, u(&k["samp_cnt"]), "{file}");
        assert_eq!(c.fregs as u64, u(&k["fregs"]), "{file}");
        assert_eq!(c.hregs as u64, u(&k["hregs"]), "{file}");
        let bufs: Vec<u64> = c
            .args()
            .filter(|a| a.kind == ArgKind::Buffer)
            .map(|a| a.offset_bytes as u64)
            .collect();
        let want: Vec<u64> = k["buf_offs"].as_array().unwrap().iter().map(u).collect();
        assert_eq!(bufs, want, "{file}");
        assert_eq!(c.count(ArgKind::Texture) as u64, u(&k["tex_cnt"]), "{file}");
        assert_eq!(c.count(ArgKind::Ibo) as u64, u(&k["ibo_cnt"]), "{file}");
        let consts: Vec<[u64; 3]> = c
            .consts()
            .map(|x| [x.value as u64, x.offset_bytes as u64, x.size as u64])
            .collect();
        let want: Vec<[u64; 3]> = k["consts_info"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| [u(&r[0]), u(&r[1]), u(&r[2])])
            .collect();
        assert_eq!(consts, want, "{file}");
        // Instructions kept byte for byte: the image is the file's bytes at the image offset.
        let off = c.image_offset as usize;
        assert_eq!(c.image(), &bytes[off..off + c.image_size as usize]);
        assert_eq!(
            u32::from_le_bytes(c.image()[..4].try_into().unwrap()) as u64,
            u(&k["image_first_dword"])
        );
    }
}

/// Re-run the golden script over the test data and require the committed JSON to be current.
#[test]
fn golden_json_is_current() {
    let Some(py) = skip::exporter_python() else {
        return;
    };
    let out = std::env::temp_dir().join(format!("cl_container_{}.json", std::process::id()));
    let st = std::process::Command::new(py)
        .arg(root().join("golden/cl_container.py"))
        .arg(data_dir())
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let fresh: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out);
    assert_eq!(fresh, golden());
}

#[path = "../../tests/src/skip.rs"]
mod skip;

fn real_files() -> Vec<Vec<u8>> {
    let mut v: Vec<_> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".adreno.bin"))
        .collect();
    v.sort();
    v.into_iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// Every truncation of a real container fails with a one-line error (never panics, never succeeds short).
#[test]
fn truncations_are_rejected_with_one_line() {
    for b in real_files() {
        let full = ClContainer::parse(&b).unwrap();
        let needed = full.bytes().len();
        for n in 0..needed {
            // The tail after the argument terminator is not read, so short files may still parse.
            if let Err(e) = ClContainer::parse(&b[..n]) {
                let s = e.to_string();
                assert!(!s.contains('\n') && !s.is_empty());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = ClContainer::parse(&b).map(|c| (c.args().count(), c.consts().count(), c.sections().count()));
    }

    #[test]
    fn mutated_real_containers_never_panic(
        which in 0usize..6,
        edits in proptest::collection::vec((any::<u16>(), any::<u32>()), 1..8),
    ) {
        let mut b = real_files().swap_remove(which);
        let n = b.len();
        for (at, v) in edits {
            // Overwrite an aligned word: the header fields, offsets and counts are all u32.
            let at = (at as usize % (n / 4)) * 4;
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        if let Ok(c) = ClContainer::parse(&b) {
            prop_assert!(c.image().len() == c.image_size as usize);
            let _ = (c.args().count(), c.consts().count(), c.sections().count(), c.name().len());
        }
    }
}
