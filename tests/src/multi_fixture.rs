//! A multi-device container built without a compiler (as `tests/tests/cpu/multi_cpu.rs` describes it): two
//! copy-only CPU parts written by hand, `x` → `y` on role `a` and `y` → `z` on role `b`, planned with
//! `write_multi`. Every frame's `z` is its `x`, carried through the planned host buffer `cross:a.y`.
use modelrt_core::bundle::writer::{write_bundle, BundleSpec};
use modelrt_core::bundle::writer_multi::{plan_by_name, write_multi};
use modelrt_core::bundle::{BufRef, BufferKind, OutputSlice, Producer, Step};
use modelrt_core::Bundle;
use modelrt_hal::target::{CpuArch, DType, Target};

/// Elements of every tensor (float32).
pub const N: u64 = 6;

/// One role's part: input `inp` copied to output `out`.
fn part(inp: &'static str, out: &'static str) -> Vec<u8> {
    part_with(inp, out, &[], "")
}

/// A copy-only part whose output carries named slices (format 2.4) and a checkpoint.
fn part_with(
    inp: &'static str,
    out: &'static str,
    slices: &[(&'static str, u64, u64)],
    checkpoint: &'static str,
) -> Vec<u8> {
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
    s.output_slices = slices
        .iter()
        .map(|&(name, start, stop)| OutputSlice {
            output: 0,
            name,
            start,
            stop,
        })
        .collect();
    s.checkpoint = checkpoint;
    write_bundle(&s).expect("a copy-only part")
}

/// A single-device copy bundle `x` → `y` (N floats) whose output `y` is described by the slices [`SLICES`] and the
/// checkpoint [`CHECKPOINT`] (what `convert --metadata` writes; the Python suite checks `Model.output_slices`).
pub fn sliced_copy() -> Vec<u8> {
    part_with("x", "y", SLICES, CHECKPOINT)
}

/// The slices of [`sliced_copy`]'s output: (name, start, stop) along its last dimension.
pub const SLICES: &[(&str, u64, u64)] = &[("head", 0, 2), ("tail", 2, 6)];
/// The checkpoint [`sliced_copy`] names.
pub const CHECKPOINT: &str = "test-checkpoint/1";

/// The container: roles `a` and `b`, one input `x`, one output `z`.
pub fn copy_chain() -> Vec<u8> {
    let (a, b) = (part("x", "y"), part("y", "z"));
    let producer = Bundle::parse(&a).expect("part a parses").body().producer;
    let spec = plan_by_name(producer, &[("a", &a[..]), ("b", &b[..])], &["z"]).expect("a plan");
    write_multi(&spec).expect("a container")
}
