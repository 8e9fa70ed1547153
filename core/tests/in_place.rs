//! `Bundle::in_place_weight`: which weights a backend may read where they lie in the bundle bytes.
//! The fixture's weight `onnx:w` (buffer 1) qualifies; each rule of `bundle::in_place` is then
//! broken once on an otherwise identical bundle and must be the reason given.
mod common;

use common::Fixture;
use modelrt_core::bundle::writer::{seal, write_bundle, TableBuilder};
use modelrt_core::bundle::{Body, BufRef, BufferDesc, BufferKind, Bundle, NotInPlace, Step};

const W: u32 = 1;

/// The verdict for `buffer`, asserted to be the same from the single query and the table walk.
fn check(bytes: &[u8], buffer: u32) -> Result<Vec<u8>, NotInPlace> {
    let b = Bundle::parse(bytes).unwrap();
    let one = b.in_place_weight(buffer).map(<[u8]>::to_vec);
    let mut all = None;
    b.in_place_weights(|i, _, v| {
        if i == buffer {
            all = Some(v.map(<[u8]>::to_vec));
        }
    });
    // The walk visits weights only.
    assert_eq!(all.unwrap_or(Err(NotInPlace::NotWeight)), one);
    one
}

#[test]
fn a_weight_only_read_is_in_place_with_its_own_bytes() {
    let f = Fixture::new();
    let bytes = write_bundle(&f.spec()).unwrap();
    // The bytes handed back are the weight's initial data, located in the bundle bytes.
    assert_eq!(check(&bytes, W), Ok(f.weights.clone()));
    let b = Bundle::parse(&bytes).unwrap();
    let got = b.in_place_weight(W).unwrap().as_ptr() as usize;
    let (lo, hi) = (
        bytes.as_ptr() as usize,
        bytes.as_ptr() as usize + bytes.len(),
    );
    assert!(lo <= got && got < hi);
    // Every other buffer (input, scratch, output) is not a weight.
    for i in [0, 2, 3, 4, 5] {
        assert_eq!(check(&bytes, i), Err(NotInPlace::NotWeight), "buffer {i}");
    }
    assert_eq!(check(&bytes, 99), Err(NotInPlace::NotWeight));
}

#[test]
fn state_is_never_in_place() {
    let f = Fixture::new();
    let mut sp = f.spec();
    sp.buffers[W as usize].kind = BufferKind::State;
    let bytes = write_bundle(&sp).unwrap();
    assert_eq!(check(&bytes, W), Err(NotInPlace::NotWeight));
}

#[test]
fn a_short_initial_prefix_is_not_in_place() {
    let f = Fixture::new();
    let mut sp = f.spec();
    let head = f.weights[..8].to_vec();
    sp.buffers[W as usize].init = Some(&head);
    let bytes = write_bundle(&sp).unwrap();
    assert_eq!(check(&bytes, W), Err(NotInPlace::PartialInit));
}

#[test]
fn a_weight_a_copy_writes_is_not_in_place() {
    let f = Fixture::new();
    for phase in ["init", "run"] {
        let mut sp = f.spec();
        let copy = Step::Copy {
            dst: BufRef {
                buffer: W,
                offset: 4,
            },
            src: BufRef {
                buffer: 0,
                offset: 0,
            },
            size: 4,
        };
        match phase {
            "init" => sp.init.push(copy),
            _ => sp.run.push(copy),
        }
        let bytes = write_bundle(&sp).unwrap();
        assert_eq!(check(&bytes, W), Err(NotInPlace::CopiedInto), "{phase}");
    }
}

#[test]
fn a_weight_sharing_arena_bytes_is_not_in_place() {
    let f = Fixture::new();
    let bytes = write_bundle(&f.spec()).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    // Move scratch buffer 4 (written by kernels every run) so its last byte is the weight's first.
    let mut descs: Vec<BufferDesc<'_>> = b.body().buffers.iter().map(Result::unwrap).collect();
    descs[4].arena_offset = descs[W as usize].arena_offset + 1 - descs[4].size;
    let table = TableBuilder::of(&descs).unwrap();
    let body = Body {
        buffers: table.view(),
        ..b.body().clone()
    };
    let moved = seal(&body, b.weights()).unwrap();
    assert_eq!(check(&moved, W), Err(NotInPlace::SharesArena));
}

#[test]
fn overlap_is_found_in_an_arena_ordered_table_too() {
    // Grow the input (buffer 0, before the weight in the table and the arena) over the weight's
    // first byte, keeping the table in arena order: the linear walk must see it.
    let f = Fixture::new();
    let bytes = write_bundle(&f.spec()).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let mut descs: Vec<BufferDesc<'_>> = b.body().buffers.iter().map(Result::unwrap).collect();
    descs[0].size = descs[W as usize].arena_offset - descs[0].arena_offset + 1;
    assert!(descs
        .windows(2)
        .all(|p| p[0].arena_offset <= p[1].arena_offset));
    let table = TableBuilder::of(&descs).unwrap();
    let body = Body {
        buffers: table.view(),
        ..b.body().clone()
    };
    let grown = seal(&body, b.weights()).unwrap();
    assert_eq!(check(&grown, W), Err(NotInPlace::SharesArena));
}
