//! Running a whole amd-gfx1100 bundle on the interpreter over a [`FlatMemory`], the way the AMD
//! runtime lays it out (docs/hw/rdna3-isa.md §"Running a bundle"): the arena at one base, each
//! kernel's loaded image (tinygrad's ELF loader layout) 256-byte aligned, one kernarg block per
//! launch (u64 buffer addresses in argument order, then the int32 vars, naturally aligned), the
//! kernarg pointer in s[0:1], LDS_SIZE from the kernel's group segment size, COMPUTE_TMPRING_SIZE
//! from its private segment size.
use modelrt_core::bundle::{ArgRef, Step};
use modelrt_core::Bundle;
use modelrt_hal::target::KernelMeta;
use modelrt_rdna3::shader::{DispatchRequest, ExecError, ShaderExecutor};
use modelrt_rdna3::Rdna3;

use super::elf;
use super::flat::FlatMemory;

/// Where the arena starts (a hole below it).
pub const ARENA: u64 = 0x1_0000_0000;
/// Where kernel images start.
pub const CODE: u64 = 0x2_0000_0000;
/// Where kernargs start.
pub const KERNARGS: u64 = 0x3_0000_0000;
/// Bytes per launch's kernarg block (64 parameters of 8 bytes fit twice).
const KERNARG_BLOCK: usize = 1024;

/// A bundle loaded into flat memory, ready to run.
pub struct Loaded<'a> {
    pub bundle: Bundle<'a>,
    pub mem: FlatMemory,
    pub exec: Rdna3,
    /// `(code_va, rsrc1, rsrc2 with LDS_SIZE, rsrc3, tmpring_size)` per kernel.
    kernels: Vec<(u64, u32, u32, u32, u32)>,
    arena: u64,
}

/// `DISPATCH_INITIATOR`: COMPUTE_SHADER_EN | CS_W32_EN.
pub const INITIATOR_W32: u32 = 1 | 1 << 15;

impl<'a> Loaded<'a> {
    /// Map the arena, weights and kernel images.
    pub fn new(bundle: Bundle<'a>) -> Loaded<'a> {
        let mut mem = FlatMemory::default();
        let body = bundle.body().clone();
        mem.map(ARENA, body.arena_size.next_multiple_of(4096) as usize);
        for b in body.buffers.iter() {
            let b = b.unwrap();
            if let Some(init) = bundle.init_bytes(&b) {
                mem.put(ARENA + b.arena_offset, init);
            }
        }
        let mut kernels = Vec::new();
        let mut next = CODE;
        for k in body.kernels.iter() {
            let k = k.unwrap();
            let KernelMeta::Amd(m) = k.meta else {
                panic!("{} is not an AMD kernel", k.name)
            };
            let img = elf::image(k.binary);
            mem.map(next, img.len().next_multiple_of(4096));
            mem.put(next, &img);
            let code_va = next + u64::from(m.entry_offset);
            assert_eq!(code_va % 256, 0, "{}: entry not 256-byte aligned", k.name);
            let lds = m.group_segment_fixed_size.div_ceil(512);
            // COMPUTE_TMPRING_SIZE as tinygrad's runtime programs it: WAVESIZE = 64 lanes × the
            // per-thread private size (at least 128 bytes) in 256-byte units, WAVES = 1.
            let per_thread = m.private_segment_fixed_size.max(128).next_multiple_of(4);
            let tmpring = (64 * per_thread).div_ceil(256) << 12 | 1;
            kernels.push((
                code_va,
                m.compute_pgm_rsrc1,
                m.compute_pgm_rsrc2 | lds << 15,
                m.compute_pgm_rsrc3,
                tmpring,
            ));
            // A hole after every image.
            next += (img.len() as u64 + 4096).next_multiple_of(0x10_0000);
        }
        let launches = body.init.len() + body.run.len();
        mem.map(KERNARGS, launches.max(1) * KERNARG_BLOCK);
        Loaded {
            bundle,
            mem,
            exec: Rdna3::new(),
            kernels,
            arena: ARENA,
        }
    }

    fn buffer_va(&self, buffer: u32, offset: u64) -> u64 {
        self.arena + self.bundle.arena_offset(buffer, offset).unwrap()
    }

    fn run_steps(&mut self, init: bool) -> Result<(), ExecError> {
        let body = self.bundle.body().clone();
        let steps = if init { body.init } else { body.run };
        let base_slot = if init { 0 } else { body.init.len() };
        for (n, s) in steps.iter().enumerate() {
            match s.unwrap() {
                Step::Copy { dst, src, size } => {
                    let data = self
                        .mem
                        .get(self.buffer_va(src.buffer, src.offset), size as usize);
                    let d = self.buffer_va(dst.buffer, dst.offset);
                    self.mem.put(d, &data);
                }
                Step::LaunchThreads { .. } => {
                    panic!("step {n}: partial work groups (a QCOM-only launch) in an AMD bundle")
                }
                Step::Launch {
                    kernel,
                    args,
                    global,
                    local,
                } => {
                    let mut ka = Vec::new();
                    for a in args.iter() {
                        match *a {
                            ArgRef::Buffer { buffer, offset, .. } => {
                                while ka.len() % 8 != 0 {
                                    ka.push(0);
                                }
                                ka.extend_from_slice(&self.buffer_va(buffer, offset).to_le_bytes());
                            }
                            ArgRef::Int(v) => {
                                while ka.len() % 4 != 0 {
                                    ka.push(0);
                                }
                                ka.extend_from_slice(&v.to_le_bytes());
                            }
                        }
                    }
                    assert!(ka.len() <= KERNARG_BLOCK, "kernargs larger than the block");
                    let kva = KERNARGS + ((base_slot + n) * KERNARG_BLOCK) as u64;
                    self.mem.put(kva, &ka);
                    let (code_va, r1, r2, r3, tmpring) = self.kernels[kernel as usize];
                    let mut user_data = [0u32; 16];
                    user_data[0] = kva as u32;
                    user_data[1] = (kva >> 32) as u32;
                    let req = DispatchRequest {
                        code_va,
                        pgm_rsrc1: r1,
                        pgm_rsrc2: r2,
                        pgm_rsrc3: r3,
                        user_data,
                        workgroup_size: local,
                        start: [0; 3],
                        grid: global,
                        initiator: INITIATOR_W32,
                        tmpring_size: tmpring,
                    };
                    self.exec.dispatch(&req, &mut self.mem)?;
                }
            }
        }
        Ok(())
    }

    /// Run the init steps once.
    pub fn init(&mut self) -> Result<(), ExecError> {
        self.run_steps(true)
    }

    /// Inputs in, one inference, outputs out.
    pub fn run(&mut self, inputs: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, ExecError> {
        let body = self.bundle.body().clone();
        for (t, data) in body.inputs.iter().zip(inputs) {
            let t = t.unwrap();
            let va = self.buffer_va(t.buffer, t.offset);
            self.mem.put(va, data);
        }
        self.run_steps(false)?;
        Ok(body
            .outputs
            .iter()
            .map(|t| {
                let t = t.unwrap();
                let va = self.buffer_va(t.buffer, t.offset);
                self.mem.get(va, t.byte_len() as usize)
            })
            .collect())
    }
}
