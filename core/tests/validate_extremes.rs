//! Bundle fields at the edges of their types (`u64::MAX` sizes and offsets, `u32::MAX` image
//! dimensions, shapes whose product overflows) must give a clean `Err(BundleError)` from
//! `Bundle::parse` — never a panic (debug overflow checks) nor a wrapped value that passes a check
//! (release). Bodies are encoded directly, without the writer's own checks, and every verdict is
//! compared with the same rule computed in `u128` arithmetic, which cannot overflow for these
//! operands. `cargo test` runs this in debug; `core/fuzz/run.sh` runs it again built in release.
use modelrt_core::bundle::writer::{seal, TableBuilder};
use modelrt_core::bundle::{
    ArgRef, Body, BufRef, BufferDesc, BufferKind, KernelDesc, Producer, Step, Table, TensorDesc,
    HEADER_LEN, WEIGHTS_ALIGN,
};
use modelrt_core::{Bundle, BundleError};
use modelrt_hal::target::{
    CpuArch, CpuKernelMeta, DType, KernelMeta, ParamDesc, ParamKind, Target,
};
use proptest::prelude::*;

/// The raw parts of a body; `encode` turns them into bundle bytes with a valid header and CRC.
struct Parts<'a> {
    arena_size: u64,
    buffers: Vec<BufferDesc<'a>>,
    kernels: Vec<KernelDesc<'a>>,
    run: Vec<Step>,
    outputs: Vec<TensorDesc<'a>>,
    weights: Vec<u8>,
}

fn encode(p: &Parts<'_>) -> Vec<u8> {
    let buffers = TableBuilder::of(&p.buffers).unwrap();
    let kernels = TableBuilder::of(&p.kernels).unwrap();
    let run = TableBuilder::of(&p.run).unwrap();
    let none = TableBuilder::new();
    let outputs = TableBuilder::of(&p.outputs).unwrap();
    encode_body(
        &Body {
            target: target(),
            producer: producer(),
            arena_size: p.arena_size,
            buffers: buffers.view(),
            kernels: kernels.view(),
            init: none.view(),
            run: run.view(),
            inputs: none.view(),
            outputs: outputs.view(),
            reference: None,
        },
        &p.weights,
    )
}

fn encode_body(body: &Body<'_>, weights: &[u8]) -> Vec<u8> {
    seal(body, weights).expect("encodes")
}

fn target() -> Target<'static> {
    Target::Cpu {
        arch: CpuArch::X86_64,
        baseline: "x86-64-v3",
        features: 0,
    }
}

fn producer() -> Producer<'static> {
    Producer {
        tinygrad: "0.14.0",
        tinymesa: None,
        source_sha256: [0; 32],
        dev: "CPU",
        flags: "",
    }
}

fn buffer(size: u64, arena_offset: u64, kind: BufferKind) -> BufferDesc<'static> {
    BufferDesc {
        label: "b",
        size,
        dtype: DType::U8,
        kind,
        arena_offset,
        init: None,
    }
}

fn output(buffer: u32, offset: u64, dtype: DType, shape: &[u64]) -> TensorDesc<'static> {
    TensorDesc {
        name: "y",
        buffer,
        offset,
        dtype,
        shape: shape.iter().copied().collect(),
    }
}

/// A one-byte output on buffer 0, so bundles whose other parts are valid validate.
fn byte_output() -> Vec<TensorDesc<'static>> {
    vec![output(0, 0, DType::U8, &[1])]
}

fn kernel(params: &[ParamDesc]) -> KernelDesc<'static> {
    KernelDesc {
        name: "k",
        entry: "k",
        binary: b"\x7fELF",
        source: None,
        params: params.iter().copied().collect(),
        meta: KernelMeta::Cpu(CpuKernelMeta { threads: 1 }),
    }
}

/// Parse, and insist that a failure is a validation-level error (the header and body are well
/// formed here, so anything else would mean the encoding, not the value, was rejected).
fn verdict(bytes: &[u8]) -> Result<(), BundleError> {
    match Bundle::parse(bytes) {
        Ok(_) => Ok(()),
        Err(e @ (BundleError::Invalid { .. } | BundleError::Layout(_))) => Err(e),
        Err(e) => panic!("unexpected error kind: {e:?}"),
    }
}

/// `a + b <= limit` in u128.
fn fits(a: u64, b: u64, limit: u64) -> bool {
    u128::from(a) + u128::from(b) <= u128::from(limit)
}

fn extreme_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(4),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(u64::MAX - 3),
        Just(u64::MAX / 2),
        Just(u64::MAX / 2 + 1),
        Just(1 << 32),
        Just(u64::from(u32::MAX)),
        0..64u64,
        any::<u64>(),
    ]
}

fn extreme_u32() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(u32::MAX),
        Just(u32::MAX - 1),
        Just(1 << 16),
        Just(1 << 31),
        0..64u32,
        any::<u32>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Buffer placement: `arena_offset + size` may overflow.
    #[test]
    fn buffer_placement(arena in extreme_u64(), size in extreme_u64(), off in extreme_u64()) {
        let bytes = encode(&Parts {
            arena_size: arena,
            buffers: vec![buffer(size, off, BufferKind::Output)],
            kernels: vec![],
            run: vec![],
            outputs: byte_output(),
            weights: vec![],
        });
        let want = size >= 1 && fits(off, size, arena);
        prop_assert_eq!(verdict(&bytes).is_ok(), want);
    }

    /// Output shapes whose element count or byte length overflows `u64`, at extreme offsets.
    #[test]
    fn tensor_shape_and_offset(
        size in extreme_u64(),
        offset in extreme_u64(),
        shape in prop::collection::vec(extreme_u64(), 1..=8),
        wide in any::<bool>(),
    ) {
        let dtype = if wide { DType::F64 } else { DType::F16 };
        let bytes = encode(&Parts {
            arena_size: size,
            buffers: vec![buffer(size, 0, BufferKind::Output)],
            kernels: vec![],
            run: vec![],
            outputs: vec![output(0, offset, dtype, &shape)],
            weights: vec![],
        });
        let elem = if wide { 8u128 } else { 2 };
        let len = shape
            .iter()
            .try_fold(elem, |acc, &d| acc.checked_mul(u128::from(d)));
        let want = size >= 1
            && len.is_some_and(|n| n > 0 && u128::from(offset) + n <= u128::from(size));
        prop_assert_eq!(verdict(&bytes).is_ok(), want);
    }

    /// Image parameters: `height × width × 4 × element size` overflows `u64` for large dimensions.
    #[test]
    fn image_argument(
        h in extreme_u32(),
        w in extreme_u32(),
        half in any::<bool>(),
        buf in extreme_u64(),
        off in extreme_u64(),
        size in extreme_u64(),
    ) {
        let dtype = if half { DType::F16 } else { DType::F32 };
        let param = ParamDesc { kind: ParamKind::Image { height: h, width: w }, dtype };
        let bytes = encode(&Parts {
            arena_size: buf,
            buffers: vec![buffer(buf, 0, BufferKind::Output)],
            kernels: vec![kernel(&[param])],
            run: vec![Step::Launch {
                kernel: 0,
                args: [ArgRef::Buffer { buffer: 0, offset: off, size }].into_iter().collect(),
                global: [1, 1, 1],
                local: [1, 1, 1],
            }],
            outputs: byte_output(),
            weights: vec![],
        });
        let texel = if half { 2u128 } else { 4 };
        let need = u128::from(h) * u128::from(w) * 4 * texel;
        let want = buf >= 1 && size >= 1 && fits(off, size, buf) && need <= u128::from(size);
        prop_assert_eq!(verdict(&bytes).is_ok(), want);
    }

    /// Copies between two buffers and inside one, with offsets and sizes near overflow.
    #[test]
    fn copy_step(
        a in extreme_u64(),
        b in extreme_u64(),
        dst_off in extreme_u64(),
        src_off in extreme_u64(),
        n in extreme_u64(),
        same in any::<bool>(),
    ) {
        prop_assume!(a >= 1 && b >= 1 && a.checked_add(b).is_some());
        let dst = if same { 0 } else { 1 };
        let bytes = encode(&Parts {
            arena_size: a + b,
            buffers: vec![buffer(a, 0, BufferKind::Output), buffer(b, a, BufferKind::Scratch)],
            kernels: vec![],
            run: vec![Step::Copy {
                dst: BufRef { buffer: dst, offset: dst_off },
                src: BufRef { buffer: 0, offset: src_off },
                size: n,
            }],
            outputs: byte_output(),
            weights: vec![],
        });
        let dst_size = if same { a } else { b };
        let inside = n >= 1 && fits(dst_off, n, dst_size) && fits(src_off, n, a);
        let (da, sa, n128) = (
            u128::from(if same { 0 } else { a }) + u128::from(dst_off),
            u128::from(src_off),
            u128::from(n),
        );
        let overlap = da < sa + n128 && sa < da + n128;
        prop_assert_eq!(verdict(&bytes).is_ok(), inside && !overlap);
    }

    /// A weight buffer's initial-data range inside a 64-byte weights blob.
    #[test]
    fn initial_data_range(size in extreme_u64(), start in extreme_u64(), len in extreme_u64()) {
        let mut w = buffer(size, 0, BufferKind::Weight);
        w.init = Some((start, len));
        let bytes = encode(&Parts {
            arena_size: size,
            buffers: vec![w],
            kernels: vec![],
            run: vec![],
            outputs: byte_output(),
            weights: vec![7; 64],
        });
        let want = size >= 1 && fits(start, len, 64) && len <= size;
        prop_assert_eq!(verdict(&bytes).is_ok(), want);
    }

    /// Header region fields near overflow: the weights blob's offset and length.
    #[test]
    fn weights_region(offset in extreme_u64(), len in extreme_u64()) {
        let mut bytes = encode(&Parts {
            arena_size: 1,
            buffers: vec![buffer(1, 0, BufferKind::Output)],
            kernels: vec![],
            run: vec![],
            outputs: byte_output(),
            weights: vec![],
        });
        bytes[32..40].copy_from_slice(&offset.to_le_bytes());
        bytes[40..48].copy_from_slice(&len.to_le_bytes());
        modelrt_core::bundle::writer::reseal(&mut bytes);
        let total = bytes.len() as u64;
        // The layout rules of the header: 64-aligned, after the header, inside the file.
        let layout_ok = offset.is_multiple_of(WEIGHTS_ALIGN as u64)
            && offset >= HEADER_LEN as u64
            && fits(offset, len, total);
        match Bundle::parse(&bytes) {
            Ok(_) => prop_assert!(layout_ok),
            Err(BundleError::Layout(_)) => prop_assert!(!layout_ok),
            // A layout that fits but cuts the body short or lends it weights it does not expect.
            Err(BundleError::BodyDecode | BundleError::Invalid { .. } | BundleError::Table { .. }) => {
                prop_assert!(layout_ok)
            }
            Err(e) => prop_assert!(false, "unexpected error {:?}", e),
        }
    }
}

/// A table that claims `u32::MAX` records with an empty index is refused, not multiplied out.
#[test]
fn table_count_near_overflow() {
    let table = Table::<BufferDesc<'_>>::from_parts(u32::MAX, &[], &[]);
    let none = TableBuilder::new();
    let bytes = encode_body(
        &Body {
            target: target(),
            producer: producer(),
            arena_size: 1,
            buffers: table,
            kernels: none.view(),
            init: none.view(),
            run: none.view(),
            inputs: none.view(),
            outputs: none.view(),
            reference: None,
        },
        &[],
    );
    assert!(matches!(
        Bundle::parse(&bytes),
        Err(BundleError::Table { .. })
    ));
}

/// `TensorDesc::byte_len` saturates instead of wrapping for a shape no buffer can hold.
#[test]
fn byte_len_saturates() {
    let t = output(0, 0, DType::F64, &[u64::MAX, 2]);
    assert_eq!(t.numel(), u64::MAX);
    assert_eq!(t.byte_len(), u64::MAX);
    let t = output(0, 0, DType::F32, &[1 << 62]);
    assert_eq!(t.byte_len(), u64::MAX, "4 × 2^62 overflows u64");
    let t = output(0, 0, DType::F32, &[3, 5]);
    assert_eq!(t.byte_len(), 60);
}
