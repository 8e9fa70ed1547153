//! Zero-copy frame inputs on the CPU backend: a borrowed buffer is read in place (the arena's input
//! range is never written, yet the outputs and state follow the frames), refused bindings fall back
//! to a copy with the reason, the queue is restored afterwards, and `check_borrow` refuses views it
//! cannot serve in place. Expected values are `state_common`'s closed forms.
mod state_common;

use modelrt_core::{Bundle, Executor};
use modelrt_cpu::frame::cpu_frame;
use modelrt_cpu::{BorrowRefusal, Borrowed, CpuDevice, CpuError, CpuQueue};
use modelrt_hal::device::{Arg, Device, KernelId, Queue};
use modelrt_targets::frame::{FrameInput, InputPath};
use state_common::{
    buffer_params, bytes_f32, expected, f32_bytes, fixture, load, stateful_bundle, x, N,
};

/// A `len`-byte window of `storage` whose address is `misalign` bytes past a 64-byte boundary.
fn window(storage: &mut [u8], len: usize, misalign: usize) -> &mut [u8] {
    let skip = (64 - storage.as_ptr() as usize % 64) % 64 + misalign;
    &mut storage[skip..skip + len]
}

fn run(ex: &mut Executor<'_, CpuDevice>, frame: &mut [u8]) -> (Vec<f32>, Vec<f32>, InputPath, u64) {
    let (mut y, mut q) = (vec![0u8; N * 4], vec![0u8; N * 4]);
    let mut paths = [InputPath::Copied];
    let t = cpu_frame(
        ex,
        &mut [FrameInput::Borrow(frame)],
        &mut [&mut y, &mut q],
        &mut paths,
    )
    .unwrap();
    (bytes_f32(&y), bytes_f32(&q), paths[0], t.enqueue_ns)
}

fn state(ex: &mut Executor<'_, CpuDevice>, label: &str) -> Vec<f32> {
    let i = ex.state_index(label).unwrap();
    let mut out = vec![0u8; N * 4];
    ex.read_state(i, &mut out).unwrap();
    bytes_f32(&out)
}

#[test]
fn borrowed_frames_are_read_in_place_over_many_steps() {
    let bytes = stateful_bundle();
    let mut ex =
        Executor::load(Bundle::parse(&bytes).unwrap(), CpuDevice::new(1).unwrap()).unwrap();
    let input_at = ex.input_range(0).unwrap().offset;
    let mut storage = vec![0u8; N * 4 + 128];
    for k in 0..20 {
        let frame = window(&mut storage, N * 4, 0);
        frame.copy_from_slice(&f32_bytes(&x(9, k)));
        let (y, q, path, _) = run(&mut ex, frame);
        assert_eq!(path, InputPath::ZeroCopy, "step {k}");
        let (acc, y_want, q_want) = expected(9, k);
        assert_eq!((y, q), (y_want, q_want), "outputs at step {k}");
        assert_eq!(state(&mut ex, "state:acc"), acc, "state at step {k}");
        // The frame went nowhere near the arena: its input range still holds the zeroed mapping.
        let mut arena_input = vec![0xFFu8; N * 4];
        ex.device_mut()
            .download(input_at, &mut arena_input)
            .unwrap();
        assert_eq!(arena_input, vec![0u8; N * 4], "step {k}");
    }
    // The queue points at the arena again: a plain copying run continues the same stream.
    let (mut y, mut q) = (vec![0u8; N * 4], vec![0u8; N * 4]);
    ex.run(&[&f32_bytes(&x(9, 20))], &mut [&mut y, &mut q])
        .unwrap();
    let (_, y_want, q_want) = expected(9, 20);
    assert_eq!((bytes_f32(&y), bytes_f32(&q)), (y_want, q_want));
}

#[test]
fn misaligned_frames_are_copied_and_say_why() {
    let bytes = stateful_bundle();
    let mut ex =
        Executor::load(Bundle::parse(&bytes).unwrap(), CpuDevice::new(1).unwrap()).unwrap();
    let mut storage = vec![0u8; N * 4 + 128];
    let frame = window(&mut storage, N * 4, 4);
    frame.copy_from_slice(&f32_bytes(&x(1, 0)));
    let (y, _, path, _) = run(&mut ex, frame);
    assert_eq!(
        path,
        InputPath::CopiedInstead(BorrowRefusal::Misaligned.reason())
    );
    assert_eq!(y, expected(1, 0).1);
    // Wrong length is an error, not a fallback.
    let mut short = vec![0u8; 8];
    let mut outs = (vec![0u8; N * 4], vec![0u8; N * 4]);
    let e = cpu_frame(
        &mut ex,
        &mut [FrameInput::Borrow(&mut short)],
        &mut [&mut outs.0, &mut outs.1],
        &mut [InputPath::Copied],
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "inputs 0 has 8 bytes, the bundle expects 16");
}

/// A device with the `e4` kernel loaded and a 4-page arena.
fn device() -> CpuDevice {
    let mut d = CpuDevice::new(1).unwrap();
    d.alloc_arena(4 * 4096).unwrap();
    let dir = if cfg!(target_arch = "aarch64") {
        "aarch64"
    } else {
        "x86_64"
    };
    load(
        &mut d,
        &fixture(&format!("{dir}/e4.o")),
        "E_4",
        &buffer_params(),
        1,
    )
    .unwrap();
    d
}

fn view(offset: u64) -> Arg {
    Arg::Buffer { offset, size: 16 }
}

/// The input of the recorded launches.
const IN: u64 = 4096;

/// A queue launching `e4` once: `out(0) = a + w(8192) * 2.5` with `a` at arena offset `a`.
fn e4_queue(d: &mut CpuDevice, a: u64) -> CpuQueue {
    let mut q = d.create_queue().unwrap();
    q.exec(KernelId(0), &[view(0), view(a), view(8192)], [1; 3], [1; 3])
        .unwrap();
    q
}

#[test]
fn views_the_binding_cannot_serve_are_refused() {
    let mut d = device();
    // Then a copy reads 8 bytes straddling the input's end.
    let mut q = e4_queue(&mut d, IN);
    let mut storage = vec![0u8; 256];
    let buf = window(&mut storage, 16, 0);
    assert_eq!(d.check_borrow(&q, IN, buf), Ok(()));
    assert_eq!(
        d.check_borrow(&q, IN, &buf[..8]),
        Err(BorrowRefusal::Straddled),
        "the launch reads 16 bytes, the binding covers 8"
    );
    assert_eq!(
        d.check_borrow(&q, 64 * 4096, buf),
        Err(BorrowRefusal::OutsideArena)
    );
    q.copy(12288, IN + 8, 16).unwrap();
    assert_eq!(d.check_borrow(&q, IN, buf), Err(BorrowRefusal::Straddled));

    let mut q2 = d.create_queue().unwrap();
    q2.copy(IN, 12288, 16).unwrap();
    assert_eq!(
        d.check_borrow(&q2, IN, buf),
        Err(BorrowRefusal::WrittenByCopy)
    );

    // Two bindings of overlapping ranges: nothing runs.
    let mut q3 = d.create_queue().unwrap();
    q3.exec(KernelId(0), &[view(0), view(IN), view(IN)], [1; 3], [1; 3])
        .unwrap();
    let mut other = vec![0u8; 256];
    let (a, b) = (window(&mut storage, 16, 0), window(&mut other, 16, 0));
    let e = d
        .submit_borrowed(
            &mut q3,
            &mut [
                Borrowed {
                    arena_offset: IN,
                    data: a,
                },
                Borrowed {
                    arena_offset: IN,
                    data: b,
                },
            ],
        )
        .unwrap_err();
    assert!(
        matches!(e, CpuError::Borrow(BorrowRefusal::Overlapping)),
        "{e}"
    );
}

#[test]
fn a_borrowed_buffer_feeds_a_recorded_launch() {
    let mut d = device();
    d.upload(8192, &f32_bytes(&[2.0, 4.0, 6.0, 8.0])).unwrap();
    let mut q = e4_queue(&mut d, IN);
    let mut storage = vec![0u8; 256];
    let buf = window(&mut storage, 16, 0);
    buf.copy_from_slice(&f32_bytes(&[1.0, 1.5, -3.0, 0.0]));
    d.submit_borrowed(
        &mut q,
        &mut [Borrowed {
            arena_offset: IN,
            data: buf,
        }],
    )
    .unwrap();
    let mut out = vec![0u8; 16];
    d.download(0, &mut out).unwrap();
    // 1 + 2*2.5, 1.5 + 4*2.5, -3 + 6*2.5, 0 + 8*2.5
    assert_eq!(bytes_f32(&out), [6.0, 11.5, 12.0, 20.0]);
    // Restored: a plain submit reads the (zero) arena input again.
    d.submit(&mut q).unwrap();
    d.download(0, &mut out).unwrap();
    assert_eq!(bytes_f32(&out), [5.0, 10.0, 15.0, 20.0]);
}
