//! Device-side smoke test (`modelrt qcom selftest`): bring the device up, run one tiny embedded IR3 kernel
//! (tinygrad's `E_8_32_4`, c = a·3.7 + b over 1024 floats, ISA captured in qcom/golden) through the full backend
//! path — load, record once, replay `iters` times — then compare outputs and report timing like compile3
//! (enqueue vs total). Against the KGSL model with shader execution (`modelrt qcom selftest --kgsl emu`) the IR3
//! interpreter computes the outputs and they are checked the same way; only a model run without shader execution
//! leaves them unchecked, and the report says so.
use crate::adreno::{AdrenoDevice, AdrenoError};
use crate::kgsl::KgslIo;
use modelrt_hal::device::{Arg, Device, KernelImage, Queue};
use modelrt_hal::target::{DType, Ir3KernelMeta, KernelMeta, ParamDesc, ParamKind, Target};

/// a630 ISA of tinygrad's `E_8_32_4` (from qcom/golden/plain.json).
pub const ISA: &[u8] = include_bytes!("../golden/E_8_32_4.a630.isa");
/// Elements per buffer.
pub const N: usize = 1024;
const SCALE: f32 = 3.7;

/// The kernel's metadata as tinygrad's `IR3Compiler.unpack_lib` decoded it (qcom/golden/plain.json).
pub fn kernel_meta() -> Ir3KernelMeta<'static> {
    Ir3KernelMeta {
        image_size: 384,
        fregs: 7,
        hregs: 1,
        branchstack: 0,
        pvtmem: 0,
        shmem: 0,
        wgid: 0xC0,
        lid: 0,
        wgsz: 0xFC,
        buf_off: 0,
        imm_off: 64,
        immediates: &[0xCD, 0xCC, 0x6C, 0x40], // 3.7f
        tex_cnt: 0,
        ibo_cnt: 0,
        tex_to_image: heapless::Vec::new(),
    }
}

/// Outcome of a selftest run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub gpu: u32,
    pub iters: u32,
    /// Whether a real GPU executed the kernel (false against the model).
    pub executed_on_gpu: bool,
    /// Largest |out − (a·3.7 + b)|, when outputs were checked.
    pub max_abs_err: Option<f32>,
    pub mismatches: usize,
    /// Per-iteration host time for `submit`'s enqueue part, and for the whole submit including the wait.
    pub enqueue_ns: Vec<u64>,
    pub total_ns: Vec<u64>,
    pub device_ns: Vec<u64>,
}

impl Report {
    /// Passed = outputs matched on a GPU; against the model, = the streams were accepted.
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }

    /// Human-readable lines.
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![format!("GPU: a{}", self.gpu)];
        for i in 0..self.iters as usize {
            v.push(format!(
                "run {i}: enqueue {:8.3} ms  total {:8.3} ms  device {:8.3} ms",
                self.enqueue_ns[i] as f64 / 1e6,
                self.total_ns[i] as f64 / 1e6,
                self.device_ns[i] as f64 / 1e6
            ));
        }
        match self.max_abs_err {
            Some(e) => v.push(format!("outputs: {} of {N} mismatched, max abs error {e:e}", self.mismatches)),
            None => v.push(
                "outputs NOT checked: the KGSL model validated every command stream but ran no shader \
                 (device times come from the model's counter)"
                    .into(),
            ),
        }
        v
    }
}

fn inputs() -> (Vec<f32>, Vec<f32>) {
    let a = (0..N).map(|i| (i as f32 * 0.37).sin()).collect();
    let b = (0..N).map(|i| i as f32 / N as f32 - 0.5).collect();
    (a, b)
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Run the selftest on an opened device. `executed_on_gpu` says whether `K` is real hardware.
pub fn run<K: KgslIo>(
    dev: &mut AdrenoDevice<K>,
    executed_on_gpu: bool,
    iters: u32,
) -> Result<Report, AdrenoError> {
    let gpu = dev.gpu();
    dev.check_target(&Target::Adreno {
        chip: 630,
        image: false,
        half: false,
    })?;
    let bytes_per = (N * 4) as u64;
    dev.alloc_arena(3 * bytes_per)?;
    let (a, b) = inputs();
    dev.upload(0, &vec![0u8; N * 4])?;
    dev.upload(bytes_per, &bytes(&a))?;
    dev.upload(2 * bytes_per, &bytes(&b))?;
    let meta = KernelMeta::Ir3(kernel_meta());
    let params = [ParamDesc {
        kind: ParamKind::Buffer,
        dtype: DType::F32,
    }; 3];
    let k = dev.load_kernel(&KernelImage {
        name: "E_8_32_4",
        entry: "E_8_32_4",
        binary: ISA,
        params: &params,
        meta: &meta,
    })?;
    let mut q = dev.create_queue()?;
    q.wait(0)?;
    q.timestamp()?;
    let args: Vec<Arg> = (0..3)
        .map(|i| Arg::Buffer {
            offset: i * bytes_per,
            size: bytes_per,
        })
        .collect();
    q.exec(k, &args, [8, 1, 1], [32, 1, 1])?;
    q.timestamp()?;
    q.signal(1)?;
    let mut r = Report {
        gpu,
        iters,
        executed_on_gpu,
        max_abs_err: None,
        mismatches: 0,
        enqueue_ns: Vec::new(),
        total_ns: Vec::new(),
        device_ns: Vec::new(),
    };
    for _ in 0..iters {
        let t0 = dev.now_ns();
        let t = dev.submit(&mut q)?;
        r.total_ns.push(dev.now_ns() - t0);
        r.enqueue_ns.push(t.enqueue_ns);
        r.device_ns.push(t.device_ns);
    }
    if executed_on_gpu {
        let mut out = vec![0u8; N * 4];
        dev.download(0, &mut out)?;
        let mut max = 0f32;
        for i in 0..N {
            let got =
                f32::from_le_bytes([out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]]);
            let want = a[i] * SCALE + b[i];
            let err = (got - want).abs();
            if err.is_nan() || err > 1e-5 * want.abs().max(1.0) {
                r.mismatches += 1;
            }
            max = max.max(if err.is_nan() { f32::INFINITY } else { err });
        }
        r.max_abs_err = Some(max);
    }
    Ok(r)
}

#[cfg(all(test, feature = "emu"))]
mod tests {
    use super::*;
    use crate::adreno::AdrenoOptions;
    use crate::emu::kgsl::{KgslModel, ModelConfig};

    #[test]
    fn selftest_runs_through_the_model_and_says_outputs_were_not_checked() {
        let mut dev = AdrenoDevice::open(
            KgslModel::new(ModelConfig::default()),
            AdrenoOptions::default(),
        )
        .unwrap();
        let r = run(&mut dev, false, 3).unwrap();
        assert!(r.passed());
        assert_eq!(r.max_abs_err, None);
        assert_eq!(r.total_ns.len(), 3);
        // two timestamps 192 ticks apart per dispatch (model default) → 10 µs
        assert_eq!(r.device_ns, vec![10_000; 3]);
        assert!(r
            .lines()
            .iter()
            .any(|l| l.contains("outputs NOT checked") && l.contains("ran no shader")));
    }

    #[test]
    fn embedded_isa_matches_metadata() {
        assert_eq!(ISA.len(), kernel_meta().image_size as usize);
    }
}
