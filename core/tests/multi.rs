//! Multi-device bundles (format 2.3): the planner's transfer plan for a two-role chain, the header
//! that keeps older readers out, the parts read back as the single-target bundles they were, and the
//! plan rules — of all 720 orders of a two-role plan exactly the one causal order is accepted, and
//! nested, mis-sized or mis-targeted parts are refused. Arbitrary byte changes never panic.
use modelrt_core::bundle::writer::{reseal, write_bundle, BundleSpec};
use modelrt_core::bundle::writer_multi::{plan_by_name, write_multi, MultiSpec};
use modelrt_core::bundle::{
    BufRef, BufferKind, Bundle, BundleError, Producer, Step, Xfer, FLAG_MULTI, MULTI_MINOR,
    SCHEMA_2_3_HASH,
};
use modelrt_hal::target::{CpuArch, DType, Target};
use proptest::prelude::*;

const PRODUCER: Producer<'static> = Producer {
    tinygrad: "0.14.0",
    tinymesa: None,
    source_sha256: [7; 32],
    dev: "test",
    flags: "",
};

const CPU: Target<'static> = Target::Cpu {
    arch: CpuArch::X86_64,
    baseline: "x86-64-v3",
    features: 0,
};
const AMD: Target<'static> = Target::Amd { gfx: 0x1100 };

/// A part that copies its f32[`n`] input `inp` to its output `out` (no kernels: a copy step).
fn copy_part(target: Target<'static>, inp: &'static str, out: &'static str, n: u64) -> Vec<u8> {
    let mut s = BundleSpec::new(target, PRODUCER);
    let i = s.buffer("in", n * 4, DType::F32, BufferKind::Input, None);
    let o = s.buffer("out", n * 4, DType::F32, BufferKind::Output, None);
    s.input(inp, i, DType::F32, &[n]);
    s.output(out, o, DType::F32, &[n]);
    s.run.push(Step::Copy {
        dst: BufRef {
            buffer: o,
            offset: 0,
        },
        src: BufRef {
            buffer: i,
            offset: 0,
        },
        size: n * 4,
    });
    write_bundle(&s).unwrap()
}

fn parts() -> (Vec<u8>, Vec<u8>) {
    (copy_part(CPU, "x", "y", 4), copy_part(AMD, "y", "z", 4))
}

fn spec<'a>(a: &'a [u8], b: &'a [u8]) -> MultiSpec<'a> {
    plan_by_name(PRODUCER, &[("warp", a), ("model", b)], &["z"]).unwrap()
}

fn invalid(r: Result<Vec<u8>, modelrt_core::bundle::writer::WriteError>) -> &'static str {
    match r {
        Err(modelrt_core::bundle::writer::WriteError::Invalid(BundleError::Invalid {
            what,
            ..
        })) => what,
        other => panic!("expected an invalid-bundle refusal, got {other:?}"),
    }
}

#[test]
fn the_planner_plans_one_crossing_through_a_host_buffer() {
    let (a, b) = parts();
    let s = spec(&a, &b);
    // Written out by hand: x is the bundle input (host 0), y crosses from warp to model through host
    // buffer 1, z is the bundle output (host 2).
    assert_eq!(
        s.plan,
        vec![
            Xfer::Load {
                role: 0,
                input: 0,
                host: 0
            },
            Xfer::Run { role: 0 },
            Xfer::Store {
                role: 0,
                output: 0,
                host: 1
            },
            Xfer::Load {
                role: 1,
                input: 0,
                host: 1
            },
            Xfer::Run { role: 1 },
            Xfer::Store {
                role: 1,
                output: 0,
                host: 2
            },
        ]
    );
    let labels: Vec<&str> = s.hosts.iter().map(|h| h.label.as_str()).collect();
    assert_eq!(labels, ["input:x", "cross:warp.y", "output:z"]);
    let kinds: Vec<BufferKind> = s.hosts.iter().map(|h| h.kind).collect();
    assert_eq!(
        kinds,
        [BufferKind::Input, BufferKind::Scratch, BufferKind::Output]
    );
}

#[test]
fn a_container_reads_back_with_its_parts_unchanged() {
    let (a, b) = parts();
    let bytes = write_multi(&spec(&a, &b)).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), MULTI_MINOR);
    assert_eq!(
        u32::from_le_bytes(bytes[52..56].try_into().unwrap()),
        FLAG_MULTI
    );
    assert_eq!(
        u64::from_le_bytes(bytes[16..24].try_into().unwrap()),
        SCHEMA_2_3_HASH
    );
    let m = Bundle::parse(&bytes).unwrap();
    let multi = m.multi().expect("a multi-device bundle");
    let names: Vec<&str> = multi.roles.iter().map(|r| r.unwrap().name).collect();
    assert_eq!(names, ["warp", "model"]);
    assert_eq!(m.body().target, CPU);
    let (role, part) = m.part(1).unwrap();
    assert_eq!(role.target, AMD);
    // The part is the very bundle that went in, byte for byte, and reads as one.
    assert_eq!(part.bytes(), &b[..]);
    assert!(part.multi().is_none());
    assert_eq!(m.part(0).unwrap().1.bytes(), &a[..]);
    assert!(m.part(2).is_err());
    let io: Vec<&str> = m
        .body()
        .inputs
        .iter()
        .chain(m.body().outputs.iter())
        .map(|t| t.unwrap().name)
        .collect();
    assert_eq!(io, ["x", "z"]);
    assert!(m.body().kernels.is_empty() && m.body().run.is_empty());
    // Single-target bundles are still written as 2.1 without flags.
    assert_eq!(u16::from_le_bytes([a[10], a[11]]), 1);
    assert_eq!(&a[52..56], &[0, 0, 0, 0]);
    assert!(Bundle::parse(&a).unwrap().multi().is_none());
}

#[test]
fn readers_before_2_3_refuse_the_flag() {
    let (a, b) = parts();
    let mut bytes = write_multi(&spec(&a, &b)).unwrap();
    // The same file stamped as 2.2 (what a 2.2 reader understands) is refused by its flag check.
    bytes[10..12].copy_from_slice(&2u16.to_le_bytes());
    bytes[16..24].copy_from_slice(&modelrt_core::bundle::SCHEMA_2_2_HASH.to_le_bytes());
    reseal(&mut bytes);
    assert_eq!(
        Bundle::parse(&bytes).unwrap_err(),
        BundleError::Layout("unknown header flags")
    );
    // An unknown flag bit is refused by a 2.3 reader too.
    let mut bytes = write_multi(&spec(&a, &b)).unwrap();
    bytes[52..56].copy_from_slice(&3u32.to_le_bytes());
    reseal(&mut bytes);
    assert_eq!(
        Bundle::parse(&bytes).unwrap_err(),
        BundleError::Layout("unknown header flags")
    );
}

#[test]
fn a_signed_container_stays_2_3_and_verifies() {
    use ed25519_compact::{KeyPair, Seed};
    let kp = KeyPair::from_seed(Seed::new([3; 32]));
    let (a, b) = parts();
    let plain = write_multi(&spec(&a, &b)).unwrap();
    let signed =
        modelrt_core::bundle::writer::sign_bundle(&plain, &kp.pk, |m| *kp.sk.sign(m, None))
            .unwrap();
    assert_eq!(u16::from_le_bytes([signed[10], signed[11]]), MULTI_MINOR);
    assert_eq!(modelrt_core::sign::verify(&signed, &[*kp.pk]), Ok(*kp.pk));
    let m = Bundle::parse(&signed).unwrap();
    assert!(m.signature().is_some());
    assert_eq!(m.part(1).unwrap().1.bytes(), &b[..]);
}

/// Every permutation of `v` (Heap's algorithm).
fn permutations<T: Clone>(v: &mut Vec<T>, k: usize, out: &mut Vec<Vec<T>>) {
    if k <= 1 {
        out.push(v.clone());
        return;
    }
    for i in 0..k {
        permutations(v, k - 1, out);
        let j = if k.is_multiple_of(2) { i } else { 0 };
        v.swap(j, k - 1);
    }
}

#[test]
fn exactly_the_causal_order_of_a_two_role_plan_is_accepted() {
    let (a, b) = parts();
    let base = spec(&a, &b);
    let mut plan = base.plan.clone();
    let mut all = Vec::new();
    permutations(&mut plan, 6, &mut all);
    assert_eq!(all.len(), 720);
    let accepted: Vec<&Vec<Xfer>> = all
        .iter()
        .filter(|p| {
            let mut s = base.clone();
            s.plan = (*p).clone();
            write_multi(&s).is_ok()
        })
        .collect();
    // Load x → run warp → store y → load y → run model → store z is the only causal order.
    assert_eq!(accepted, vec![&base.plan]);
}

#[test]
fn incomplete_or_inconsistent_plans_are_refused() {
    let (a, b) = parts();
    let base = spec(&a, &b);
    let with = |f: &dyn Fn(&mut MultiSpec<'_>)| {
        let mut s = base.clone();
        f(&mut s);
        invalid(write_multi(&s))
    };
    assert_eq!(
        with(&|s| {
            s.plan.remove(5);
        }),
        "an output is never stored"
    );
    assert_eq!(
        with(&|s| {
            s.plan.truncate(3);
        }),
        "a role never runs"
    );
    assert_eq!(
        with(&|s| s.plan.insert(2, Xfer::Run { role: 0 })),
        "role runs twice or before all its inputs are loaded"
    );
    assert_eq!(
        with(&|s| s.plan.push(Xfer::Run { role: 2 })),
        "plan names a missing role"
    );
    assert_eq!(
        with(&|s| s.plan[3] = Xfer::Load {
            role: 1,
            input: 0,
            host: 2
        }),
        "plan loads a host buffer nothing filled"
    );
    assert_eq!(
        with(&|s| s.plan[2] = Xfer::Store {
            role: 0,
            output: 0,
            host: 0
        }),
        "plan stores into an input buffer"
    );
    assert_eq!(
        with(&|s| s.hosts[1].tensor.shape[0] = 5),
        "plan moves a tensor into a host buffer of another size or type"
    );
    assert_eq!(with(&|s| s.roles[1].0 = "warp"), "duplicate role name");
}

#[test]
fn parts_must_be_single_target_bundles() {
    let (a, b) = parts();
    let inner = write_multi(&spec(&a, &b)).unwrap();
    // A container as a part: refused by the planner (it reads parts as single-target bundles) and
    // by the reader (the planner's result with the part swapped in).
    assert!(plan_by_name(PRODUCER, &[("warp", &inner[..])], &["z"]).is_err());
    let mut s = plan_by_name(PRODUCER, &[("warp", &a[..])], &["y"]).unwrap();
    s.roles[0].1 = &inner;
    assert_eq!(
        invalid(write_multi(&s)),
        "a part is itself a multi-device bundle"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Any single-byte change of a container, resealed so it reaches the body and part checks, is
    /// either refused or parses (never a panic).
    #[test]
    fn changed_containers_never_panic(at in 0usize..4096, v in any::<u8>()) {
        let (a, b) = parts();
        let mut bytes = write_multi(&spec(&a, &b)).unwrap();
        let at = at % bytes.len();
        bytes[at] = v;
        reseal(&mut bytes);
        if let Ok(m) = Bundle::parse(&bytes) {
            if let Some(multi) = m.multi() {
                for i in 0..multi.roles.len() {
                    prop_assert!(m.part(i).is_ok());
                }
            }
        }
    }
}
