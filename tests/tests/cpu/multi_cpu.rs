//! A multi-device bundle loaded through the runner the CLI, the C API and the Python API share
//! (`runner::load` → `Registry::load` → `MultiModel`), with no compiler: two copy-only parts written by hand
//! (`x` → `y` on role `a`, `y` → `z` on role `b`) on `cpu,cpu`. Every frame's output is its input (the bytes crossed
//! through the planned host buffer), the frame report names the one crossing and its bytes, and a trust store that
//! does not know the (unsigned) container refuses it before any part is opened.
use modelrt_core::bundle::writer::{f32_bytes, write_bundle, BundleSpec};
use modelrt_core::bundle::writer_multi::{plan_by_name, write_multi};
use modelrt_core::bundle::{BufRef, BufferKind, Producer, Step};
use modelrt_core::Bundle;
use modelrt_hal::target::{CpuArch, DType, Target};
use modelrt_targets::runner::{device, is_refusal, load, LoadOptions, TrustStore};

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

fn container() -> Vec<u8> {
    let (a, b) = (part("x", "y"), part("y", "z"));
    let producer = Bundle::parse(&a).unwrap().body().producer;
    let spec = plan_by_name(producer, &[("a", &a[..]), ("b", &b[..])], &["z"]).unwrap();
    write_multi(&spec).unwrap()
}

fn cpu_cpu() -> LoadOptions {
    let cpu = device("cpu").unwrap();
    LoadOptions {
        device: cpu,
        roles: vec![cpu, cpu],
        ..LoadOptions::default()
    }
}

#[test]
fn frames_cross_through_the_planned_host_buffer() {
    let bytes = container();
    let b = Bundle::parse(&bytes).unwrap();
    let mut m = load(b, cpu_cpu()).expect("loads on cpu,cpu");
    assert!(m.device_name().starts_with("a: "), "{}", m.device_name());
    for frame in 0..3 {
        let x: Vec<f32> = (0..N).map(|i| (frame * 10 + i) as f32 - 2.5).collect();
        let xin = f32_bytes(&x);
        let mut z = vec![0u8; (N * 4) as usize];
        m.run(&[&xin], &mut [&mut z]).unwrap();
        assert_eq!(z, xin, "frame {frame}: z is x, through y");
        let r = m.frame_report().expect("a multi-device report");
        let roles: Vec<&str> = r.roles.iter().map(|x| x.role.as_str()).collect();
        assert_eq!(roles, ["a", "b"]);
        assert_eq!(r.copies.len(), 1);
        let c = &r.copies[0];
        assert_eq!(
            (c.label.as_str(), c.from.as_str(), c.to.as_str(), c.bytes),
            ("cross:a.y", "a", "b", N * 4)
        );
    }
    // `auto` for every role picks each part's device (the CPU here).
    let b = Bundle::parse(&bytes).unwrap();
    assert!(load(b, LoadOptions::default()).is_ok());
}

#[test]
fn a_trust_store_refuses_an_unsigned_container_before_any_part_opens() {
    let bytes = container();
    let b = Bundle::parse(&bytes).unwrap();
    let opts = LoadOptions {
        trusted_keys: Some(TrustStore::new(vec![[9; 32]])),
        ..cpu_cpu()
    };
    let e = load(b, opts).err().expect("refused");
    assert!(is_refusal(&e), "{e:#}");
}
