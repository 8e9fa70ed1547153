//! Stateful test bundles: [`build`] lays out a counter + queue model around one elementwise kernel
//! for any target (the Adreno test uses it with tinygrad's `E_8_32_4`); [`stateful_bundle`] is the
//! CPU one around the precompiled `e4` fixture (`data0 = data1 + data2 * 2.5` over 4 floats), with
//! the closed forms of what it computes, for the state, CLI and zero-copy tests. Its values are small
//! multiples of 0.5, so every f32 sum and product is exact and the closed forms need no tolerance.
#![allow(dead_code, unused_imports)] // each test crate uses a different subset

use modelrt_core::bundle::writer::{launch, whole, write_bundle, BufferSpec, BundleSpec};
use modelrt_core::bundle::{ArgRef, BufRef, BufferKind, KernelDesc, Producer, Step, TensorDesc};
use modelrt_hal::target::{
    CpuArch, CpuKernelMeta, DType, KernelMeta, ParamDesc, ParamKind, Target,
};

/// Elements per tensor.
pub const N: usize = 4;

#[path = "../../cpu/tests/cpu_common/mod.rs"]
mod cpu_common;
pub use cpu_common::{bytes_f32, f32_bytes, fixture, load};

pub fn w0() -> Vec<f32> {
    vec![1.0, -2.0, 0.5, 4.0]
}
pub fn acc0() -> Vec<f32> {
    vec![10.0, 20.0, 30.0, 40.0]
}
pub fn queue0() -> Vec<f32> {
    vec![-1.0, -2.0, -3.0, -4.0]
}

/// Input of step `k` (0-based) for stream `seed`.
pub fn x(seed: u32, k: usize) -> Vec<f32> {
    (0..N)
        .map(|i| ((seed as usize * 7 + k * 3 + i) % 11) as f32 * 0.5)
        .collect()
}

/// What the bundle gives after steps `0..=k` of stream `seed`: (acc state, output y, queue state).
pub fn expected(seed: u32, k: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut acc = acc0();
    for j in 0..=k {
        for (a, xi) in acc.iter_mut().zip(x(seed, j)) {
            *a += xi * 2.5;
        }
    }
    let y = acc.iter().zip(w0()).map(|(a, w)| a + w * 2.5).collect();
    let mut stream = queue0();
    stream.extend((0..=k).map(|j| x(seed, j)[0]));
    let q = stream[stream.len() - N..].to_vec();
    (acc, y, q)
}

/// How to build a stateful test bundle for some target around one elementwise kernel `out = f(a, b)` with
/// three buffer parameters (`out, a, b`).
pub struct StatefulSpec {
    pub target: Target<'static>,
    pub producer: Producer<'static>,
    pub kernel: KernelDesc<'static>,
    /// Elements per tensor.
    pub n: usize,
    pub global: [u32; 3],
    pub local: [u32; 3],
    /// Launch arguments (buffer indices, see [`build`]) of the step that advances the counter into scratch.
    pub acc_args: [u32; 3],
    /// Launch arguments of the step that computes the output `y` from the counter and the weight.
    pub y_args: [u32; 3],
    /// Also push `x[0]` into the queue (a copy out of the input).
    pub queue_x: bool,
    pub w: Vec<f32>,
    pub acc: Vec<f32>,
    pub queue: Vec<f32>,
}

/// Buffers: 0 input `x`, 1 weight `w`, 2 state `state:acc` (counter), 3 state `state:queue`, 4 scratch, 5 output
/// `y`, 6 output `queue`. Per step: `scratch = kernel(acc_args); acc = scratch; y = kernel(y_args)`; then
/// `queue = queue[1..] ++ [x[0]]` (the push only with `queue_x`); `queue` output = the queue state.
pub fn build(p: StatefulSpec) -> Vec<u8> {
    let bytes = (p.n * 4) as u64;
    let leak = |v: &[f32]| -> &'static [u8] { Box::leak(f32_bytes(v).into_boxed_slice()) };
    let mut spec = BundleSpec::new(p.target, p.producer);
    let mut buf = |label, kind, init| spec.buffer(label, bytes, DType::F32, kind, init);
    let x = buf("input:x", BufferKind::Input, None);
    buf("w", BufferKind::Weight, Some(leak(&p.w)));
    let acc = buf("state:acc", BufferKind::State, Some(leak(&p.acc)));
    let queue = buf("state:queue", BufferKind::State, Some(leak(&p.queue)));
    let tmp = buf("tmp", BufferKind::Scratch, None);
    let y = buf("output:y", BufferKind::Output, None);
    let queue_out = buf("output:queue", BufferKind::Output, None);
    let kernel = spec.kernel(p.kernel);
    let launch = |a: [u32; 3]| launch(kernel, &a.map(|b| whole(b, bytes)), p.global, p.local);
    let copy = |dst: (u32, u64), src: (u32, u64), size| Step::Copy {
        dst: BufRef {
            buffer: dst.0,
            offset: dst.1,
        },
        src: BufRef {
            buffer: src.0,
            offset: src.1,
        },
        size,
    };
    spec.run = vec![
        launch(p.acc_args),
        copy((acc, 0), (tmp, 0), bytes),
        launch(p.y_args),
        copy((tmp, 0), (queue, 4), bytes - 4),
        copy((queue, 0), (tmp, 0), bytes - 4),
    ];
    if p.queue_x {
        spec.run.push(copy((queue, bytes - 4), (x, 0), 4));
    }
    spec.run.push(copy((queue_out, 0), (queue, 0), bytes));
    let shape = [p.n as u64];
    spec.input("x", x, DType::F32, &shape)
        .output("y", y, DType::F32, &shape)
        .output("queue", queue_out, DType::F32, &shape);
    write_bundle(&spec).expect("stateful test bundle is valid")
}

/// Three f32 buffer parameters.
pub fn buffer_params() -> [ParamDesc; 3] {
    let p = ParamDesc {
        kind: ParamKind::Buffer,
        dtype: DType::F32,
    };
    [p, p, p]
}

/// The CPU bundle around the `e4` fixture (`data0 = data1 + data2 * 2.5`): per step
/// `acc = acc + 2.5 x; y = acc + 2.5 w; queue = queue[1..] ++ [x[0]]`; outputs `y` and `queue`.
pub fn stateful_bundle() -> Vec<u8> {
    let (arch, dir) = if cfg!(target_arch = "aarch64") {
        (CpuArch::Aarch64, "aarch64")
    } else {
        (CpuArch::X86_64, "x86_64")
    };
    let e4: &'static [u8] = Box::leak(fixture(&format!("{dir}/e4.o")).into_boxed_slice());
    build(StatefulSpec {
        target: Target::Cpu {
            arch,
            baseline: "generic",
            features: 0,
        },
        producer: Producer {
            tinygrad: "0.14.0",
            tinymesa: None,
            source_sha256: [3; 32],
            dev: "CPU",
            flags: "",
        },
        kernel: KernelDesc {
            name: "E_4",
            entry: "E_4",
            binary: e4,
            source: None,
            params: buffer_params().into_iter().collect(),
            meta: KernelMeta::Cpu(CpuKernelMeta { threads: 1 }),
        },
        n: N,
        global: [1, 1, 1],
        local: [1, 1, 1],
        acc_args: [4, 2, 0],
        y_args: [5, 2, 1],
        queue_x: true,
        w: w0(),
        acc: acc0(),
        queue: queue0(),
    })
}
