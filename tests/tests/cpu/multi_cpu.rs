//! A multi-device bundle loaded through the runner the CLI, the C API and the Python API share
//! (`runner::load` → `Registry::load` → `MultiModel`), with no compiler: two copy-only parts written by hand
//! (`x` → `y` on role `a`, `y` → `z` on role `b`, `modelrt_tests::multi_fixture`) on `cpu,cpu`. Every frame's output is its input (the bytes crossed
//! through the planned host buffer), the frame report names the one crossing and its bytes, and a trust store that
//! does not know the (unsigned) container refuses it before any part is opened.
use modelrt_core::bundle::writer::f32_bytes;
use modelrt_core::Bundle;
use modelrt_targets::runner::{device, is_refusal, load, LoadOptions, TrustStore};
use modelrt_tests::multi_fixture::{copy_chain as container, N};

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
