//! Executor dispatch overhead: synthetic CPU bundles that launch one tiny kernel (`y[i] = x[i] + 1`,
//! compiled from C by clang with tinygrad's CLANG flags) `n` times in a row. The step-time
//! difference between a long and a one-launch chain, divided by the extra launches, is the cost of
//! one launch through `Executor::run` → `CpuDevice::submit` with a near-zero kernel body. With
//! `threads > 1` the kernel takes tinygrad's `core_id` parameter and each launch fans out over the
//! CPU backend's worker pool, so the figure includes the cross-thread hand-off.
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use modelrt_core::bundle::writer::{
    f32_bytes, launch, whole, write_bundle, BundleSpec, ReferenceSpec,
};
use modelrt_core::bundle::{ArgRef, BufferKind, KernelDesc, Producer};
use modelrt_hal::target::{
    CpuArch, CpuKernelMeta, DType, KernelMeta, ParamDesc, ParamKind, Target,
};

/// The single-threaded kernel: tinygrad's naming and signature style (restrict float pointers).
pub const KERNEL_C: &str = "void add1(float* restrict data0, const float* restrict data1) { data0[0] = data1[0] + 1.0f; }\n";
/// The threaded kernel: one element per `core_id`, as tinygrad splits CPU kernels with THREADS=1.
pub const KERNEL_THREADED_C: &str =
    "void add1(float* restrict data0, const float* restrict data1, int core_id) { data0[core_id] = data1[core_id] + 1.0f; }\n";
/// The entry symbol of both.
pub const KERNEL_ENTRY: &str = "add1";

/// The C source for a kernel split into `threads` core ids (1 = no `core_id` parameter).
pub fn kernel_source(threads: u32) -> &'static str {
    if threads > 1 {
        KERNEL_THREADED_C
    } else {
        KERNEL_C
    }
}

/// (clang --target, cpu flag, bundle baseline) for the host architecture, as tinygrad's
/// `CPU:CLANG:x86_64,x86-64-v3` / `CPU:CLANG:arm64,cortex-a76` compile it.
fn host_flags() -> Result<(CpuArch, &'static str, String, &'static str)> {
    match CpuArch::host() {
        Some(CpuArch::X86_64) => Ok((
            CpuArch::X86_64,
            "x86_64-none-unknown-elf",
            "-march=x86-64-v3".into(),
            "x86-64-v3",
        )),
        Some(CpuArch::Aarch64) => Ok((
            CpuArch::Aarch64,
            "arm64-none-unknown-elf",
            "-mcpu=cortex-a76".into(),
            "cortex-a76",
        )),
        None => bail!("the overhead benchmark needs an x86_64 or aarch64 host"),
    }
}

/// Compile [`kernel_source`]`(threads)` to a relocatable ELF object with tinygrad's ClangCompiler
/// flags.
pub fn compile_kernel(scratch: &Path, threads: u32) -> Result<Vec<u8>> {
    let (arch, triple, cpu, _) = host_flags()?;
    std::fs::create_dir_all(scratch)
        .with_context(|| format!("cannot create {}", scratch.display()))?;
    let src = scratch.join(format!("add1_t{threads}.c"));
    let obj = scratch.join(format!("add1_t{threads}.o"));
    std::fs::write(&src, kernel_source(threads))
        .with_context(|| format!("cannot write {}", src.display()))?;
    let mut cmd = Command::new("clang");
    cmd.args([
        "-c",
        "-x",
        "c",
        "-O2",
        "-fPIC",
        "-ffreestanding",
        "-fno-math-errno",
        "-nostdlib",
        "-fno-ident",
    ])
    .arg(format!("--target={triple}"));
    if arch == CpuArch::Aarch64 {
        cmd.arg("-ffixed-x18");
    }
    let status = cmd
        .arg(cpu)
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .status()
        .context("cannot run clang (apt-get install clang)")?;
    if !status.success() {
        bail!("clang failed to compile the overhead kernel ({status})");
    }
    std::fs::read(&obj).with_context(|| format!("cannot read {}", obj.display()))
}

/// A bundle whose run schedule launches the kernel object `obj` (compiled for `threads`)
/// `launches` times on a `threads`-element input `x` and output `y`, with a reference (x = 2 → y = 3,
/// from the kernel's C semantics).
pub fn chain_bundle(obj: &[u8], threads: u32, launches: usize) -> Result<Vec<u8>> {
    if launches == 0 || threads == 0 {
        bail!("an overhead chain needs at least one launch and one thread");
    }
    let n = threads as u64;
    let (arch, _, _, baseline) = host_flags()?;
    let features =
        modelrt_cpu::features_for_baseline(arch, baseline).context("unknown CPU baseline")?;
    let f32_buf = ParamDesc {
        kind: ParamKind::Buffer,
        dtype: DType::F32,
    };
    let kernel = KernelDesc {
        name: KERNEL_ENTRY,
        entry: KERNEL_ENTRY,
        binary: obj,
        source: None,
        params: if threads > 1 {
            [
                f32_buf,
                f32_buf,
                ParamDesc {
                    kind: ParamKind::CoreId,
                    dtype: DType::I32,
                },
            ]
            .into_iter()
            .collect()
        } else {
            [f32_buf, f32_buf].into_iter().collect()
        },
        meta: KernelMeta::Cpu(CpuKernelMeta { threads }),
    };
    let mut spec = BundleSpec::new(
        Target::Cpu {
            arch,
            baseline,
            features,
        },
        Producer {
            tinygrad: "none (synthetic overhead chain)",
            tinymesa: None,
            source_sha256: [0; 32],
            dev: "CPU:CLANG (clang with tinygrad's ClangCompiler flags)",
            flags: "",
        },
    );
    let x = spec.buffer("input:x", 4 * n, DType::F32, BufferKind::Input, None);
    let y = spec.buffer("output:y", 4 * n, DType::F32, BufferKind::Output, None);
    let k = spec.kernel(kernel);
    let mut args = vec![whole(y, 4 * n), whole(x, 4 * n)];
    if threads > 1 {
        args.push(ArgRef::Int(0));
    }
    spec.run = vec![launch(k, &args, [threads, 1, 1], [1, 1, 1]); launches];
    spec.input("x", x, DType::F32, &[n])
        .output("y", y, DType::F32, &[n]);
    let x_ref = f32_bytes(&vec![2.0; n as usize]);
    let y_ref = f32_bytes(&vec![3.0; n as usize]);
    spec.reference = Some(ReferenceSpec {
        seed: 0,
        atol: 0.0,
        rtol: 0.0,
        inputs: vec![&x_ref],
        outputs: vec![&y_ref],
    });
    write_bundle(&spec).map_err(|e| anyhow::anyhow!("cannot write the overhead bundle: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use modelrt_core::bundle::Bundle;
    use modelrt_core::Executor;
    use modelrt_cpu::CpuDevice;

    #[test]
    fn chain_runs_every_launch_and_computes_x_plus_one() {
        let dir = std::env::temp_dir().join(format!("mrt-overhead-{}", std::process::id()));
        for threads in [1u32, 2] {
            let obj = compile_kernel(&dir, threads).unwrap();
            let bytes = chain_bundle(&obj, threads, 50).unwrap();
            let bundle = Bundle::parse(&bytes).unwrap();
            assert_eq!(bundle.body().run.len(), 50);
            let mut ex = Executor::load(bundle, CpuDevice::new(threads as usize).unwrap()).unwrap();
            let x: Vec<u8> = (0..threads)
                .flat_map(|i| (7.5f32 + i as f32).to_le_bytes())
                .collect();
            let mut y = vec![0u8; 4 * threads as usize];
            ex.run(&[&x], &mut [&mut y]).unwrap();
            let got: Vec<f32> = y
                .chunks(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let want: Vec<f32> = (0..threads).map(|i| 8.5 + i as f32).collect();
            assert_eq!(got, want, "threads {threads}");
            assert!(chain_bundle(&obj, threads, 0).is_err());
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
