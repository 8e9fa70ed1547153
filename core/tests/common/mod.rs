//! Shared test fixtures: a small valid bundle spec and an interpreting mock device.
//!
//! The mock device "executes" kernels by their entry name (`mul`, `add`, `relu_rows`) on f32
//! buffers in a host arena. It exists to test the executor's resolution of the schedule, not any
//! backend; it allocates nothing in `submit`.
#![allow(dead_code)]

#[allow(unused_imports)] // each test file uses its own subset
pub use modelrt_core::bundle::writer::{bytes_f32, f32_bytes};
use modelrt_core::bundle::writer::{launch, BundleSpec, ReferenceSpec};
use modelrt_core::bundle::{ArgRef, BufRef, BufferKind, KernelDesc, Producer, Step};
use modelrt_hal::device::{Arg, Device, KernelId, KernelImage, Queue, SubmitTiming};
use modelrt_hal::target::{
    CpuArch, CpuKernelMeta, DType, KernelMeta, ParamDesc, ParamKind, Target,
};

pub const N: usize = 16;

fn buf_param() -> ParamDesc {
    ParamDesc {
        kind: ParamKind::Buffer,
        dtype: DType::F32,
    }
}

fn kernel(entry: &'static str, params: &[ParamDesc], threads: u32) -> KernelDesc<'static> {
    KernelDesc {
        name: entry,
        entry,
        binary: entry.as_bytes(),
        source: None,
        params: params.iter().copied().collect(),
        meta: KernelMeta::Cpu(CpuKernelMeta { threads }),
    }
}

fn whole(buffer: u32) -> ArgRef {
    modelrt_core::bundle::writer::whole(buffer, (N * 4) as u64)
}

/// The model: y = relu(x_dev * w + b) where x is copied from the input buffer to a device buffer,
/// `b` is produced by the init phase (b = w + w), and the relu kernel runs over 2 "cores".
pub struct Fixture {
    pub weights: Vec<u8>,
    pub ref_in: Vec<u8>,
    pub ref_out: Vec<u8>,
}

impl Fixture {
    pub fn new() -> Self {
        let w: Vec<f32> = (0..N).map(|i| i as f32 * 0.5 - 3.0).collect();
        let x: Vec<f32> = (0..N).map(|i| (i as f32).sin()).collect();
        let y: Vec<f32> = (0..N)
            .map(|i| (x[i] * w[i] + 2.0 * w[i]).max(0.0))
            .collect();
        Fixture {
            weights: f32_bytes(&w),
            ref_in: f32_bytes(&x),
            ref_out: f32_bytes(&y),
        }
    }

    pub fn spec(&self) -> BundleSpec<'_> {
        let core = ParamDesc {
            kind: ParamKind::CoreId,
            dtype: DType::I32,
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
                source_sha256: [7; 32],
                dev: "CPU:CLANG:x86_64,x86-64-v3",
                flags: "NUM_CPU_THREADS=2",
            },
        );
        let size = (N * 4) as u64;
        let f32_buffer = |spec: &mut BundleSpec<'_>, label, kind| {
            spec.buffer(label, size, DType::F32, kind, None)
        };
        let x = f32_buffer(&mut spec, "input:x", BufferKind::Input);
        let w = spec.buffer(
            "onnx:w",
            size,
            DType::F32,
            BufferKind::Weight,
            Some(&self.weights),
        );
        let x_dev = f32_buffer(&mut spec, "x_dev", BufferKind::Scratch);
        let b = f32_buffer(&mut spec, "b", BufferKind::Scratch);
        let t = f32_buffer(&mut spec, "t", BufferKind::Scratch);
        let y = f32_buffer(&mut spec, "output:y", BufferKind::Output);
        let add = spec.kernel(kernel("add", &[buf_param(), buf_param(), buf_param()], 1));
        let mul = spec.kernel(kernel("mul", &[buf_param(), buf_param(), buf_param()], 1));
        let relu = spec.kernel(kernel("relu_rows", &[buf_param(), buf_param(), core], 2));
        let one = [1, 1, 1];
        spec.init = vec![launch(add, &[whole(b), whole(w), whole(w)], one, one)];
        spec.run = vec![
            Step::Copy {
                dst: BufRef {
                    buffer: x_dev,
                    offset: 0,
                },
                src: BufRef {
                    buffer: x,
                    offset: 0,
                },
                size,
            },
            launch(mul, &[whole(t), whole(x_dev), whole(w)], one, one),
            launch(add, &[whole(t), whole(t), whole(b)], one, one),
            launch(relu, &[whole(y), whole(t), ArgRef::Int(0)], [2, 1, 1], one),
        ];
        spec.input("x", x, DType::F32, &[1, N as u64])
            .output("y", y, DType::F32, &[1, N as u64]);
        spec.reference = Some(ReferenceSpec {
            seed: 0,
            atol: 1e-6,
            rtol: 1e-6,
            inputs: vec![&self.ref_in],
            outputs: vec![&self.ref_out],
        });
        spec
    }
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Mul,
    ReluRows,
}

#[derive(Clone, Copy)]
enum Cmd {
    Exec {
        op: Op,
        args: [Arg; 3],
        threads: u32,
    },
    Copy {
        dst: u64,
        src: u64,
        len: u64,
    },
}

/// An interpreting host device (see module doc).
#[derive(Default)]
pub struct MockDevice {
    pub arena: Vec<u8>,
    kernels: Vec<(Op, u32)>,
    pub submits: u64,
}

pub struct MockQueue {
    cmds: Vec<Cmd>,
    kernels: Vec<(Op, u32)>,
}

#[derive(Debug)]
pub struct MockError(pub &'static str);
impl std::fmt::Display for MockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl Queue for MockQueue {
    type Error = MockError;
    fn wait(&mut self, _value: u64) -> Result<(), MockError> {
        Ok(())
    }
    fn timestamp(&mut self) -> Result<(), MockError> {
        Ok(())
    }
    fn exec(
        &mut self,
        kernel: KernelId,
        args: &[Arg],
        _global: [u32; 3],
        _local: [u32; 3],
    ) -> Result<(), MockError> {
        let (op, threads) = *self
            .kernels
            .get(kernel.0 as usize)
            .ok_or(MockError("bad kernel id"))?;
        let mut a = [Arg::Int(0); 3];
        if args.len() != 3 {
            return Err(MockError("bad arg count"));
        }
        a.copy_from_slice(args);
        self.cmds.push(Cmd::Exec {
            op,
            args: a,
            threads,
        });
        Ok(())
    }
    fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), MockError> {
        self.cmds.push(Cmd::Copy { dst, src, len });
        Ok(())
    }
    fn signal(&mut self, _value: u64) -> Result<(), MockError> {
        Ok(())
    }
}

fn at(arena: &[u8], a: Arg, i: usize) -> f32 {
    match a {
        Arg::Buffer { offset, .. } => {
            let o = offset as usize + 4 * i;
            f32::from_le_bytes([arena[o], arena[o + 1], arena[o + 2], arena[o + 3]])
        }
        Arg::Int(_) => 0.0,
    }
}

fn put(arena: &mut [u8], a: Arg, i: usize, v: f32) {
    if let Arg::Buffer { offset, .. } = a {
        let o = offset as usize + 4 * i;
        arena[o..o + 4].copy_from_slice(&v.to_le_bytes());
    }
}

impl Device for MockDevice {
    type Error = MockError;
    type Queue = MockQueue;
    fn check_target(&self, target: &Target<'_>) -> Result<(), MockError> {
        match target {
            Target::Cpu { .. } => Ok(()),
            _ => Err(MockError("wrong target")),
        }
    }
    fn alloc_arena(&mut self, bytes: u64) -> Result<(), MockError> {
        self.arena = vec![0; bytes as usize];
        Ok(())
    }
    fn upload(&mut self, offset: u64, data: &[u8]) -> Result<(), MockError> {
        let o = offset as usize;
        self.arena
            .get_mut(o..o + data.len())
            .ok_or(MockError("upload out of range"))?
            .copy_from_slice(data);
        Ok(())
    }
    fn download(&mut self, offset: u64, out: &mut [u8]) -> Result<(), MockError> {
        let o = offset as usize;
        out.copy_from_slice(
            self.arena
                .get(o..o + out.len())
                .ok_or(MockError("download out of range"))?,
        );
        Ok(())
    }
    fn load_kernel(&mut self, k: &KernelImage<'_>) -> Result<KernelId, MockError> {
        let op = match k.entry {
            "add" => Op::Add,
            "mul" => Op::Mul,
            "relu_rows" => Op::ReluRows,
            _ => return Err(MockError("unknown kernel")),
        };
        let threads = match k.meta {
            KernelMeta::Cpu(m) => m.threads,
            _ => return Err(MockError("not a cpu kernel")),
        };
        self.kernels.push((op, threads));
        Ok(KernelId(self.kernels.len() as u32 - 1))
    }
    fn create_queue(&mut self) -> Result<MockQueue, MockError> {
        Ok(MockQueue {
            cmds: Vec::new(),
            kernels: self.kernels.clone(),
        })
    }
    fn submit(&mut self, q: &mut MockQueue) -> Result<SubmitTiming, MockError> {
        self.submits += 1;
        for cmd in &q.cmds {
            match *cmd {
                Cmd::Copy { dst, src, len } => self
                    .arena
                    .copy_within(src as usize..(src + len) as usize, dst as usize),
                Cmd::Exec { op, args, threads } => {
                    let [o, a, b] = args;
                    for i in 0..N {
                        let v = match op {
                            Op::Add => at(&self.arena, a, i) + at(&self.arena, b, i),
                            Op::Mul => at(&self.arena, a, i) * at(&self.arena, b, i),
                            Op::ReluRows if threads > 0 => at(&self.arena, a, i).max(0.0),
                            Op::ReluRows => return Err(MockError("relu_rows without threads")),
                        };
                        put(&mut self.arena, o, i, v);
                    }
                }
            }
        }
        Ok(SubmitTiming {
            enqueue_ns: 1,
            device_ns: 2,
        })
    }
    fn now_ns(&self) -> u64 {
        0
    }
}
