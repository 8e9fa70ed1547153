//! The check that no buffer shares a state buffer's arena bytes scales to bundles with very many
//! state buffers (it once decoded the whole buffer table per state buffer: quadratic) and still
//! catches every overlap, whether the buffer table is in arena order (as the writer lays it out) or
//! not (a hand-made bundle), and reports the same record as the pairwise rule it replaces.
use std::time::{Duration, Instant};

use modelrt_core::bundle::writer::{seal, write_bundle, BundleSpec, TableBuilder};
use modelrt_core::bundle::{Body, BufferDesc, BufferKind, Producer, TensorDesc};
use modelrt_core::{Bundle, BundleError};
use modelrt_hal::target::{CpuArch, DType, Target};
use proptest::prelude::*;

/// State buffers in the test bundle: a quadratic check needs ~10⁹ record decodes for these.
const STATES: usize = 30_000;
/// Generous for a linear or n·log n check on a loaded machine in a debug build; a quadratic one
/// takes minutes.
const BUDGET: Duration = Duration::from_secs(10);

/// One 4-byte output buffer (index 0) and `STATES` 4-byte state buffers after it.
fn many_states() -> Vec<u8> {
    let mut spec = BundleSpec::new(
        Target::Cpu {
            arch: CpuArch::X86_64,
            baseline: "x86-64-v3",
            features: 0,
        },
        Producer {
            tinygrad: "0.14.0",
            tinymesa: None,
            source_sha256: [1; 32],
            dev: "CPU",
            flags: "",
        },
    );
    let y = spec.buffer("output:y", 4, DType::F32, BufferKind::Output, None);
    for _ in 0..STATES {
        spec.buffer(
            "state:s",
            4,
            DType::F32,
            BufferKind::State,
            Some(&[0, 0, 128, 63]),
        );
    }
    spec.output("y", y, DType::F32, &[1]);
    write_bundle(&spec).unwrap()
}

/// Re-encode `bytes` with its buffer descriptors edited by `edit`, without the writer's checks.
fn rewrite(bytes: &[u8], edit: impl FnOnce(&mut [BufferDesc<'_>])) -> Vec<u8> {
    let b = Bundle::parse(bytes).unwrap();
    let mut descs: Vec<BufferDesc<'_>> = b.body().buffers.iter().map(Result::unwrap).collect();
    edit(&mut descs);
    let table = TableBuilder::of(&descs).unwrap();
    let body = Body {
        buffers: table.view(),
        ..b.body().clone()
    };
    seal(&body, b.weights()).unwrap()
}

/// Parse `bytes` within the time budget.
fn timed_parse(bytes: &[u8], what: &str) -> Result<(), BundleError> {
    let t = Instant::now();
    let r = Bundle::parse(bytes).map(|_| ());
    let took = t.elapsed();
    assert!(took < BUDGET, "{what}: validation took {took:?}");
    r
}

fn overlap_at(index: u32) -> Result<(), BundleError> {
    Err(BundleError::Invalid {
        what: "state buffer overlaps another buffer",
        index,
    })
}

#[test]
fn many_state_buffers_validate_fast() {
    let bytes = many_states();
    assert_eq!(timed_parse(&bytes, "in arena order"), Ok(()));
    // Two state buffers trade places: the table is no longer in arena order, still disjoint.
    let swapped = rewrite(&bytes, |d| {
        let (a, b) = (d[10].arena_offset, d[STATES - 10].arena_offset);
        d[10].arena_offset = b;
        d[STATES - 10].arena_offset = a;
    });
    assert_eq!(timed_parse(&swapped, "out of arena order"), Ok(()));
}

#[test]
fn overlap_among_many_state_buffers_is_caught() {
    let bytes = many_states();
    let mid = STATES / 2;
    // In arena order: state `mid` grows into `mid + 1`; the lower index is reported.
    let grown = rewrite(&bytes, |d| {
        d[mid].size = d[mid + 1].arena_offset - d[mid].arena_offset + 1;
    });
    assert_eq!(timed_parse(&grown, "grown"), overlap_at(mid as u32));
    // Out of arena order: a late state buffer moved onto an early one.
    let moved = rewrite(&bytes, |d| {
        d[STATES - 3].arena_offset = d[7].arena_offset + 2
    });
    assert_eq!(timed_parse(&moved, "moved"), overlap_at(7));
    // The output buffer (not state) moved into the last state buffer: that state is reported.
    let onto = rewrite(&bytes, |d| d[0].arena_offset = d[STATES].arena_offset);
    assert_eq!(
        timed_parse(&onto, "output onto state"),
        overlap_at(STATES as u32)
    );
    // Grown up to (not into) the next buffer: ranges that touch share no byte.
    let touching = rewrite(&bytes, |d| {
        d[mid].size = d[mid + 1].arena_offset - d[mid].arena_offset;
    });
    assert_eq!(timed_parse(&touching, "touching"), Ok(()));
}

/// `(arena_offset, size, is_state)` per buffer, in table order, in a 64-byte arena.
fn spans() -> impl Strategy<Value = Vec<(u64, u64, bool)>> {
    prop::collection::vec((0..56u64, 1..9u64, any::<bool>()), 1..10)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// The sweep gives the pairwise rule's verdict, down to the reported record: the lowest-index
    /// state buffer that shares a byte with any other buffer, for any table order.
    #[test]
    fn sweep_agrees_with_the_pairwise_rule(spans in spans()) {
        let buffers: Vec<BufferDesc<'_>> = spans
            .iter()
            .map(|&(arena_offset, size, state)| BufferDesc {
                label: "b",
                size,
                dtype: DType::U8,
                kind: if state { BufferKind::State } else { BufferKind::Scratch },
                arena_offset,
                init: state.then_some((0, 1)),
            })
            .collect();
        let outputs = [TensorDesc {
            name: "y",
            buffer: 0,
            offset: 0,
            dtype: DType::U8,
            shape: [1].into_iter().collect(),
        }];
        let small = many_states_small();
        let template = Bundle::parse(&small).unwrap();
        let table = TableBuilder::of(&buffers).unwrap();
        let outs = TableBuilder::of(&outputs).unwrap();
        let body = Body {
            arena_size: 64,
            buffers: table.view(),
            outputs: outs.view(),
            ..template.body().clone()
        };
        let bytes = seal(&body, &[0; 64]).unwrap();
        let overlaps = |i: usize| {
            let (a, n, _) = spans[i];
            spans.iter().enumerate().any(|(j, &(b, m, _))| j != i && a < b + m && b < a + n)
        };
        let want = (0..spans.len()).find(|&i| spans[i].2 && overlaps(i));
        match (Bundle::parse(&bytes), want) {
            (Ok(_), None) => {}
            (Err(BundleError::Invalid { what: "state buffer overlaps another buffer", index }), Some(i)) => {
                prop_assert_eq!(index as usize, i)
            }
            (got, want) => prop_assert!(false, "got {:?}, want overlap at {:?}", got.map(|_| ()), want),
        }
    }
}

/// A small valid bundle whose other tables the property test reuses.
fn many_states_small() -> Vec<u8> {
    let mut spec = BundleSpec::new(
        Target::Cpu {
            arch: CpuArch::X86_64,
            baseline: "x86-64-v3",
            features: 0,
        },
        Producer {
            tinygrad: "0.14.0",
            tinymesa: None,
            source_sha256: [1; 32],
            dev: "CPU",
            flags: "",
        },
    );
    let y = spec.buffer("output:y", 4, DType::U8, BufferKind::Output, None);
    spec.output("y", y, DType::U8, &[1]);
    write_bundle(&spec).unwrap()
}
