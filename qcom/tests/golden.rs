//! Golden comparison against tinygrad 0.14's own QCOM (IR3) command streams (qcom/golden/*.json, captured by
//! qcom/golden/capture.py against a fake KGSL). For every captured kernel we load the same ISA + metadata into
//! `AdrenoDevice` over the KGSL model, record `wait(0) → exec → signal(1)` (tinygrad's launch: wait, barrier,
//! exec, signal) and require our IB and args region to equal tinygrad's dword for dword after normalising GPU
//! addresses to (object, offset) and timeline values to "relative to the wait".
//!
//! The one intended difference: the CACHE_FLUSH_TS that closes each dispatch. tinygrad stores 0 at DUMMY+0; we
//! store the 1-based dispatch index at DUMMY+0x10 (progress slot for naming a hung kernel). Same dword count.
use modelrt_hal::device::{Arg, Device, KernelImage, Queue};
use modelrt_hal::target::{DType, Ir3KernelMeta, KernelMeta, ParamDesc, ParamKind};
use modelrt_qcom::adreno::{AdrenoDevice, AdrenoOptions, PROGRESS_OFF};
use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};

mod golden_norm;
use golden_norm::*;

const CASES: [&str; 4] = ["plain", "image", "image_half", "image_many"];
const BUF_STRIDE: u64 = 0x10000;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden")
}

fn params(k: &Value) -> Vec<ParamDesc> {
    k["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let dtype = match (p["kind"].as_str().unwrap(), u(&p["itemsize"])) {
                ("var", _) => DType::I32,
                (_, 2) => DType::F16,
                _ => DType::F32,
            };
            let kind = match p["kind"].as_str().unwrap() {
                "image" => ParamKind::Image {
                    height: u(&p["height"]) as u32,
                    width: u(&p["width"]) as u32,
                },
                "buffer" => ParamKind::Buffer,
                _ => ParamKind::Var,
            };
            ParamDesc { kind, dtype }
        })
        .collect()
}

struct Ours {
    ib: Vec<u32>,
    args: Vec<u8>,
    objs: Vec<(String, u64, u64)>,
    bufs: Vec<u64>,
    trace: Vec<String>,
}

fn run_ours(k: &Value) -> Ours {
    let m = &k["meta"];
    let imm = hex(m["immediates"].as_str().unwrap());
    let isa = hex(k["isa"].as_str().unwrap());
    let meta = KernelMeta::Ir3(Ir3KernelMeta {
        image_size: u(&m["image_size"]) as u32,
        fregs: u(&m["fregs"]) as u32,
        hregs: u(&m["hregs"]) as u32,
        branchstack: u(&m["branchstack"]) as u32,
        pvtmem: u(&m["pvtmem"]) as u32,
        shmem: u(&m["shmem"]) as u32,
        wgid: u(&m["wgid"]) as u32,
        lid: u(&m["lid"]) as u32,
        wgsz: u(&m["wgsz"]) as u32,
        buf_off: u(&m["buf_off"]) as u32,
        imm_off: u(&m["imm_off"]) as u32,
        immediates: &imm,
        tex_cnt: u(&m["tex_cnt"]) as u32,
        ibo_cnt: u(&m["ibo_cnt"]) as u32,
        tex_to_image: u32s(&m["tex_to_image"]).iter().map(|&x| x as u8).collect(),
    });
    let ps = params(k);
    let name = k["name"].as_str().unwrap();
    let img = KernelImage {
        name,
        entry: name,
        binary: &isa,
        params: &ps,
        meta: &meta,
    };
    let mut dev = AdrenoDevice::open(
        KgslModel::new(ModelConfig::default()),
        AdrenoOptions::default(),
    )
    .unwrap();
    dev.alloc_arena(BUF_STRIDE * ps.len() as u64).unwrap();
    let kid = dev.load_kernel(&img).unwrap();
    let vals = u32s(&k["vals"]);
    let mut vi = vals.iter();
    let args: Vec<Arg> = ps
        .iter()
        .enumerate()
        .map(|(i, p)| match p.kind {
            ParamKind::Var => Arg::Int(*vi.next().unwrap() as i32),
            _ => Arg::Buffer {
                offset: i as u64 * BUF_STRIDE,
                size: BUF_STRIDE,
            },
        })
        .collect();
    let mut q = dev.create_queue().unwrap();
    q.wait(0).unwrap();
    // IR3 kernels never run partial work groups (only Qualcomm-compiled CL ones do, docs/hw/adreno-kgsl-pm4.md
    // §18.1): the queue refuses such a launch and records nothing for it.
    let (g, l) = (dims(&k["global"]), dims(&k["local"]));
    let before = q.dwords().len();
    let partial = [g[0] * l[0] - 1, g[1] * l[1], g[2] * l[2]];
    assert!(!q.exec_threads(kid, &args, g, l, partial).unwrap());
    assert_eq!(q.dwords().len(), before);
    q.exec(kid, &args, dims(&k["global"]), dims(&k["local"]))
        .unwrap();
    q.signal(1).unwrap();
    dev.submit(&mut q).unwrap();
    let (arena, _) = dev.arena().unwrap();
    let mut objs = dev.address_map();
    objs.retain(|(n, _, _)| n != "arena");
    objs.iter_mut()
        .filter(|o| o.0.starts_with("lib:"))
        .for_each(|o| o.0 = "lib".into());
    let bufs: Vec<u64> = (0..ps.len() as u64)
        .map(|i| arena + i * BUF_STRIDE)
        .collect();
    for (i, b) in bufs.iter().enumerate() {
        objs.push((format!("buf{i}"), *b, BUF_STRIDE));
    }
    let args_va = dev.with_kgsl(|m| m.dispatches()[0].args);
    let size = u(&k["kernargs_alloc_size"]) as usize;
    objs.push(("args".into(), args_va, size as u64));
    let args = dev.with_kgsl(|m| m.read(args_va, size).unwrap());
    let trace = dev.with_kgsl(|m| m.trace().to_vec());
    // the IB exactly as the model received it (timeline values patched at submit)
    let ib = dev.with_kgsl(|m| m.submitted()[0].clone());
    assert_eq!(ib.len(), q.dwords().len());
    Ours {
        ib,
        args,
        objs,
        bufs,
        trace,
    }
}

fn tinygrad_objs(k: &Value) -> (Vec<(String, u64, u64)>, Vec<u64>) {
    let a = &k["addrs"];
    let mut objs = vec![
        ("dummy".to_string(), u(&a["dummy"]), 0x1000),
        ("border".to_string(), u(&a["border"]), 0x1000),
        ("timeline".to_string(), u(&a["timeline"]), 16),
        ("stack".to_string(), u(&a["stack"]), 0x4000),
        ("lib".to_string(), u(&a["lib"]), 0x1000),
        (
            "args".to_string(),
            u(&a["args"]),
            u(&k["kernargs_alloc_size"]),
        ),
    ];
    let bufs: Vec<u64> = a["bufs"].as_array().unwrap().iter().map(u).collect();
    for (i, b) in bufs.iter().enumerate() {
        objs.push((format!("buf{i}"), *b, BUF_STRIDE));
    }
    (objs, bufs)
}

/// Compare one captured kernel against ours; returns (tinygrad exec dwords, our exec dwords).
fn compare(case: &str, k: &Value) -> (usize, usize) {
    let label = format!("{case}/{}", k["name"].as_str().unwrap());
    let ours = run_ours(k);
    let (tobjs, tbufs) = tinygrad_objs(k);
    let theirs_dw = u32s(&k["ib"]);
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
    // The exec's closing flush is 4 dwords before the signal (11 dwords): tokens …, D(hdr), D(4), A(dummy), D(v),
    // then the 11-dword signal = 9 tokens.
    let flush_addr = o.len() - 9 - 2;
    let mut diffs = Vec::new();
    for (i, (a, b)) in o.iter().zip(t.iter()).enumerate() {
        if a != b {
            diffs.push((i, a.clone(), b.clone()));
        }
    }
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
    assert!(
        ours.trace.iter().any(|l| l.contains("dispatch 0")),
        "{label}: model saw the dispatch"
    );
    // per-dispatch dwords = IB − wait(7) − barrier(9) − signal(11)
    (theirs_dw.len() - 27, ours.ib.len() - 27)
}

fn load(case: &str) -> Value {
    let p = golden_dir().join(format!("{case}.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

#[test]
fn streams_match_tinygrad_golden() {
    let mut n = 0;
    for case in CASES {
        let g = load(case);
        for k in g["kernels"].as_array().unwrap() {
            let (theirs, ours) = compare(case, k);
            println!(
                "{case:10} {:28} {:12} exec dwords: tinygrad {theirs}, modelrt {ours}",
                k["name"].as_str().unwrap(),
                k["label"].as_str().unwrap()
            );
            assert!(ours <= theirs);
            n += 1;
        }
    }
    assert_eq!(
        n, 10,
        "3 plain kernels + 3 conv kernels in two image precisions + one 20-texture kernel"
    );
}

#[test]
fn golden_covers_the_listed_kernel_kinds() {
    let labels: Vec<String> = CASES
        .iter()
        .flat_map(|c| {
            load(c)["kernels"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k["label"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    for want in [
        "elementwise",
        "reduction",
        "matmul",
        "conv",
        "many_textures",
    ] {
        assert!(labels.iter().any(|l| l == want), "missing {want}");
    }
    // the IMAGE=1 conv must really bind textures and UAVs
    let img = load("image");
    assert!(img["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| u(&k["meta"]["tex_cnt"]) > 0 && u(&k["meta"]["ibo_cnt"]) > 0));
    // and one kernel has more textures than CP_LOAD_STATE6 loads inline (docs/hw/adreno-kgsl-pm4.md §8.6)
    assert!(load("image_many")["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| u(&k["meta"]["tex_cnt"]) > 16));
}

/// The one skip helper of the workspace's tests (qcom cannot depend on `modelrt-tests`).
#[path = "../../tests/src/skip.rs"]
mod skip;

/// The exporter's Python, or `None` after a reported skip.
fn python() -> Option<PathBuf> {
    skip::exporter_python()
}

/// Re-run capture.py and check the checked-in goldens are up to date (addresses normalised).
#[test]
fn capture_regenerates_goldens() {
    let Some(py) = python() else { return };
    let out = std::env::temp_dir().join(format!("modelrt-qcom-golden-{}", std::process::id()));
    let st = std::process::Command::new(&py)
        .arg(golden_dir().join("capture.py"))
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success(), "capture.py failed with {py:?}");
    for case in CASES {
        let fresh: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(format!("{case}.json"))).unwrap(),
        )
        .unwrap();
        let old = load(case);
        let (fk, ok) = (
            fresh["kernels"].as_array().unwrap(),
            old["kernels"].as_array().unwrap(),
        );
        assert_eq!(
            fk.len(),
            ok.len(),
            "{case}: kernel count changed — regenerate with capture.py qcom/golden"
        );
        for (f, o) in fk.iter().zip(ok) {
            for key in [
                "name",
                "meta",
                "isa",
                "params",
                "global",
                "local",
                "vals",
                "kernargs_alloc_size",
                "label",
            ] {
                assert_eq!(
                    f[key], o[key],
                    "{case}: {key} changed — regenerate with capture.py qcom/golden"
                );
            }
            let (fo, fb) = tinygrad_objs(f);
            let (oo, ob) = tinygrad_objs(o);
            assert_eq!(
                normalise(&u32s(&f["ib"]), &fo),
                normalise(&u32s(&o["ib"]), &oo),
                "{case}: IB changed"
            );
            assert_eq!(
                normalise_args(&hex(f["args"].as_str().unwrap()), &fb),
                normalise_args(&hex(o["args"].as_str().unwrap()), &ob),
                "{case}: args changed"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}
