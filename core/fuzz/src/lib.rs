//! Shared pieces of the fuzz targets: resealing mutated inputs, the seed bundles, and the rule that
//! decides when a fuzzed CPU bundle may actually be *run*.
//!
//! A bundle's kernels are native code: running one is trusting it, whatever the validator says, so
//! the load-and-run target executes only kernels it knows (byte-identical to a tinygrad-compiled
//! fixture) with launch arguments that cover what the kernel is known to touch. Every other kernel
//! is still parsed, laid out and linked by the CPU loader — the part that must survive hostile ELF
//! bytes — but never called.
#![forbid(unsafe_code)]
use modelrt_core::bundle::writer::{
    f32_bytes, launch, whole, write_bundle, BundleSpec, ReferenceSpec,
};
use modelrt_core::bundle::{ArgRef, BufRef, BufferKind, KernelDesc, Producer, Step, HEADER_LEN};
use modelrt_core::Bundle;
use modelrt_cpu::features_for_baseline;
use modelrt_hal::target::{
    CpuArch, CpuKernelMeta, DType, KernelMeta, ParamDesc, ParamKind, Target,
};

/// tinygrad 0.14.0 `E_1024_4` for x86-64-v3 (`targets/cpu/tests/fixtures/cpu/tinygrad_E_1024_4.c`):
/// `out[i] = max(a[i]*b[i], 0) + 1.5` over 4096 f32, with 16-byte-aligned float4 loads and stores.
pub const E_1024_4: &[u8] =
    include_bytes!("../../../targets/cpu/tests/fixtures/cpu/x86_64/tinygrad_E_1024_4.o");
/// Entry symbol of [`E_1024_4`].
pub const E_1024_4_ENTRY: &str = "E_1024_4";
/// Bytes `E_1024_4` reads or writes through each of its three pointer parameters.
pub const E_1024_4_EXTENT: u64 = 4096 * 4;
/// Alignment `E_1024_4` needs of each pointer (its float4 type is `aligned(16)`).
pub const E_1024_4_ALIGN: u64 = 16;

/// `data` with its length field and both CRCs (body, header) fixed up
/// ([`modelrt_core::bundle::writer::reseal`]), so that mutations reach the body decoder and the
/// validator instead of stopping at a checksum. `None` when `data` is shorter than a header.
pub fn reseal(data: &[u8]) -> Option<Vec<u8>> {
    if data.len() < HEADER_LEN {
        return None;
    }
    let mut sealed = data.to_vec();
    modelrt_core::bundle::writer::reseal(&mut sealed);
    Some(sealed)
}

/// True if running `b` on the CPU backend executes only known kernels within their known extents:
/// every kernel is [`E_1024_4`] with its exact parameter list and one thread, and every launch
/// passes it buffer views of at least [`E_1024_4_EXTENT`] bytes at 16-byte-aligned arena offsets,
/// its first (the one it stores to) in a buffer the backend keeps writable: not a weight the bundle
/// allows to be read in place ([`Bundle::in_place_weight`]), which a backend given the file mapping
/// serves from read-only pages — the kernel's store would fault there, as `modelrt_core::bundle::in_place`
/// says, because the format does not record which parameters a kernel writes (found by
/// `capi_load_run`, docs/fuzzing.md).
pub fn runnable(b: &Bundle<'_>) -> bool {
    let body = b.body();
    let known = body.kernels.iter().all(|k| {
        k.is_ok_and(|k| {
            k.binary == E_1024_4
                && k.entry == E_1024_4_ENTRY
                && k.params.as_slice() == e_1024_4_params()
                && k.meta == KernelMeta::Cpu(CpuKernelMeta { threads: 1 })
        })
    });
    known
        && body
            .init
            .iter()
            .chain(body.run.iter())
            .all(|s| s.is_ok_and(|s| launch_in_extent(b, &s)))
}

fn launch_in_extent(b: &Bundle<'_>, step: &Step) -> bool {
    let (Step::Launch { args, .. } | Step::LaunchThreads { args, .. }) = step else {
        return true; // copies are fully bounds-checked by the validator and the backend
    };
    let stores_to_in_place_weight = match args.first() {
        Some(ArgRef::Buffer { buffer, .. }) => b.in_place_weight(*buffer).is_ok(),
        _ => false,
    };
    !stores_to_in_place_weight
        && args.iter().all(|a| match *a {
            ArgRef::Buffer {
                buffer,
                offset,
                size,
            } => b.body().buffers.get(buffer as usize).is_ok_and(|d| {
                size >= E_1024_4_EXTENT
                    && d.arena_offset
                        .checked_add(offset)
                        .is_some_and(|at| at % E_1024_4_ALIGN == 0)
            }),
            ArgRef::Int(_) => false,
        })
}

fn e_1024_4_params() -> [ParamDesc; 3] {
    [ParamDesc {
        kind: ParamKind::Buffer,
        dtype: DType::F32,
    }; 3]
}

/// Seed bundles for the corpus: `(file name, bytes)`. Both run `E_1024_4` on the CPU target; one
/// also copies through a scratch buffer and carries reference data so the self-check path is fuzzed.
pub fn seed_bundles() -> Vec<(&'static str, Vec<u8>)> {
    let n = (E_1024_4_EXTENT / 4) as usize;
    let values = |f: &dyn Fn(usize) -> f32| f32_bytes(&(0..n).map(f).collect::<Vec<_>>());
    let w = values(&|i| (i % 7) as f32 - 2.0);
    let x = values(&|i| ((i % 5) as f32) * 0.25);
    // y = max(x*w, 0) + 1.5, written out from the kernel's C source (tinygrad_E_1024_4.c).
    let y = values(&|i| ((((i % 5) as f32) * 0.25) * ((i % 7) as f32 - 2.0)).max(0.0) + 1.5);
    let plain = spec(&w, false, None);
    let checked = spec(&w, true, Some((&x, &y)));
    vec![
        ("cpu_e1024.mrt", write_bundle(&plain).expect("seed bundle")),
        (
            "cpu_e1024_copy_ref.mrt",
            write_bundle(&checked).expect("seed bundle"),
        ),
    ]
}

fn spec<'a>(w: &'a [u8], copy: bool, reference: Option<(&'a [u8], &'a [u8])>) -> BundleSpec<'a> {
    let size = E_1024_4_EXTENT;
    let mut spec = BundleSpec::new(
        Target::Cpu {
            arch: CpuArch::X86_64,
            baseline: "x86-64-v3",
            features: features_for_baseline(CpuArch::X86_64, "x86-64-v3").expect("known baseline"),
        },
        Producer {
            tinygrad: "0.14.0",
            tinymesa: None,
            source_sha256: [0; 32],
            dev: "CPU:CLANG:x86_64,x86-64-v3",
            flags: "",
        },
    );
    let x = spec.buffer("input:x", size, DType::F32, BufferKind::Input, None);
    let wb = spec.buffer("onnx:w", size, DType::F32, BufferKind::Weight, Some(w));
    let y = spec.buffer("output:y", size, DType::F32, BufferKind::Output, None);
    let out = if copy {
        spec.buffer("arena", size, DType::F32, BufferKind::Scratch, None)
    } else {
        y
    };
    let kernel = spec.kernel(KernelDesc {
        name: E_1024_4_ENTRY,
        entry: E_1024_4_ENTRY,
        binary: E_1024_4,
        source: None,
        params: e_1024_4_params().into_iter().collect(),
        meta: KernelMeta::Cpu(CpuKernelMeta { threads: 1 }),
    });
    let one = [1, 1, 1];
    spec.run.push(launch(
        kernel,
        &[whole(out, size), whole(x, size), whole(wb, size)],
        one,
        one,
    ));
    if copy {
        spec.run.push(Step::Copy {
            dst: BufRef {
                buffer: y,
                offset: 0,
            },
            src: BufRef {
                buffer: out,
                offset: 0,
            },
            size,
        });
    }
    spec.input("x", x, DType::F32, &[size / 4])
        .output("y", y, DType::F32, &[size / 4]);
    spec.reference = reference.map(|(x, y)| ReferenceSpec {
        seed: 0,
        atol: 1e-6,
        rtol: 1e-6,
        inputs: vec![x],
        outputs: vec![y],
    });
    spec
}

/// Bytes in front of the bundle in a `capi_load_run` input: the arguments of the C API calls
/// (load flags, device, arena size, the seed of the per-buffer choices; see that target).
pub const CAPI_ARGS: usize = 16;

/// Seeds of `capi_load_run`: each seed bundle behind a few argument prefixes (all-zero: every
/// buffer in its own slot, the call succeeds; others: read instead of mapped, buffers placed at
/// chosen offsets of one arena so that they overlap).
pub fn capi_seeds() -> Vec<(String, Vec<u8>)> {
    let prefixes: [[u8; CAPI_ARGS]; 3] = [
        [0; CAPI_ARGS],
        [1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0],
        [0, 0, 0, 1, 0x55, 0xaa, 0x55, 0xaa, 9, 9, 9, 9, 0, 0, 0, 0],
    ];
    let mut out = Vec::new();
    for (name, bytes) in seed_bundles() {
        for (i, p) in prefixes.iter().enumerate() {
            let mut v = p.to_vec();
            v.extend_from_slice(&bytes);
            out.push((format!("{name}.args{i}"), v));
        }
    }
    out
}
