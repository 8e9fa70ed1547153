//! A multi-device bundle through the C API: `mrt_model_load` with a comma-separated device string
//! (`"cpu,cpu"`, one device per role) loads a container written with `write_multi` (two copy-only CPU
//! parts, `x` → `y` on role `a` and `y` → `z` on role `b`; no compiler), and every frame's `z` equals
//! its `x` — the plan's own meaning — and what the Rust runner (the CLI's path) computes on the same
//! container. A list with more devices than roles is MRT_ERR_LOAD naming the roles.
mod common;

use common::*;
use modelrt::error::{MRT_ERR_LOAD, MRT_OK};
use modelrt::ffi::*;
use modelrt_core::bundle::writer::{f32_bytes, write_bundle, BundleSpec};
use modelrt_core::bundle::writer_multi::{plan_by_name, write_multi};
use modelrt_core::bundle::{BufRef, BufferKind, Bundle, Producer, Step};
use modelrt_hal::target::{CpuArch, DType, Target};
use modelrt_targets::runner::{device, load as runner_load, LoadOptions};

const N: u64 = 6;

fn part(inp: &'static str, out: &'static str) -> Vec<u8> {
    let producer = Producer {
        tinygrad: "0.14.0",
        tinymesa: None,
        source_sha256: [1; 32],
        dev: "test",
        flags: "",
    };
    let target = Target::Cpu {
        arch: CpuArch::X86_64,
        baseline: "x86-64-v3",
        features: 0,
    };
    let mut s = BundleSpec::new(target, producer);
    let i = s.buffer("in", N * 4, DType::F32, BufferKind::Input, None);
    let o = s.buffer("out", N * 4, DType::F32, BufferKind::Output, None);
    s.input(inp, i, DType::F32, &[N]);
    s.output(out, o, DType::F32, &[N]);
    s.run.push(Step::Copy {
        dst: BufRef {
            buffer: o,
            offset: 0,
        },
        src: BufRef {
            buffer: i,
            offset: 0,
        },
        size: N * 4,
    });
    write_bundle(&s).unwrap()
}

/// The container, written to a file under `target/` (the C API loads paths).
fn container_file(name: &str) -> (std::path::PathBuf, Vec<u8>) {
    let (a, b) = (part("x", "y"), part("y", "z"));
    let producer = Bundle::parse(&a).unwrap().body().producer;
    let spec = plan_by_name(producer, &[("a", &a[..]), ("b", &b[..])], &["z"]).unwrap();
    let bytes = write_multi(&spec).unwrap();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("capi-multi-{name}.mrt"));
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

#[test]
fn a_device_list_loads_a_multi_device_bundle_and_runs_it_like_the_runner() {
    let (path, bytes) = container_file("run");
    let (rc, m) = load(path.to_str().unwrap(), Some("cpu,cpu"));
    assert_eq!(rc, MRT_OK, "{}", last_error());
    // SAFETY: live handle.
    let (ni, no) = unsafe { (mrt_model_input_count(m), mrt_model_output_count(m)) };
    assert_eq!((ni, no), (1, 1));
    let cpu = device("cpu").unwrap();
    let mut rust = runner_load(
        Bundle::parse(&bytes).unwrap(),
        LoadOptions {
            device: cpu,
            roles: vec![cpu, cpu],
            ..LoadOptions::default()
        },
    )
    .unwrap();
    for frame in 0..3 {
        let x: Vec<f32> = (0..N).map(|i| (frame * 10 + i) as f32 - 2.5).collect();
        let ins = vec![f32_bytes(&x)];
        let mut outs = vec![vec![0u8; (N * 4) as usize]];
        // SAFETY: `m` is a live handle; the buffers outlive the call.
        let rc = unsafe { Io::new(&ins, &mut outs).run(m) };
        assert_eq!(rc, MRT_OK, "{}", last_error());
        assert_eq!(outs[0], ins[0], "frame {frame}: z is x, through y");
        let mut z = vec![0u8; (N * 4) as usize];
        rust.run(&[&ins[0]], &mut [&mut z]).unwrap();
        assert_eq!(outs[0], z, "frame {frame}: the C API and the runner agree");
    }
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };
}

#[test]
fn more_devices_than_roles_is_refused_naming_the_roles() {
    let (path, _) = container_file("count");
    let (rc, m) = load(path.to_str().unwrap(), Some("cpu,cpu,cpu"));
    assert_eq!(rc, MRT_ERR_LOAD, "{}", last_error());
    assert!(m.is_null());
    let e = last_error();
    assert!(
        e.contains("3 devices given but this bundle has 2 device roles (a, b)"),
        "{e}"
    );
}
