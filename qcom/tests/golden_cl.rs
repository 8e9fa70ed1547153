//! Golden comparison of the QCOM (CL) path against tinygrad 0.14's own: for each distinct Qualcomm-compiled kernel of
//! openpilot's two warp pickles (and one launch with a fractional global size, from openpilot 0.11.1's road warp), qcom/golden/capture_cl.py recorded the IB and kernel-argument region tinygrad's
//! `QCOMProgram` (CL path, `DEV=QCOM`) submits for the kernel's container (qcom/golden/qcom_cl.json). Here the same
//! container is loaded into `AdrenoDevice` as a `KernelMeta::QcomCl` kernel and `wait(0) → exec → signal(1)` is
//! recorded; IB and args region must equal tinygrad's dword for dword after normalising GPU addresses to
//! (object, offset) and timeline values to "relative to the wait".
//!
//! One documented difference: the closing CACHE_FLUSH_TS stores the 1-based dispatch index at DUMMY+0x10 (the
//! progress slot; tinygrad stores 0 at DUMMY+0), as in the IR3 golden test (golden.rs). The IB is the one the KGSL
//! model received and validated (CP_RUN_OPENCL dispatch checks; shaders are not executed here).
use modelrt_hal::device::{Arg, Device, KernelImage, Queue};
use modelrt_hal::target::{DType, KernelMeta, ParamDesc, ParamKind};
use modelrt_qcom::adreno::{AdrenoDevice, AdrenoOptions, PROGRESS_OFF};
use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};

mod golden_norm;
use golden_norm::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn load() -> Value {
    let p = root().join("golden/qcom_cl.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(u).collect()
}

type Objs = Vec<(String, u64, u64)>;

/// The constants CP_LOAD_STATE6_FRAG (ST_CONSTANTS, SB6_CS_SHADER, 256 units): the args region's address.
fn args_addr(dw: &[u32]) -> u64 {
    let k = (0..dw.len() - 3)
        .find(|&i| dw[i] == 0x7034_8003 && dw[i + 1] == 0x4036_4000)
        .expect("constant load");
    dw[k + 2] as u64 | (dw[k + 3] as u64) << 32
}

struct Ours {
    ib: Vec<u32>,
    args: Vec<u8>,
    objs: Objs,
    bufs: Vec<u64>,
}

fn run_ours(k: &Value) -> Ours {
    let file = k["file"].as_str().unwrap();
    let container = std::fs::read(root().join("testdata/qcom-cl").join(file)).unwrap();
    let sizes = u64s(&k["sizes"]);
    let ps: Vec<ParamDesc> = sizes
        .iter()
        .map(|_| ParamDesc {
            kind: ParamKind::Buffer,
            dtype: DType::U8,
        })
        .collect();
    let name = k["name"].as_str().unwrap();
    let meta = KernelMeta::QcomCl;
    let img = KernelImage {
        name,
        entry: name,
        binary: &container,
        params: &ps,
        meta: &meta,
    };
    let mut dev = AdrenoDevice::open(
        KgslModel::new(ModelConfig::default()),
        AdrenoOptions::default(),
    )
    .unwrap();
    let offs: Vec<u64> = sizes
        .iter()
        .scan(0u64, |at, &s| {
            let o = *at;
            *at += s.div_ceil(0x1000) * 0x1000;
            Some(o)
        })
        .collect();
    let total: u64 = sizes.iter().map(|s| s.div_ceil(0x1000) * 0x1000).sum();
    dev.alloc_arena(total).unwrap();
    let kid = dev.load_kernel(&img).unwrap();
    let args: Vec<Arg> = offs
        .iter()
        .zip(&sizes)
        .map(|(&offset, &size)| Arg::Buffer { offset, size })
        .collect();
    let mut q = dev.create_queue().unwrap();
    q.wait(0).unwrap();
    let local = dims(&k["local"]);
    let global: Vec<f64> = k["global"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_f64().unwrap())
        .collect();
    if global.iter().all(|g| g.fract() == 0.0) {
        q.exec(kid, &args, dims(&k["global"]), local).unwrap();
    } else {
        // a fractional global size (docs/hw/adreno-kgsl-pm4.md §18.1): ceil(g) groups, g·l items
        let groups = [0, 1, 2].map(|d| global[d].ceil() as u32);
        let threads = [0, 1, 2].map(|d| (global[d] * local[d] as f64) as u32);
        assert!(q.exec_threads(kid, &args, groups, local, threads).unwrap());
    }
    q.signal(1).unwrap();
    dev.submit(&mut q)
        .expect("the KGSL model validates the CL-mode stream");
    // the IB exactly as the model received it (timeline values patched at submit)
    let ib = dev.with_kgsl(|m| m.submitted()[0].clone());
    assert_eq!(ib.len(), q.dwords().len());
    let (arena, _) = dev.arena().unwrap();
    let mut objs = dev.address_map();
    objs.retain(|(n, _, _)| n != "arena");
    objs.iter_mut()
        .filter(|o| o.0.starts_with("lib:"))
        .for_each(|o| o.0 = "lib".into());
    let bufs: Vec<u64> = offs.iter().map(|o| arena + o).collect();
    for (i, (b, s)) in bufs.iter().zip(&sizes).enumerate() {
        objs.push((format!("buf{i}"), *b, *s));
    }
    let args_va = args_addr(&ib);
    let size = u(&k["kernargs_alloc_size"]) as usize;
    objs.push(("args".into(), args_va, size as u64));
    let args = dev.with_kgsl(|m| m.read(args_va, size).unwrap());
    Ours {
        ib,
        args,
        objs,
        bufs,
    }
}

fn tinygrad_objs(k: &Value) -> (Objs, Vec<u64>) {
    let a = &k["addrs"];
    let mut objs = vec![
        ("dummy".to_string(), u(&a["dummy"]), 0x1000),
        ("border".to_string(), u(&a["border"]), 0x1000),
        ("timeline".to_string(), u(&a["timeline"]), 16),
        ("stack".to_string(), u(&a["stack"]), 0x4000),
        ("lib".to_string(), u(&a["lib"]), 0x2000),
        (
            "args".to_string(),
            u(&a["args"]),
            u(&k["kernargs_alloc_size"]),
        ),
    ];
    let bufs = u64s(&a["bufs"]);
    for (i, (b, s)) in bufs.iter().zip(u64s(&k["sizes"])).enumerate() {
        objs.push((format!("buf{i}"), *b, s));
    }
    (objs, bufs)
}

/// Compare one captured kernel against ours; returns (tinygrad exec dwords, ours).
fn compare(k: &Value) -> (usize, usize) {
    let label = k["name"].as_str().unwrap().to_string();
    let ours = run_ours(k);
    let (tobjs, tbufs) = tinygrad_objs(k);
    let theirs_dw: Vec<u32> = u64s(&k["ib"]).iter().map(|&x| x as u32).collect();
    assert_eq!(ours.ib.len(), theirs_dw.len(), "{label}: IB length");
    let mut t = normalise(&theirs_dw, &tobjs);
    let mut o = normalise(&ours.ib, &ours.objs);
    relative_timeline(&mut t);
    relative_timeline(&mut o);
    assert_eq!(
        t.len(),
        o.len(),
        "{label}: token count\nours {o:?}\ntheirs {t:?}"
    );
    let flush_addr = o.len() - 9 - 2;
    let diffs: Vec<_> = o
        .iter()
        .zip(&t)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| (i, a.clone(), b.clone()))
        .collect();
    let expected = vec![
        (
            flush_addr,
            Tok::A("dummy".into(), PROGRESS_OFF),
            Tok::A("dummy".into(), 0),
        ),
        (flush_addr + 1, Tok::D(1), Tok::D(0)),
    ];
    assert_eq!(
        diffs, expected,
        "{label}: stream differs beyond the documented progress marker"
    );
    let (oa, om) = normalise_args(&ours.args, &ours.bufs);
    let (ta, tm) = normalise_args(&hex(k["args"].as_str().unwrap()), &tbufs);
    assert_eq!(om, tm, "{label}: buffer address slots in the args region");
    assert_eq!(oa, ta, "{label}: args region bytes");
    // per-dispatch dwords = IB − wait(7) − barrier(9) − signal(11)
    (theirs_dw.len() - 27, ours.ib.len() - 27)
}

#[test]
fn cl_streams_match_tinygrad_golden() {
    let g = load();
    let ks = g["kernels"].as_array().unwrap();
    for k in ks {
        let (theirs, ours) = compare(k);
        println!(
            "{:14} exec dwords: tinygrad {theirs}, modelrt {ours}",
            k["name"].as_str().unwrap()
        );
    }
    // The five distinct kernels of the road-camera warp and the driver-camera warp's one, and openpilot 0.11.1's
    // E_10_32768_3 launched with its fractional global size [128, 2.5, 1] (a partial last work group).
    assert_eq!(ks.len(), 7);
    let last = &ks[6];
    assert_eq!(last["global"], serde_json::json!([128, 2.5, 1]));
    // tinygrad's NDRANGE block for it: totals int(g·l) = 32768, 10, 1 and group counts ceil(g) = 128, 3, 1
    let ib: Vec<u32> = u64s(&last["ib"]).iter().map(|&x| x as u32).collect();
    let nd = modelrt_qcom::pm4::packets(&ib)
        .map(|p| p.unwrap())
        .find(|p| {
            matches!(
                p.header,
                modelrt_qcom::pm4::Header::Type4 { reg: 0xB990, .. }
            )
        })
        .expect("SP_CS_NDRANGE_0 block");
    assert_eq!(
        [
            nd.payload[1],
            nd.payload[3],
            nd.payload[5],
            nd.payload[9],
            nd.payload[10],
            nd.payload[11]
        ],
        [32768, 10, 1, 128, 3, 1]
    );
}

/// Independent of our builder: what tinygrad's CL path programs differently from its IR3 path, read off the
/// golden streams (docs/hw/adreno-kgsl-pm4.md §18): CP_RUN_OPENCL with payload 0 and no CP_EXEC_CS, ISAMMODE_CL in
/// SP_MODE_CNTL (0x2) and TPL1_MODE_CNTL (0x1), and no SP_CS_CONST_CONFIG_0 (0xB997) write.
#[test]
fn golden_shows_the_cl_mode_differences() {
    for k in load()["kernels"].as_array().unwrap() {
        let ib: Vec<u32> = u64s(&k["ib"]).iter().map(|&x| x as u32).collect();
        let pk: Vec<_> = modelrt_qcom::pm4::packets(&ib)
            .map(|p| p.unwrap())
            .map(|p| (p.header, p.payload.to_vec()))
            .collect();
        use modelrt_qcom::pm4::Header::*;
        let has = |want: &dyn Fn(&modelrt_qcom::pm4::Header, &[u32]) -> bool| {
            pk.iter().any(|(h, p)| want(h, p))
        };
        assert!(has(
            &|h, p| matches!(h, Type7 { opcode: 0x31, .. }) && p == [0]
        ));
        assert!(!has(&|h, _| matches!(h, Type7 { opcode: 0x33, .. })));
        assert!(has(
            &|h, p| matches!(h, Type4 { reg: 0xAB00, .. }) && p == [0x2]
        ));
        assert!(has(
            &|h, p| matches!(h, Type4 { reg: 0xB309, .. }) && p == [0x1]
        ));
        assert!(!has(&|h, _| matches!(h, Type4 { reg: 0xB997, .. })));
    }
}

#[path = "../../tests/src/skip.rs"]
mod skip;

/// Re-run capture_cl.py and check the checked-in golden is current (addresses normalised).
#[test]
fn capture_cl_regenerates_golden() {
    let Some(py) = skip::exporter_python() else {
        return;
    };
    let out = std::env::temp_dir().join(format!("modelrt-qcom-cl-{}.json", std::process::id()));
    let st = std::process::Command::new(&py)
        .arg(root().join("golden/capture_cl.py"))
        .arg(root().join("testdata/qcom-cl"))
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "capture_cl.py failed with {py:?}");
    let fresh: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out);
    let old = load();
    let (fk, ok) = (
        fresh["kernels"].as_array().unwrap(),
        old["kernels"].as_array().unwrap(),
    );
    assert_eq!(fk.len(), ok.len());
    for (f, o) in fk.iter().zip(ok) {
        for key in [
            "pickle",
            "file",
            "name",
            "global",
            "local",
            "sizes",
            "kernargs_alloc_size",
        ] {
            assert_eq!(
                f[key], o[key],
                "{key} changed — regenerate with capture_cl.py"
            );
        }
        let (fo, fb) = tinygrad_objs(f);
        let (oo, ob) = tinygrad_objs(o);
        let ib = |k: &Value| -> Vec<u32> { u64s(&k["ib"]).iter().map(|&x| x as u32).collect() };
        let mut a = normalise(&ib(f), &fo);
        let mut b = normalise(&ib(o), &oo);
        relative_timeline(&mut a);
        relative_timeline(&mut b);
        assert_eq!(a, b, "IB changed");
        assert_eq!(
            normalise_args(&hex(f["args"].as_str().unwrap()), &fb),
            normalise_args(&hex(o["args"].as_str().unwrap()), &ob),
            "args changed"
        );
    }
}
