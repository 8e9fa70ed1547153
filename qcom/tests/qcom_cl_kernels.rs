//! openpilot's real Qualcomm-compiled kernels (the v0.10.4 road- and driver-camera warps, `DEV=QCOM`) executed
//! on the IR3 interpreter in CL mode and compared with their own OpenCL C source compiled for the host by
//! clang (docs/hw/adreno-kgsl-pm4.md §16.11). Each kernel runs its real NDRange (the pickles' global and local
//! sizes) on real-size buffers — a 1928×1208 NV12 frame (stride 2048) of deterministic pseudo-random bytes,
//! perspective and affine transforms chosen to reach past every edge of the frame — and every byte of every
//! buffer must equal the reference's.
//!
//! The dispatch is set up the way tinygrad's QCOM (CL) path programs it (§7): buffer addresses at the
//! argument records' offsets in the constant file, the container's constants at theirs, HLSQ_CS_CNTL_0 =
//! `0x00ccc0cf` (work-group id r51.w, size r48.x, offset r51.x, local id r0.x). Buffers are placed across a
//! 4 GiB boundary so the kernels' 64-bit address arithmetic (carry into the high word) is exercised.
mod cl_stream;
#[path = "qcom_cl/kgsl_run.rs"]
mod kgsl_run;
#[path = "qcom_cl/reference.rs"]
mod reference;
/// The one skip helper of the workspace's tests (qcom cannot depend on `modelrt-tests`).
#[path = "../../tests/src/skip.rs"]
mod skip;

use modelrt_ir3::{self as ir3, GpuMemory, Launch, Program, RunStats};
use modelrt_qcom::a6xx::cl_container::{ArgKind, ClContainer};
use std::path::{Path, PathBuf};

/// HLSQ_CS_CNTL_0 as tinygrad's QCOM (CL) path writes it (docs/hw/adreno-kgsl-pm4.md §7 item 11).
const CL_CS_CNTL_0: u32 = 0x00CC_C0CF;

/// The kernels' data: `qcom/testdata/qcom-cl/` (source and licence in its README).
fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/qcom-cl")
}

/// One kernel of the two pickles with the NDRange its pickle launches it with.
struct Case {
    /// File stem in `data_dir()`.
    file: &'static str,
    name: &'static str,
    groups: [u32; 3],
    local: [u32; 3],
    /// Contents of each `float` buffer parameter (the 3×3 transforms), in signature order.
    transforms: &'static [[f32; 9]],
    /// For the warps: the plane sampled (`y`, `u`, `v`) and the output's width and height, for the numpy model.
    warp: Option<(&'static str, u32, u32)>,
    /// Work items per dimension when the last group is partial (a fractional tinygrad global size,
    /// docs/hw/adreno-kgsl-pm4.md §18.1): the interpreter runs `groups × local` with only these items, the
    /// reference runs exactly these items (one per group).
    items: Option<[u32; 3]>,
}

const ROAD: &str = "v0.10.4_warp_1928x1208_tinygrad";
const DRIVER: &str = "v0.10.4_dm_warp_1928x1208_tinygrad";

/// Affine with a 1.5 and 2.5 scale: every odd output column/row lands exactly half-way between two pixels,
/// so the kernels' round-half-to-even logic is exercised; the offsets push 5 % of the columns left of the frame
/// and 21 % of the rows below it.
const AFFINE: [f32; 9] = [1.5, 0.0, -40.0, 0.0, 2.5, 700.0, 0.0, 0.0, 1.0];
/// Perspective transforms whose samples fall off every edge of the plane (driver warp: 1.8 % left, 1.5 %
/// right, 3.3 % above, 5.7 % below; road UV warp, the element-wise product of the two: 1 %, 36 %, 12.5 %, 24 %).
const PERSPECTIVE: [f32; 9] = [1.4, 0.03, -50.0, -0.02, 1.4, -30.0, 5e-6, 1e-5, 1.0];
const UV_A: [f32; 9] = [1.5, 0.02, -30.0, 0.01, 1.5, -100.0, 1e-5, 2e-5, 1.0];
const UV_B: [f32; 9] = [4.0, 2.0, 0.5, 1.0, 5.0, 1.2, 2.0, 0.5, 1.0];

const CASES: [Case; 6] = [
    Case {
        file: ROAD,
        name: "E_256_128_4",
        groups: [8, 32, 1],
        local: [16, 8, 1],
        transforms: &[AFFINE],
        warp: Some(("y", 512, 256)),
        items: None,
    },
    Case {
        file: ROAD,
        name: "E_128_64_4",
        groups: [16, 1, 1],
        local: [4, 128, 1],
        transforms: &[UV_A, UV_B],
        warp: Some(("u", 256, 128)),
        items: None,
    },
    Case {
        file: ROAD,
        name: "E_128_64_4n1",
        groups: [4, 16, 1],
        local: [16, 8, 1],
        transforms: &[UV_A, UV_B],
        warp: Some(("v", 256, 128)),
        items: None,
    },
    Case {
        file: ROAD,
        name: "E_10_32768_3",
        groups: [128, 10, 1],
        local: [256, 1, 1],
        transforms: &[],
        warp: None,
        items: None,
    },
    Case {
        file: ROAD,
        name: "E_131072_3",
        groups: [1024, 1, 1],
        local: [128, 1, 1],
        transforms: &[],
        warp: None,
        items: None,
    },
    Case {
        file: DRIVER,
        name: "E_960_480_3",
        groups: [15, 60, 1],
        local: [32, 16, 1],
        transforms: &[PERSPECTIVE],
        warp: Some(("y", 1440, 960)),
        items: None,
    },
];

/// splitmix64: deterministic pseudo-random bytes.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(n);
    out
}

/// The buffers of one dispatch at their GPU addresses; every access must lie inside one of them.
struct Mem(Vec<(u64, Vec<u8>)>);

impl Mem {
    fn find(&mut self, addr: u64, len: usize) -> Result<&mut [u8], String> {
        for (base, b) in &mut self.0 {
            if addr >= *base && addr + len as u64 <= *base + b.len() as u64 {
                let o = (addr - *base) as usize;
                return Ok(&mut b[o..o + len]);
            }
        }
        Err(format!(
            "GPU fault: {len} bytes at {addr:#x} outside every buffer"
        ))
    }
}

impl GpuMemory for Mem {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        let s = self.find(addr, out.len())?;
        out.copy_from_slice(s);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        self.find(addr, data.len())?.copy_from_slice(data);
        Ok(())
    }
}

/// Buffer `i`'s address: straddling the 4 GiB boundary `i + 1`, so offsets carry into the high word.
fn address(i: usize, len: usize) -> u64 {
    ((i as u64 + 1) << 32) - ((len as u64 / 2) & !0xFF)
}

/// The initial contents of `c`'s buffers: output 0 filled with 0x5a, `float` ones with the transforms,
/// the others (the frame, planes) pseudo-random.
fn inputs(c: &Case, params: &[reference::Param]) -> Vec<Vec<u8>> {
    let mut floats = c.transforms.iter();
    params
        .iter()
        .enumerate()
        .map(|(i, p)| match (i, p.ty.as_str()) {
            (0, _) => vec![0x5A; p.bytes],
            (_, "float") => {
                let t = floats.next().expect("a transform per float buffer");
                t.iter().flat_map(|v| v.to_le_bytes()).collect()
            }
            _ => bytes(0x5EED + i as u64, p.bytes),
        })
        .collect()
}

/// Run `c` on the interpreter in CL mode; the buffers are updated in place.
fn interpret(c: &Case, k: &ClContainer<'_>, bufs: &mut [Vec<u8>]) -> Result<RunStats, String> {
    if k.name() != c.name {
        return Err(format!(
            "the container holds kernel {}, not {}",
            k.name(),
            c.name
        ));
    }
    let prog = Program::decode(c.name, k.image())?;
    let mut consts = vec![0u32; 1024];
    let addrs: Vec<u64> = bufs
        .iter()
        .enumerate()
        .map(|(i, b)| address(i, b.len()))
        .collect();
    let args: Vec<_> = k.args().collect();
    if args.len() != bufs.len() || args.iter().any(|a| a.kind != ArgKind::Buffer) {
        return Err(format!(
            "{} argument records for {} buffers",
            args.len(),
            bufs.len()
        ));
    }
    for a in &args {
        let (dw, addr) = ((a.offset_bytes / 4) as usize, addrs[a.index as usize]);
        consts[dw] = addr as u32;
        consts[dw + 1] = (addr >> 32) as u32;
    }
    for r in k.consts() {
        let (dw, sh) = ((r.offset_bytes / 4) as usize, (r.offset_bytes % 4) * 8);
        let mask = if r.size == 4 { u32::MAX } else { 0xFFFF << sh };
        consts[dw] = (consts[dw] & !mask) | ((r.value << sh) & mask);
    }
    let reg = |v: u32| Some((v & 0xFF) as u16);
    let launch = Launch {
        consts: &consts,
        groups: c.groups,
        local: c.local,
        wgid_reg: reg(CL_CS_CNTL_0),
        lid_reg: reg(CL_CS_CNTL_0 >> 24),
        wgsize_reg: reg(CL_CS_CNTL_0 >> 8),
        wgoffset_reg: reg(CL_CS_CNTL_0 >> 16),
        textures: &[],
        uavs: &[],
        samplers: &[],
        ubos: &[],
        bindless: [0; 5],
        shared_bytes: 1024,
        items: c.items,
    };
    let mut mem = Mem(addrs.into_iter().zip(bufs.iter().cloned()).collect());
    let stats = ir3::run(&prog, &launch, &mut mem)?;
    for (b, (_, m)) in bufs.iter_mut().zip(mem.0) {
        *b = m;
    }
    Ok(stats)
}

/// Which model executes a case: the interpreter directly, or the KGSL model from a CP_RUN_OPENCL stream.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    Interpreter,
    Kgsl,
}

/// Run case `c` on the interpreter and compare every buffer byte for byte with the reference.
fn check(c: &Case) {
    check_via(c, Via::Interpreter)
}

/// Run case `c` on the reference and on `via`, and compare every buffer byte for byte.
fn check_via(c: &Case, via: Via) {
    let Some(clang) = skip::require(
        reference::clang(),
        "no clang-19 (set MODELRT_CLANG) for the OpenCL C reference",
    ) else {
        return;
    };
    let file = |ext: &str| data_dir().join(format!("{}.{}.{ext}", c.file, c.name));
    let src = std::fs::read_to_string(file("cl")).unwrap();
    let bin = std::fs::read(file("adreno.bin")).unwrap();
    let params = reference::params(&src).unwrap();
    let image = ClContainer::parse(&bin).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    let start = inputs(c, &params);

    let tag = if c.items.is_some() { "-partial" } else { "" };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("qcom-cl-{}{tag}", c.name));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = reference::build(&clang, &dir, &file("cl"), c.name, params.len()).unwrap();
    let mut want = start.clone();
    let (rg, rl) = match c.items {
        Some(items) => (items, [1, 1, 1]),
        None => (c.groups, c.local),
    };
    reference::execute(&exe, &dir, rg, rl, &mut want).unwrap();

    let mut got = start.clone();
    let t0 = std::time::Instant::now();
    let stats = match via {
        Via::Interpreter => interpret(c, &image, &mut got),
        Via::Kgsl => kgsl_run::run(&image, c.groups, c.local, &mut got).map(|s| RunStats {
            issues: s.issues,
            fiber_instrs: s.fiber_instrs,
        }),
    }
    .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    let secs = t0.elapsed().as_secs_f64();
    let items: u32 = c.groups.iter().zip(&c.local).map(|(g, l)| g * l).product();
    eprintln!(
        "{}: {} work items, {} instructions ({} issues, {} fiber-instructions), {:.2} s on the {}",
        c.name,
        items,
        image.image().len() / 8,
        stats.issues,
        stats.fiber_instrs,
        secs,
        if via == Via::Kgsl {
            "KGSL model (CP_RUN_OPENCL)"
        } else {
            "interpreter"
        }
    );
    assert_ne!(want[0], start[0], "{}: the reference wrote nothing", c.name);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let bad: Vec<usize> = (0..w.len()).filter(|&k| g[k] != w[k]).collect();
        assert!(
            bad.is_empty(),
            "{}: buffer {i}: {} of {} bytes differ from the OpenCL C reference; first at byte {}: {} (interpreter) vs {} (reference)",
            c.name,
            bad.len(),
            w.len(),
            bad[0],
            g[bad[0]],
            w[bad[0]]
        );
    }
    if let (Some(w), Via::Interpreter) = (c.warp, via) {
        check_warp_model(c, w, &dir, &params, &start, &got[0]);
    }
}

/// Compare a warp's output plane with the numpy model of openpilot's warp (`qcom_cl/warp_model.py`), run by
/// the exporter's Python on the same frame and transforms.
fn check_warp_model(
    c: &Case,
    (plane, w, h): (&str, u32, u32),
    dir: &Path,
    params: &[reference::Param],
    start: &[Vec<u8>],
    got: &[u8],
) {
    let Some(py) = skip::exporter_python() else {
        return;
    };
    let frame = params
        .iter()
        .rposition(|p| p.ty == "uchar")
        .expect("a frame buffer");
    let mut cmd = std::process::Command::new(py);
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/qcom_cl/warp_model.py"))
        .args([plane.to_string(), w.to_string(), h.to_string()]);
    let file = |name: String, bytes: &[u8]| {
        let f = dir.join(name);
        std::fs::write(&f, bytes).unwrap();
        f
    };
    cmd.arg(file("frame.bin".into(), &start[frame]));
    let out = dir.join("numpy.bin");
    cmd.arg(&out);
    for (i, _) in params.iter().enumerate().filter(|(_, p)| p.ty == "float") {
        cmd.arg(file(format!("matrix{i}.bin"), &start[i]));
    }
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "warp_model.py: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let want = std::fs::read(out).unwrap();
    assert_eq!(want.len(), got.len(), "{}: numpy plane size", c.name);
    let bad = (0..want.len()).filter(|&k| want[k] != got[k]).count();
    eprintln!(
        "{}: numpy warp model ({plane} plane, {w}×{h}): {bad} of {} pixels differ",
        c.name,
        want.len()
    );
    assert_eq!(
        bad, 0,
        "{}: pixels differing from the numpy warp model",
        c.name
    );
}

#[test]
fn road_y_e_256_128_4() {
    check(&CASES[0]);
}

#[test]
fn road_u_e_128_64_4() {
    check(&CASES[1]);
}

#[test]
fn road_v_e_128_64_4n1() {
    check(&CASES[2]);
}

#[test]
fn road_stack_e_10_32768_3() {
    check(&CASES[3]);
}

/// openpilot 0.11.1's launch of the same kernel (the same container): global [128, 2.5, 1] with local [256, 4, 1],
/// i.e. 3 groups of 4 in dimension 1 of which only 10 items exist; the items past them must not run (they would
/// write past the output's 10 rows).
#[test]
fn road_stack_e_10_32768_3_partial_groups() {
    check(&Case {
        file: ROAD,
        name: "E_10_32768_3",
        groups: [128, 3, 1],
        local: [256, 4, 1],
        transforms: &[],
        warp: None,
        items: Some([32768, 10, 1]),
    });
}

#[test]
fn road_merge_e_131072_3() {
    check(&CASES[4]);
}

#[test]
fn driver_y_e_960_480_3() {
    check(&CASES[5]);
}

/// The road Y warp through the KGSL model: CP_RUN_OPENCL in CL mode, the constant file from the argument region.
#[test]
fn kgsl_run_opencl_road_y_e_256_128_4() {
    check_via(&CASES[0], Via::Kgsl);
}

/// The road U warp (its 32×32 → 64-bit multiply) through the KGSL model.
#[test]
fn kgsl_run_opencl_road_u_e_128_64_4() {
    check_via(&CASES[1], Via::Kgsl);
}

/// The merge kernel (two work-group ranges, branches) through the KGSL model.
#[test]
fn kgsl_run_opencl_road_merge_e_131072_3() {
    check_via(&CASES[4], Via::Kgsl);
}

/// A CP_RUN_OPENCL dispatch programmed in Mesa's mode (SP_MODE_CNTL ISAMMODE_GL with constant demotion) is
/// refused with the register named, and nothing is written.
#[test]
fn kgsl_run_opencl_refuses_mesa_mode_registers() {
    let c = &CASES[4];
    let file = |ext: &str| data_dir().join(format!("{}.{}.{ext}", c.file, c.name));
    let bin = std::fs::read(file("adreno.bin")).unwrap();
    let k = ClContainer::parse(&bin).unwrap();
    let src = std::fs::read_to_string(file("cl")).unwrap();
    let start = inputs(c, &reference::params(&src).unwrap());
    let mut bufs = start.clone();
    let e = kgsl_run::run_with(&k, c.groups, c.local, &mut bufs, 0x5).unwrap_err();
    assert!(e.contains("SP_MODE_CNTL = 0x5, expected 0x2"), "{e}");
    assert_eq!(bufs, start);
}
