//! `Device::submit` on the CPU backend must not touch the heap: 100 submits of a recorded queue
//! (threaded kernel on the pool, plain kernel, copy, timestamps, wait/signal) under a counting
//! global allocator perform zero allocations.

mod cpu_common;
#[path = "../../tests/noalloc_common/mod.rs"]
mod noalloc_common;

use std::sync::atomic::Ordering;

use cpu_common::*;
use modelrt_cpu::CpuDevice;
use modelrt_hal::device::{Arg, Device, Queue};
use modelrt_hal::target::DType;

use noalloc_common::{Counting, ALLOCATIONS, COUNTING};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn hundred_submits_allocate_nothing() {
    let mut dev = CpuDevice::new(4).unwrap();
    dev.alloc_arena(16384).unwrap();
    let threaded = load(
        &mut dev,
        &fixture(&format!("{}/threaded.o", std::env::consts::ARCH)),
        "r_4_16_8",
        &[buf(DType::F32), buf(DType::F32), core_id()],
        4,
    )
    .unwrap();
    let e4 = load(
        &mut dev,
        &fixture(&format!("{}/e4.o", std::env::consts::ARCH)),
        "E_4",
        &[buf(DType::F32); 3],
        1,
    )
    .unwrap();
    let input: Vec<f32> = (0..512).map(|i| i as f32).collect();
    dev.upload(4096, &f32_bytes(&input)).unwrap();
    let mut q = dev.create_queue().unwrap();
    q.wait(0).unwrap();
    q.timestamp().unwrap();
    let out = Arg::Buffer {
        offset: 0,
        size: 256,
    };
    q.exec(
        threaded,
        &[
            out,
            Arg::Buffer {
                offset: 4096,
                size: 2048,
            },
            Arg::Int(0),
        ],
        [4, 1, 1],
        [1, 1, 1],
    )
    .unwrap();
    q.exec(
        e4,
        &[
            Arg::Buffer {
                offset: 8192,
                size: 16,
            },
            out,
            out,
        ],
        [1, 1, 1],
        [1, 1, 1],
    )
    .unwrap();
    q.copy(12288, 0, 256).unwrap();
    q.timestamp().unwrap();
    q.signal(1).unwrap();
    dev.submit(&mut q).unwrap(); // warm-up: first use of the pool's threads and the clock

    COUNTING.store(true, Ordering::SeqCst);
    for _ in 0..100 {
        dev.submit(&mut q).unwrap();
    }
    COUNTING.store(false, Ordering::SeqCst);
    assert_eq!(
        ALLOCATIONS.load(Ordering::SeqCst),
        0,
        "allocations during 100 submits"
    );

    // The work really ran: row sums of the threaded kernel, then E_4 on its first 4 outputs.
    let rows = download_f32(&mut dev, 12288, 64);
    let row0: f32 = (0..8).map(|i| i as f32).sum::<f32>() * 0.5;
    assert_eq!(rows[0], row0);
    assert_eq!(download_f32(&mut dev, 8192, 1)[0], rows[0] + rows[0] * 2.5);
}
