//! Recurrent state in the executor: a hand-built "counter + queue" bundle whose state buffers are
//! initialised at load, advanced by every run, never touched by anything else, resettable and
//! readable. Expected values come from closed forms computed here, not from the executor.
mod common;

use common::{bytes_f32, f32_bytes, MockDevice, N};
use modelrt_core::bundle::writer::{launch, seal, whole, write_bundle, BundleSpec, TableBuilder};
use modelrt_core::bundle::{Body, BufRef, BufferDesc, BufferKind, KernelDesc, Producer, Step};
use modelrt_core::{Bundle, BundleError, ExecError, Executor};
use modelrt_hal::target::{
    CpuArch, CpuKernelMeta, DType, KernelMeta, ParamDesc, ParamKind, Target,
};

const F: u64 = 4;
const BYTES: u64 = N as u64 * F;

fn leak(v: Vec<f32>) -> &'static [u8] {
    Box::leak(f32_bytes(&v).into_boxed_slice())
}

fn w0() -> Vec<f32> {
    (0..N).map(|i| 0.25 * i as f32 - 1.0).collect()
}
fn s0() -> Vec<f32> {
    (0..N).map(|i| 100.0 + i as f32).collect()
}
fn q0() -> Vec<f32> {
    (0..N).map(|i| -(i as f32) - 1.0).collect()
}
/// Input of step `k` (1-based): distinct per step and per element.
fn x(k: usize) -> Vec<f32> {
    (0..N).map(|i| (k * 10 + i) as f32 * 0.5).collect()
}

/// Buffers: 0 input x, 1 weight w, 2 state s (counter), 3 state q (queue), 4 scratch tmp,
/// 5 output y, 6 output queue. Per run: s += x; y = s * w; q = q[1..] ++ [x[0]]; queue = q.
fn spec() -> BundleSpec<'static> {
    let p = ParamDesc {
        kind: ParamKind::Buffer,
        dtype: DType::F32,
    };
    let kernel = |e: &'static str| KernelDesc {
        name: e,
        entry: e,
        binary: e.as_bytes(),
        source: None,
        params: [p, p, p].into_iter().collect(),
        meta: KernelMeta::Cpu(CpuKernelMeta { threads: 1 }),
    };
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
    let mut buf = |label, kind, init| spec.buffer(label, BYTES, DType::F32, kind, init);
    let x = buf("input:x", BufferKind::Input, None);
    let w = buf("w", BufferKind::Weight, Some(leak(w0())));
    let s = buf("state:s", BufferKind::State, Some(leak(s0())));
    let q = buf("state:q", BufferKind::State, Some(leak(q0())));
    let tmp = buf("tmp", BufferKind::Scratch, None);
    let y = buf("output:y", BufferKind::Output, None);
    let queue = buf("output:queue", BufferKind::Output, None);
    let add = spec.kernel(kernel("add"));
    let mul = spec.kernel(kernel("mul"));
    let whole = |b| whole(b, BYTES);
    let at = |buffer, offset| BufRef { buffer, offset };
    let one = [1, 1, 1];
    spec.run = vec![
        launch(add, &[whole(s), whole(s), whole(x)], one, one),
        launch(mul, &[whole(y), whole(s), whole(w)], one, one),
        Step::Copy {
            dst: at(tmp, 0),
            src: at(q, F),
            size: BYTES - F,
        },
        Step::Copy {
            dst: at(q, 0),
            src: at(tmp, 0),
            size: BYTES - F,
        },
        Step::Copy {
            dst: at(q, BYTES - F),
            src: at(x, 0),
            size: F,
        },
        Step::Copy {
            dst: at(queue, 0),
            src: at(q, 0),
            size: BYTES,
        },
    ];
    spec.input("x", x, DType::F32, &[N as u64])
        .output("y", y, DType::F32, &[N as u64])
        .output("queue", queue, DType::F32, &[N as u64]);
    spec
}

/// Closed forms after `k` steps: counter, output and queue.
fn expected(k: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut s = s0();
    for j in 1..=k {
        for (si, xi) in s.iter_mut().zip(x(j)) {
            *si += xi;
        }
    }
    let y = s.iter().zip(w0()).map(|(a, b)| a * b).collect();
    let mut stream = q0();
    stream.extend((1..=k).map(|j| x(j)[0]));
    let q = stream[stream.len() - N..].to_vec();
    (s, y, q)
}

fn step(ex: &mut Executor<'_, MockDevice>, k: usize) -> (Vec<f32>, Vec<f32>) {
    let (mut y, mut q) = (vec![0u8; BYTES as usize], vec![0u8; BYTES as usize]);
    ex.run(&[&f32_bytes(&x(k))], &mut [&mut y, &mut q]).unwrap();
    (bytes_f32(&y), bytes_f32(&q))
}

fn state(ex: &mut Executor<'_, MockDevice>, label: &str) -> Vec<f32> {
    let i = ex.state_index(label).expect("state buffer exists");
    let mut out = vec![0u8; BYTES as usize];
    ex.read_state(i, &mut out).unwrap();
    bytes_f32(&out)
}

#[test]
fn state_is_initialised_persists_and_resets() {
    let bytes = write_bundle(&spec()).unwrap();
    let mut ex = Executor::load(Bundle::parse(&bytes).unwrap(), MockDevice::default()).unwrap();

    assert_eq!(ex.state_count(), 2);
    let s = ex.state(0).unwrap();
    assert_eq!(
        (s.index, s.buffer, s.label, s.dtype, s.size),
        (0, 2, "state:s", DType::F32, BYTES)
    );
    assert_eq!(ex.state(1).unwrap().label, "state:q");
    assert_eq!(ex.state(2), None);
    assert_eq!(ex.state_index("tmp"), None);

    // Load-time contents are the captured bytes.
    assert_eq!(state(&mut ex, "state:s"), s0());
    assert_eq!(state(&mut ex, "state:q"), q0());

    for k in 1..=6 {
        let (y, q) = step(&mut ex, k);
        let (s_want, y_want, q_want) = expected(k);
        assert_eq!(y, y_want, "output y after step {k}");
        assert_eq!(q, q_want, "output queue after step {k}");
        assert_eq!(state(&mut ex, "state:s"), s_want, "counter after step {k}");
        assert_eq!(state(&mut ex, "state:q"), q_want, "queue after step {k}");
    }

    ex.reset_state().unwrap();
    assert_eq!(state(&mut ex, "state:s"), s0());
    assert_eq!(state(&mut ex, "state:q"), q0());
    let (y, q) = step(&mut ex, 1);
    let (_, y_want, q_want) = expected(1);
    assert_eq!((y, q), (y_want, q_want), "first step after reset");
}

#[test]
fn weights_are_not_overwritten_by_runs() {
    let bytes = write_bundle(&spec()).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    let w = bundle.body().buffers.get(1).unwrap();
    let mut ex = Executor::load(bundle, MockDevice::default()).unwrap();
    for k in 1..=4 {
        step(&mut ex, k);
    }
    let at = w.arena_offset as usize;
    let arena = &ex.device_mut().arena;
    assert_eq!(bytes_f32(&arena[at..at + BYTES as usize]), w0());
}

#[test]
fn reading_state_checks_index_and_size() {
    let bytes = write_bundle(&spec()).unwrap();
    let mut ex = Executor::load(Bundle::parse(&bytes).unwrap(), MockDevice::default()).unwrap();
    let mut short = vec![0u8; 8];
    assert_eq!(
        ex.read_state(0, &mut short).unwrap_err().to_string(),
        format!("state buffer 0 has 8 bytes, the bundle expects {BYTES}")
    );
    let mut ok = vec![0u8; BYTES as usize];
    assert!(matches!(
        ex.read_state(2, &mut ok),
        Err(ExecError::Count { expected: 2, .. })
    ));
}

#[test]
fn short_init_is_zero_padded_at_load_and_reset() {
    let mut sp = spec();
    let head: &'static [u8] = leak(vec![7.0, 8.0]);
    sp.buffers[2].init = Some(head);
    let bytes = write_bundle(&sp).unwrap();
    let mut ex = Executor::load(Bundle::parse(&bytes).unwrap(), MockDevice::default()).unwrap();
    let mut want = vec![0.0f32; N];
    want[..2].copy_from_slice(&[7.0, 8.0]);
    assert_eq!(state(&mut ex, "state:s"), want);
    step(&mut ex, 1);
    let i = ex.state(0).unwrap().buffer;
    let off = ex
        .bundle()
        .body()
        .buffers
        .get(i as usize)
        .unwrap()
        .arena_offset as usize;
    // Garbage over the whole buffer: reset must write the zero tail, not inherit it.
    ex.device_mut().arena[off..off + BYTES as usize].fill(0xAB);
    ex.reset_state().unwrap();
    assert_eq!(state(&mut ex, "state:s"), want);
}

/// Re-encode `bytes` with buffer `i` moved to `to` (an arena offset), without the writer's checks.
fn with_offset(bytes: &[u8], i: usize, to: u64) -> Result<Bundle<'static>, BundleError> {
    let b = Bundle::parse(bytes).unwrap();
    let mut descs: Vec<BufferDesc<'_>> = b.body().buffers.iter().map(Result::unwrap).collect();
    descs[i].arena_offset = to;
    let table = TableBuilder::of(&descs).unwrap();
    let body = Body {
        buffers: table.view(),
        ..b.body().clone()
    };
    let out: &'static [u8] = Box::leak(seal(&body, b.weights()).unwrap().into_boxed_slice());
    Bundle::parse(out)
}

#[test]
fn state_sharing_arena_bytes_is_refused() {
    let bytes = write_bundle(&spec()).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let off = |i: usize| b.body().buffers.get(i).unwrap().arena_offset;
    // The unmodified layout is fine; moving the scratch buffer onto the queue state is not, nor
    // is moving the counter state onto the weights or straddling the input's end.
    assert!(with_offset(&bytes, 4, off(4)).is_ok());
    for (i, to) in [(4, off(3)), (2, off(1)), (2, off(0) + 4)] {
        match with_offset(&bytes, i, to) {
            Err(BundleError::Invalid { what, .. }) => {
                assert_eq!(what, "state buffer overlaps another buffer")
            }
            other => panic!("buffer {i} at {to}: {other:?}"),
        }
    }
}

#[test]
fn input_in_a_state_buffer_is_refused() {
    let mut sp = spec();
    sp.inputs[0].buffer = 2;
    match write_bundle(&sp) {
        Err(modelrt_core::bundle::writer::WriteError::Invalid(BundleError::Invalid {
            what,
            ..
        })) => assert_eq!(what, "input lies in a state buffer"),
        other => panic!("{other:?}"),
    }
}
