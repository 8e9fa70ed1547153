//! Weights read in place from a mapped bundle file on the CPU backend (`cpu::weights`): the demo
//! bundle (tinygrad kernels, onnxruntime reference) gives byte-identical outputs mapped and read;
//! the stateful bundle binds its weight but never its state, which still advances and resets; a
//! weight the schedule copies into is uploaded as before; the arena's resident pages drop by
//! exactly the in-place weight's pages (measured with `mincore`, expected from the buffer table);
//! and every write into a bound weight is refused. Expected values are `state_common`'s closed forms
//! or the bundle's embedded reference.
mod state_common;

use std::path::{Path, PathBuf};

use modelrt_core::bundle::writer::{launch, whole, write_bundle, BundleSpec};
use modelrt_core::bundle::{BufRef, BufferKind, KernelDesc, Producer, Step};
use modelrt_core::verify::compare;
use modelrt_core::{Bundle, Executor};
use modelrt_cpu::{CpuDevice, CpuError};
use modelrt_hal::device::{Device, Queue};
use modelrt_hal::target::{CpuArch, CpuKernelMeta, DType, KernelMeta, Target};
use modelrt_targets::bundle_file::{BundleFile, Source};
use modelrt_targets::runner::{load, load_mapped, LoadOptions};
use state_common::{
    buffer_params, bytes_f32, expected, f32_bytes, fixture, stateful_bundle, w0, x, N,
};

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("modelrt-weights-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn mapped(p: &Path) -> BundleFile {
    let f = BundleFile::open(p, true).unwrap();
    assert_eq!(f.source(), Source::Mapped);
    f
}

fn run(ex: &mut Executor<'_, CpuDevice>, input: &[f32], outs: usize) -> Vec<Vec<f32>> {
    let mut o = vec![vec![0u8; N * 4]; outs];
    let mut refs: Vec<&mut [u8]> = o.iter_mut().map(Vec::as_mut_slice).collect();
    ex.run(&[&f32_bytes(input)], &mut refs).unwrap();
    o.iter().map(|b| bytes_f32(b)).collect()
}

fn cpu_target() -> (Target<'static>, &'static str) {
    if cfg!(target_arch = "aarch64") {
        (
            Target::Cpu {
                arch: CpuArch::Aarch64,
                baseline: "generic",
                features: 0,
            },
            "aarch64",
        )
    } else {
        (
            Target::Cpu {
                arch: CpuArch::X86_64,
                baseline: "generic",
                features: 0,
            },
            "x86_64",
        )
    }
}

/// A bundle around the `e4` kernel (`data0 = data1 + data2 * 2.5`): buffers 0 input `x` (N
/// floats), 1 weight `w` (`w_len` floats, the kernel reads the first N), 2 weight `v` (N floats of
/// 9.0), 3 output `y`. Per run: with `copy_into_v`, `v = x` first; then `y = w[..N] + 2.5 * v`.
fn e4_bundle(w: &[f32], copy_into_v: bool) -> Vec<u8> {
    let (target, dir) = cpu_target();
    let e4: &'static [u8] = Box::leak(fixture(&format!("{dir}/e4.o")).into_boxed_slice());
    let leak = |v: &[f32]| -> &'static [u8] { Box::leak(f32_bytes(v).into_boxed_slice()) };
    let n = (N * 4) as u64;
    let mut spec = BundleSpec::new(
        target,
        Producer {
            tinygrad: "0.14.0",
            tinymesa: None,
            source_sha256: [5; 32],
            dev: "CPU",
            flags: "",
        },
    );
    let mut buf = |label, size, kind, init| spec.buffer(label, size, DType::F32, kind, init);
    let x = buf("input:x", n, BufferKind::Input, None);
    let wb = buf("w", (w.len() * 4) as u64, BufferKind::Weight, Some(leak(w)));
    let v = buf("v", n, BufferKind::Weight, Some(leak(&[9.0; N])));
    let y = buf("output:y", n, BufferKind::Output, None);
    let kernel = spec.kernel(KernelDesc {
        name: "E_4",
        entry: "E_4",
        binary: e4,
        source: None,
        params: buffer_params().into_iter().collect(),
        meta: KernelMeta::Cpu(CpuKernelMeta { threads: 1 }),
    });
    if copy_into_v {
        spec.run.push(Step::Copy {
            dst: BufRef {
                buffer: v,
                offset: 0,
            },
            src: BufRef {
                buffer: x,
                offset: 0,
            },
            size: n,
        });
    }
    let one = [1, 1, 1];
    spec.run.push(launch(
        kernel,
        &[whole(y, n), whole(wb, n), whole(v, n)],
        one,
        one,
    ));
    spec.input("x", x, DType::F32, &[N as u64])
        .output("y", y, DType::F32, &[N as u64]);
    write_bundle(&spec).unwrap()
}

/// The demo bundle for this host's architecture (a real tinygrad bundle with an onnxruntime
/// reference).
fn host_demo() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    dir.join(format!("assets/demo-{}.mrt", std::env::consts::ARCH))
}

#[test]
fn demo_outputs_are_identical_mapped_and_read_and_match_the_reference() {
    let path = host_demo();
    let (m, r) = (mapped(&path), BundleFile::open(&path, false).unwrap());
    assert_eq!(r.source(), Source::ReadByRequest);
    let opts = LoadOptions::on(modelrt_targets::runner::device("cpu").unwrap());
    let mut results = Vec::new();
    for file in [&m, &r] {
        let b = Bundle::parse(file.bytes()).unwrap();
        let reference = b.body().reference.unwrap();
        let inputs: Vec<&[u8]> = reference.inputs.iter().map(|t| t.unwrap().data).collect();
        let mut model = load_mapped(b.clone(), file.mapping(), opts.clone()).unwrap();
        let mem = model.memory().unwrap();
        let mut outs: Vec<Vec<u8>> = b
            .body()
            .outputs
            .iter()
            .map(|t| vec![0u8; t.unwrap().byte_len() as usize])
            .collect();
        let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
        model.run(&inputs, &mut refs).unwrap();
        // Every output agrees with onnxruntime's, embedded at compile time.
        for ((t, want), got) in b
            .body()
            .outputs
            .iter()
            .zip(reference.outputs.iter())
            .zip(&outs)
        {
            let c = compare(
                t.unwrap().dtype,
                got,
                want.unwrap().data,
                reference.atol as f64,
                reference.rtol as f64,
            );
            assert!(c.ok(), "{:?}: {c:?}", file.source());
        }
        results.push((outs, mem));
    }
    // Mapped: weights in place (how many the buffer table holds, all of them); read: none.
    let b = Bundle::parse(m.bytes()).unwrap();
    let weights: Vec<u64> = b
        .body()
        .buffers
        .iter()
        .map(Result::unwrap)
        .filter(|d| d.kind == BufferKind::Weight)
        .map(|d| d.size)
        .collect();
    assert!(!weights.is_empty());
    assert_eq!(results[0].1.weights.bound, weights.len());
    assert_eq!(
        results[0].1.weights.bound_bytes,
        weights.iter().sum::<u64>()
    );
    assert_eq!(results[1].1.weights.bound, 0);
    assert_eq!(results[0].0, results[1].0, "mapped and read outputs differ");
    // The same through `load` (no mapping): identical too.
    let mut model = load(Bundle::parse(r.bytes()).unwrap(), opts).unwrap();
    assert_eq!(model.memory().unwrap().weights.bound, 0);
}

#[test]
fn stateful_bundle_binds_its_weight_never_its_state_and_state_still_works() {
    let p = temp_file("stateful.mrt", &stateful_bundle());
    let file = mapped(&p);
    let b = Bundle::parse(file.bytes()).unwrap();
    let mut dev = CpuDevice::new(1).unwrap();
    let rep = dev.bind_weights(&b, file.mapping().unwrap()).unwrap();
    // Buffer 1 is the only weight; the two state buffers (written every step) are not bound.
    assert_eq!((rep.bound, rep.bound_bytes), (1, (N * 4) as u64));
    assert!(rep.copied.is_empty(), "{:?}", rep.copied);
    let mut ex = Executor::load(b, dev).unwrap();
    for k in 0..6 {
        let (_, y, q) = expected(9, k);
        assert_eq!(run(&mut ex, &x(9, k), 2), vec![y, q], "step {k}");
    }
    ex.reset_state().unwrap();
    let (_, y, q) = expected(9, 0);
    assert_eq!(run(&mut ex, &x(9, 0), 2), vec![y, q], "after reset");
    // The weight reads back as its bytes from the file.
    let w_at = ex.bundle().body().buffers.get(1).unwrap().arena_offset;
    let mut w = vec![0u8; N * 4];
    ex.device_mut().download(w_at, &mut w).unwrap();
    assert_eq!(bytes_f32(&w), w0());
}

#[test]
fn a_weight_the_schedule_copies_into_is_uploaded_as_before() {
    let p = temp_file("copied.mrt", &e4_bundle(&w0(), true));
    let file = mapped(&p);
    let b = Bundle::parse(file.bytes()).unwrap();
    let mut dev = CpuDevice::new(1).unwrap();
    let rep = dev.bind_weights(&b, file.mapping().unwrap()).unwrap();
    assert_eq!(rep.bound, 1);
    assert_eq!(rep.copied, vec![(2, "a copy step writes into it")]);
    let mut ex = Executor::load(b, dev).unwrap();
    for k in 0..3 {
        let xs = x(4, k);
        let want: Vec<f32> = w0().iter().zip(&xs).map(|(w, x)| w + 2.5 * x).collect();
        assert_eq!(run(&mut ex, &xs, 1), vec![want], "run {k}");
    }
}

/// Arena bytes resident after one load and run (`mincore`), with or without binding weights.
fn resident_after_run(bytes_file: &BundleFile, bind: bool) -> (u64, u64) {
    let b = Bundle::parse(bytes_file.bytes()).unwrap();
    let mut dev = CpuDevice::new(1).unwrap();
    if bind {
        dev.bind_weights(&b, bytes_file.mapping().unwrap()).unwrap();
    }
    let mut ex = Executor::load(b, dev).unwrap();
    let xs = x(2, 0);
    let want: Vec<f32> = w0().iter().map(|w| w + 2.5 * 9.0).collect();
    assert_eq!(run(&mut ex, &xs, 1), vec![want]);
    let d = ex.device_mut();
    (d.arena_resident_bytes().unwrap(), d.arena_size())
}

#[test]
fn arena_residency_drops_by_the_in_place_weight_pages() {
    // A 1 MiB weight whose first N floats are what the kernel reads.
    let mut w = vec![0.25f32; 1 << 18];
    w[..N].copy_from_slice(&w0());
    let p = temp_file("big.mrt", &e4_bundle(&w, false));
    let file = mapped(&p);
    let (copied, arena) = resident_after_run(&file, false);
    let (in_place, arena2) = resident_after_run(&file, true);
    assert_eq!(arena, arena2);
    // Expected drop, from the buffer table alone: the pages that only weight buffers cover.
    let b = Bundle::parse(file.bytes()).unwrap();
    let page = 4096u64;
    let descs: Vec<_> = b.body().buffers.iter().map(Result::unwrap).collect();
    let owned = |d: &modelrt_core::bundle::BufferDesc<'_>, pg: u64| {
        pg * page < d.arena_offset + d.size && d.arena_offset < (pg + 1) * page
    };
    let weight_only_pages = (0..arena / page)
        .filter(|&pg| {
            descs
                .iter()
                .filter(|d| owned(d, pg))
                .all(|d| d.kind == BufferKind::Weight)
                && descs.iter().any(|d| owned(d, pg))
        })
        .count() as u64;
    assert!(weight_only_pages >= 256, "{weight_only_pages}");
    assert_eq!(
        copied - in_place,
        weight_only_pages * page,
        "resident arena: {copied} copied vs {in_place} in place of {arena}"
    );
}

#[test]
fn writes_into_a_bound_weight_are_refused() {
    let p = temp_file("refuse.mrt", &e4_bundle(&w0(), false));
    let file = mapped(&p);
    let b = Bundle::parse(file.bytes()).unwrap();
    let w_desc = b.body().buffers.get(1).unwrap();
    let w_bytes = b.init_bytes(&w_desc).unwrap();
    let mut dev = CpuDevice::new(1).unwrap();
    dev.bind_weights(&b, file.mapping().unwrap()).unwrap();
    let mut ex = Executor::load(b.clone(), dev).unwrap();
    let d = ex.device_mut();
    let at = w_desc.arena_offset;
    // Uploading the very mapped bytes is the executor's (no-op) weight upload; anything else is a
    // write into the weight.
    d.upload(at, w_bytes).unwrap();
    let other = vec![0u8; N * 4];
    assert!(matches!(
        d.upload(at, &other),
        Err(CpuError::WeightWrite { .. })
    ));
    assert!(matches!(
        d.upload(at + 4, &other[..4]),
        Err(CpuError::WeightWrite { .. })
    ));
    let mut q = d.create_queue().unwrap();
    let y_at = b.body().buffers.get(3).unwrap().arena_offset;
    assert!(matches!(
        q.copy(at, y_at, 16),
        Err(CpuError::WeightWrite { .. })
    ));
    // A copy out of the weight reads the file's bytes.
    q.copy(y_at, at, 16).unwrap();
    d.submit(&mut q).unwrap();
    let mut y = vec![0u8; 16];
    d.download(y_at, &mut y).unwrap();
    assert_eq!(bytes_f32(&y), w0());
    // A view reaching past the weight's end is refused.
    assert!(matches!(
        q.copy(y_at, at + 8, 16),
        Err(CpuError::WeightStraddled { .. })
    ));
}

#[test]
fn binding_needs_the_bundle_s_own_mapping_and_comes_before_its_load() {
    let bytes = e4_bundle(&w0(), false);
    let p = temp_file("foreign.mrt", &bytes);
    let file = mapped(&p);
    // A bundle parsed from other bytes than the mapping: nothing is bound.
    let b = Bundle::parse(&bytes).unwrap();
    let mut dev = CpuDevice::new(1).unwrap();
    let rep = dev.bind_weights(&b, file.mapping().unwrap()).unwrap();
    assert_eq!(rep.bound, 0);
    assert_eq!(
        rep.copied,
        vec![
            (1, "its bytes are not in the bundle mapping"),
            (2, "its bytes are not in the bundle mapping")
        ]
    );
    let mut ex = Executor::load(b.clone(), dev).unwrap();
    assert!(matches!(
        ex.device_mut().bind_weights(&b, file.mapping().unwrap()),
        Err(CpuError::WeightsAfterArena)
    ));
    // Weights bound for one bundle, then another bundle (another arena) loaded: refused.
    let mut w = vec![0.5f32; 1 << 12];
    w[..N].copy_from_slice(&w0());
    let big = temp_file("other.mrt", &e4_bundle(&w, false));
    let big = mapped(&big);
    let bb = Bundle::parse(big.bytes()).unwrap();
    let mut dev = CpuDevice::new(1).unwrap();
    assert_eq!(
        dev.bind_weights(&bb, big.mapping().unwrap()).unwrap().bound,
        2
    );
    let b = Bundle::parse(file.bytes()).unwrap();
    assert!(matches!(
        Executor::load(b, dev),
        Err(modelrt_core::ExecError::Device(
            CpuError::WeightsForAnotherBundle
        ))
    ));
}

#[test]
fn borrowed_frames_and_in_place_weights_work_together() {
    use modelrt_cpu::frame::cpu_frame;
    use modelrt_targets::frame::{FrameInput, InputPath};
    let p = temp_file("frames.mrt", &stateful_bundle());
    let file = mapped(&p);
    let b = Bundle::parse(file.bytes()).unwrap();
    let mut dev = CpuDevice::new(1).unwrap();
    assert_eq!(
        dev.bind_weights(&b, file.mapping().unwrap()).unwrap().bound,
        1
    );
    let mut ex = Executor::load(b, dev).unwrap();
    // 64-byte aligned storage for the borrowed frame.
    let mut storage = [0u8; N * 4 + 64];
    let skip = (64 - storage.as_ptr() as usize % 64) % 64;
    for k in 0..6 {
        let (_, y_want, q_want) = expected(5, k);
        if k % 2 == 0 {
            // A borrowed frame re-points the input's launch arguments for one submit and puts
            // every argument back afterwards — the weight's on the mapping, not on the arena.
            let frame = &mut storage[skip..skip + N * 4];
            frame.copy_from_slice(&f32_bytes(&x(5, k)));
            let (mut y, mut q) = (vec![0u8; N * 4], vec![0u8; N * 4]);
            let mut paths = [InputPath::Copied];
            cpu_frame(
                &mut ex,
                &mut [FrameInput::Borrow(frame)],
                &mut [&mut y, &mut q],
                &mut paths,
            )
            .unwrap();
            assert_eq!(paths[0], InputPath::ZeroCopy);
            assert_eq!(
                (bytes_f32(&y), bytes_f32(&q)),
                (y_want, q_want),
                "frame {k}"
            );
        } else {
            assert_eq!(run(&mut ex, &x(5, k), 2), vec![y_want, q_want], "step {k}");
        }
    }
}
