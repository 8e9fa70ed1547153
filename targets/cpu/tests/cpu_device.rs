//! Runs tinygrad-style kernel objects for the host architecture (x86_64 natively; aarch64 under
//! qemu-user via `.cargo/config.toml`'s runner) through the `Device`/`Queue` API of `CpuDevice` and
//! compares the results with values computed in Rust.

mod cpu_common;

use cpu_common::*;
use modelrt_cpu::{features_for_baseline, CpuDevice, CpuError};
use modelrt_hal::device::{Arg, Device, KernelId, Queue};
use modelrt_hal::target::{cpu_features, CpuArch, DType, Target};

/// Fixture object `name` compiled for the host architecture.
fn host_object(name: &str) -> Vec<u8> {
    fixture(&format!("{}/{name}.o", std::env::consts::ARCH))
}

/// A device with `threads` worker threads and an arena of `arena` bytes.
fn device(threads: usize, arena: u64) -> CpuDevice {
    let mut dev = CpuDevice::new(threads).unwrap();
    dev.alloc_arena(arena).unwrap();
    dev
}

/// Load the `E_4` fixture (three f32 buffers of 4, no thread axis) into `dev`.
fn load_e4(dev: &mut CpuDevice) -> KernelId {
    load(dev, &host_object("e4"), "E_4", &[buf(DType::F32); 3], 1).unwrap()
}

/// Record one launch of `k` (local size 1) on a new queue and submit it once.
fn launch_once(dev: &mut CpuDevice, k: KernelId, args: &[Arg], global: [u32; 3]) {
    let mut q = dev.create_queue().unwrap();
    q.exec(k, args, global, [1, 1, 1]).unwrap();
    dev.submit(&mut q).unwrap();
}

fn buffer(offset: u64, floats: u64) -> Arg {
    Arg::Buffer {
        offset,
        size: floats * 4,
    }
}

#[test]
fn elementwise_kernel_runs_and_timeline_advances() {
    let mut dev = device(2, 4096);
    let k = load_e4(&mut dev);
    let a = [1.0f32, -2.0, 3.5, 1e6];
    let b = [0.5f32, 4.0, -1.25, 3.0];
    dev.upload(256, &f32_bytes(&a)).unwrap();
    dev.upload(512, &f32_bytes(&b)).unwrap();
    let mut q = dev.create_queue().unwrap();
    q.wait(0).unwrap();
    q.timestamp().unwrap();
    q.exec(
        k,
        &[buffer(0, 4), buffer(256, 4), buffer(512, 4)],
        [1, 1, 1],
        [1, 1, 1],
    )
    .unwrap();
    q.timestamp().unwrap();
    q.signal(1).unwrap();
    let before = std::time::Instant::now();
    let timing = dev.submit(&mut q).unwrap();
    let wall = before.elapsed().as_nanos() as u64;
    assert!(
        timing.enqueue_ns + timing.device_ns <= wall,
        "{timing:?} vs {wall} ns"
    );
    assert_eq!(q.timeline(), 1);
    let expected: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y * 2.5).collect();
    assert_eq!(download_f32(&mut dev, 0, 4), expected);
    // Replaying the same recording is fine: wait(0) is satisfied by the timeline at 1.
    dev.submit(&mut q).unwrap();
    assert_eq!(q.timeline(), 1);
}

fn threaded_expected(input: &[f32]) -> Vec<f32> {
    (0..64)
        .map(|row| {
            let sum: f32 = input[row * 8..row * 8 + 8].iter().sum();
            sum * 0.5 + (row / 16) as f32
        })
        .collect()
}

fn run_threaded(threads: usize) -> Vec<f32> {
    let mut dev = CpuDevice::new(threads).unwrap();
    assert_eq!(dev.threads(), threads);
    dev.alloc_arena(8192).unwrap();
    let params = [buf(DType::F32), buf(DType::F32), core_id()];
    let k = load(&mut dev, &host_object("threaded"), "r_4_16_8", &params, 4).unwrap();
    let input: Vec<f32> = (0..512).map(|i| (i as f32) * 0.25 - 17.0).collect();
    dev.upload(4096, &f32_bytes(&input)).unwrap();
    // The poisoned output proves every row is written.
    dev.upload(0, &f32_bytes(&[f32::NAN; 64])).unwrap();
    launch_once(
        &mut dev,
        k,
        &[buffer(0, 64), buffer(4096, 512), Arg::Int(999)],
        [4, 1, 1],
    );
    let out = download_f32(&mut dev, 0, 64);
    assert_eq!(out, threaded_expected(&input), "threads = {threads}");
    out
}

#[test]
fn core_id_kernel_gets_every_core_id_serial_and_parallel() {
    run_threaded(1);
    run_threaded(2);
    run_threaded(4);
}

#[test]
fn rodata_tables_and_constant_pools_are_relocated() {
    let mut dev = device(1, 4096);
    let params = [buf(DType::F32), buf(DType::I32), buf(DType::F32)];
    let k = load(&mut dev, &host_object("tables"), "tables", &params, 1).unwrap();
    let sel: Vec<i32> = (0..64).map(|i| (i * 5 + 3) % 11).collect();
    let x: Vec<f32> = (0..64).map(|i| i as f32 * 0.5 - 9.0).collect();
    dev.upload(
        1024,
        &sel.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    dev.upload(2048, &f32_bytes(&x)).unwrap();
    launch_once(
        &mut dev,
        k,
        &[buffer(0, 72), buffer(1024, 64), buffer(2048, 64)],
        [1, 1, 1],
    );
    let mut expected: Vec<f32> = (0..64)
        .map(|i| match sel[i] & 7 {
            0 => 1.25,
            1 => -3.5,
            2 => x[i] * 7.0,
            3 => x[i] + 11.0,
            4 => x[i] * x[i] - 0.75,
            5 => 42.0,
            6 => x[i] / 3.0,
            _ => -x[i] * 0.125,
        })
        .collect();
    let k8 = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    let c8 = [0.5f32, 0.25, 0.125, 1.5, 2.5, 3.5, 4.5, 5.5];
    expected.extend((0..8).map(|i| x[i].mul_add(k8[i], c8[i])));
    let got = download_f32(&mut dev, 0, 72);
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        // x86-64-v3 may contract a*k+c into an FMA: allow one rounding of difference.
        assert!((g - e).abs() <= e.abs() * 1e-6, "element {i}: {g} vs {e}");
    }
}

#[test]
fn thirteen_arguments_pass_stack_slots_and_negative_ints() {
    let mut dev = device(1, 16 * 256);
    let mut params = vec![buf(DType::F32); 10];
    params.extend([var(), var(), var()]);
    let k = load(&mut dev, &host_object("manyargs"), "many", &params, 1).unwrap();
    let n = 16usize;
    let inputs: Vec<Vec<f32>> = (1..=8)
        .map(|b| (0..n).map(|i| (b * 100 + i) as f32 / 8.0).collect())
        .collect();
    for (b, data) in inputs.iter().enumerate() {
        dev.upload(256 * (b as u64 + 1), &f32_bytes(data)).unwrap();
    }
    let mut args: Vec<Arg> = (0..10).map(|b| buffer(256 * b, n as u64)).collect();
    args.extend([Arg::Int(-3), Arg::Int(-7), Arg::Int(n as i32)]);
    launch_once(&mut dev, k, &args, [1, 1, 1]);
    let d0 = download_f32(&mut dev, 0, n);
    let d9 = download_f32(&mut dev, 256 * 9, n);
    for i in 0..n {
        let weighted: f32 = (0..8).map(|b| (b + 1) as f32 * inputs[b][i]).sum();
        assert!(
            (d0[i] - weighted * -3.0).abs() <= weighted.abs() * 3.0 * 1e-5,
            "d0[{i}] = {}",
            d0[i]
        );
        assert_eq!(d9[i], (-7 + i as i32) as f32);
    }
}

#[test]
fn bss_state_starts_zeroed_and_stays_writable() {
    let mut dev = device(1, 256);
    let k = load(
        &mut dev,
        &host_object("bss"),
        "count_calls",
        &[buf(DType::I32)],
        1,
    )
    .unwrap();
    let mut q = dev.create_queue().unwrap();
    q.exec(
        k,
        &[Arg::Buffer { offset: 0, size: 4 }],
        [1, 1, 1],
        [1, 1, 1],
    )
    .unwrap();
    for expected in 1..=3i32 {
        dev.submit(&mut q).unwrap();
        let mut out = [0u8; 4];
        dev.download(0, &mut out).unwrap();
        assert_eq!(i32::from_le_bytes(out), expected);
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn tinygrad_elementwise_object() {
    let mut dev = device(1, 3 * 16384);
    let k = load(
        &mut dev,
        &fixture("x86_64/tinygrad_E_1024_4.o"),
        "E_1024_4",
        &[buf(DType::F32); 3],
        1,
    )
    .unwrap();
    let a: Vec<f32> = (0..4096).map(|i| (i as f32 - 2000.0) / 100.0).collect();
    let b: Vec<f32> = (0..4096).map(|i| ((i % 7) as f32) - 3.0).collect();
    dev.upload(16384, &f32_bytes(&a)).unwrap();
    dev.upload(32768, &f32_bytes(&b)).unwrap();
    launch_once(
        &mut dev,
        k,
        &[buffer(0, 4096), buffer(16384, 4096), buffer(32768, 4096)],
        [1, 1, 1],
    );
    let expected: Vec<f32> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x * y).max(0.0) + 1.5)
        .collect();
    assert_eq!(download_f32(&mut dev, 0, 4096), expected);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn tinygrad_threaded_matmul_object() {
    const N: usize = 256;
    let mut dev = device(2, 3 * (N * N * 4) as u64);
    let params = [buf(DType::F32), buf(DType::F32), buf(DType::F32), core_id()];
    let k = load(
        &mut dev,
        &fixture("x86_64/tinygrad_r_32_64_2_4_4_64_4.o"),
        "r_32_64_2_4_4_64_4",
        &params,
        2,
    )
    .unwrap();
    let a: Vec<f32> = (0..N * N)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0)
        .collect();
    let b: Vec<f32> = (0..N * N)
        .map(|i| ((i * 13 % 29) as f32 - 14.0) / 16.0)
        .collect();
    let bytes = (N * N * 4) as u64;
    dev.upload(bytes, &f32_bytes(&a)).unwrap();
    dev.upload(2 * bytes, &f32_bytes(&b)).unwrap();
    let nf = (N * N) as u64;
    launch_once(
        &mut dev,
        k,
        &[
            buffer(0, nf),
            buffer(bytes, nf),
            buffer(2 * bytes, nf),
            Arg::Int(0),
        ],
        [2, 1, 1],
    );
    let got = download_f32(&mut dev, 0, N * N);
    for i in 0..N {
        for j in 0..N {
            let dot: f64 = (0..N)
                .map(|k| f64::from(a[i * N + k]) * f64::from(b[k * N + j]))
                .sum();
            let expected = dot.max(0.0) + 1.5;
            let g = f64::from(got[i * N + j]);
            assert!(
                (g - expected).abs() <= 1e-3 * expected.abs().max(1.0),
                "[{i},{j}] {g} vs {expected}"
            );
        }
    }
}

#[test]
fn copy_command_moves_overlapping_bytes() {
    let mut dev = device(1, 64);
    let data: Vec<u8> = (0..32).collect();
    dev.upload(0, &data).unwrap();
    let mut q = dev.create_queue().unwrap();
    q.copy(8, 0, 32).unwrap();
    dev.submit(&mut q).unwrap();
    let mut out = [0u8; 40];
    dev.download(0, &mut out).unwrap();
    let expected: Vec<u8> = (0..8).chain(0..32).collect();
    assert_eq!(out.to_vec(), expected);
}

#[test]
fn arena_accesses_are_bounds_checked() {
    let mut dev = CpuDevice::new(1).unwrap();
    assert_eq!(dev.upload(0, &[1]), Err(CpuError::NoArena));
    assert!(matches!(dev.create_queue(), Err(CpuError::NoArena)));
    dev.alloc_arena(100).unwrap();
    dev.upload(96, &[1, 2, 3, 4]).unwrap();
    assert_eq!(
        dev.upload(97, &[0; 4]),
        Err(CpuError::OutOfBounds {
            offset: 97,
            len: 4,
            arena: 100
        })
    );
    assert_eq!(
        dev.download(u64::MAX, &mut [0; 2]),
        Err(CpuError::OutOfBounds {
            offset: u64::MAX,
            len: 2,
            arena: 100
        })
    );
    let mut q = dev.create_queue().unwrap();
    assert!(matches!(
        q.copy(0, 90, 11),
        Err(CpuError::OutOfBounds { .. })
    ));
    let k = load_e4(&mut dev);
    let mut q = dev.create_queue().unwrap();
    let err = q
        .exec(
            k,
            &[buffer(0, 4), buffer(0, 4), buffer(96, 4)],
            [1, 1, 1],
            [1, 1, 1],
        )
        .unwrap_err();
    assert_eq!(
        err,
        CpuError::OutOfBounds {
            offset: 96,
            len: 16,
            arena: 100
        }
    );
}

#[test]
fn bad_launches_are_typed_errors() {
    let mut dev = device(1, 256);
    let k = load_e4(&mut dev);
    let mut q = dev.create_queue().unwrap();
    let two = [buffer(0, 4), buffer(16, 4)];
    assert!(matches!(
        q.exec(k, &two, [1, 1, 1], [1, 1, 1]),
        Err(CpuError::BadArgs { .. })
    ));
    let with_int = [buffer(0, 4), buffer(16, 4), Arg::Int(1)];
    assert!(matches!(
        q.exec(k, &with_int, [1, 1, 1], [1, 1, 1]),
        Err(CpuError::BadArgs { .. })
    ));
    let unknown = modelrt_hal::device::KernelId(7);
    assert_eq!(
        q.exec(unknown, &[], [1, 1, 1], [1, 1, 1]),
        Err(CpuError::UnknownKernel(7))
    );
    // Kernels loaded after the queue was created are not visible to it.
    let k2 = load_e4(&mut dev);
    let three = [buffer(0, 4), buffer(16, 4), buffer(32, 4)];
    assert_eq!(
        q.exec(k2, &three, [1, 1, 1], [1, 1, 1]),
        Err(CpuError::UnknownKernel(k2.0))
    );
    // threads > 1 needs a core_id parameter; threads = 0 is meaningless.
    let e4 = host_object("e4");
    assert!(matches!(
        load(&mut dev, &e4, "E_4", &[buf(DType::F32); 3], 2),
        Err(CpuError::BadMeta { .. })
    ));
    assert!(matches!(
        load(&mut dev, &e4, "E_4", &[buf(DType::F32); 3], 0),
        Err(CpuError::BadMeta { .. })
    ));
}

#[test]
fn unsatisfiable_wait_and_stale_queue_are_errors() {
    let mut dev = device(1, 64);
    let mut q = dev.create_queue().unwrap();
    q.signal(5).unwrap();
    q.wait(6).unwrap();
    assert_eq!(
        dev.submit(&mut q),
        Err(CpuError::WaitUnsatisfiable { want: 6, have: 5 })
    );
    dev.alloc_arena(64).unwrap();
    assert_eq!(dev.submit(&mut q), Err(CpuError::StaleQueue));
}

#[test]
fn check_target_accepts_this_host_and_refuses_others() {
    let dev = CpuDevice::new(1).unwrap();
    let (host, other, foreign_bit, other_baseline) = if cfg!(target_arch = "x86_64") {
        (
            CpuArch::X86_64,
            CpuArch::Aarch64,
            cpu_features::NEON,
            "cortex-a76",
        )
    } else {
        (
            CpuArch::Aarch64,
            CpuArch::X86_64,
            cpu_features::AVX2,
            "x86-64-v3",
        )
    };
    let plain = Target::Cpu {
        arch: host,
        baseline: "generic",
        features: 0,
    };
    dev.check_target(&plain).unwrap();
    // A bit of the other architecture is never present on this host.
    let foreign = Target::Cpu {
        arch: host,
        baseline: "odd",
        features: foreign_bit,
    };
    let msg = dev.check_target(&foreign).unwrap_err().to_string();
    assert!(msg.contains("`odd`"), "{msg}");
    let wrong = Target::Cpu {
        arch: other,
        baseline: other_baseline,
        features: features_for_baseline(other, other_baseline).unwrap(),
    };
    assert!(matches!(
        dev.check_target(&wrong),
        Err(CpuError::WrongArch { .. })
    ));
    assert_eq!(
        dev.check_target(&Target::Hexagon { version: 65 }),
        Err(CpuError::WrongFamily("hexagon"))
    );
}

#[cfg(target_arch = "aarch64")]
#[test]
fn aarch64_relocation_kinds_execute() {
    let mut dev = device(1, 256);
    let k = load(
        &mut dev,
        &host_object("a64relocs"),
        "a64relocs",
        &[buf(DType::F32), buf(DType::I32)],
        1,
    )
    .unwrap();
    dev.upload(128, &5i32.to_le_bytes()).unwrap();
    launch_once(
        &mut dev,
        k,
        &[
            buffer(0, 3),
            Arg::Buffer {
                offset: 128,
                size: 4,
            },
        ],
        [1, 1, 1],
    );
    // t8[3] + t16[5] + t32[6] + t64[7]; t128[1].x + .w; helper(13, 5) = 13 * table[5].
    assert_eq!(
        download_f32(&mut dev, 0, 3),
        [4.0 + 60.0 + 700.0 + 8000.0, 13.0, 65.0]
    );
}

#[test]
fn no_mapping_is_writable_and_executable() {
    let mut dev = device(1, 4096);
    let e4 = load_e4(&mut dev);
    load(
        &mut dev,
        &host_object("bss"),
        "count_calls",
        &[buf(DType::I32)],
        1,
    )
    .unwrap();
    launch_once(
        &mut dev,
        e4,
        &[buffer(0, 4), buffer(16, 4), buffer(32, 4)],
        [1, 1, 1],
    );
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let wx: Vec<&str> = maps
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|p| p.starts_with("rwx"))
        })
        .collect();
    assert!(wx.is_empty(), "writable+executable mappings: {wx:?}");
}
