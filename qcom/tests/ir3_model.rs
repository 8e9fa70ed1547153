//! The KGSL model with shader execution (`ModelConfig::execute_shaders`) runs the embedded selftest kernel —
//! tinygrad's `E_8_32_4`, c = a·3.7 + b, ISA captured from a real IR3 compile — through the whole Adreno backend
//! and computes its outputs; a kernel reading outside every GPU object is a GPU fault naming the kernel.
use modelrt_qcom::adreno::{AdrenoDevice, AdrenoOptions};
use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};
use modelrt_qcom::selftest;

fn executing_model() -> KgslModel {
    KgslModel::new(ModelConfig {
        execute_shaders: true,
        ..Default::default()
    })
}

#[test]
fn selftest_kernel_computes_a_times_3_7_plus_b() {
    let mut dev = AdrenoDevice::open(executing_model(), AdrenoOptions::default()).unwrap();
    let r = selftest::run(&mut dev, true, 2).unwrap();
    // selftest::run compares every output with a·3.7 + b computed on the host (f32, tolerance 1e-5·|want|).
    assert_eq!(r.mismatches, 0, "{:?}", r.lines());
    let err = r.max_abs_err.expect("outputs were checked");
    assert!(err <= 1e-6, "max abs error {err}");
    let s = dev.with_kgsl(|m| m.exec_stats());
    assert_eq!(s.dispatches, 2);
    // 8 work groups of 32 fibers per dispatch.
    assert!(s.fiber_instrs >= 2 * 256 * 10, "{s:?}");
}

#[test]
fn without_execution_the_outputs_stay_untouched() {
    let mut dev = AdrenoDevice::open(
        KgslModel::new(ModelConfig::default()),
        AdrenoOptions::default(),
    )
    .unwrap();
    let r = selftest::run(&mut dev, true, 1).unwrap();
    // Nothing computed c, so every output (still 0) mismatches a·3.7 + b.
    assert!(r.mismatches > 1000, "{:?}", r.lines());
    assert_eq!(dev.with_kgsl(|m| m.exec_stats().dispatches), 0);
}

/// Launch the selftest kernel over `groups` work groups of 32 fibers (4 floats each) on an arena of
/// `arena` bytes with c, a, b at the given (offset, size), on `threads` interpreter threads; the
/// submission's error.
fn faulting_launch(arena: u64, args: [(u64, u64); 3], groups: u32, threads: usize) -> String {
    use modelrt_hal::device::{Arg, Device, KernelImage, Queue};
    use modelrt_hal::target::{DType, KernelMeta, ParamDesc, ParamKind};
    let mut model = executing_model();
    model.set_ir3_threads(threads);
    let mut dev = AdrenoDevice::open(model, AdrenoOptions::default()).unwrap();
    dev.alloc_arena(arena).unwrap();
    let meta = KernelMeta::Ir3(selftest::kernel_meta());
    let params = [ParamDesc {
        kind: ParamKind::Buffer,
        dtype: DType::F32,
    }; 3];
    let k = dev
        .load_kernel(&KernelImage {
            name: "E_8_32_4",
            entry: "E_8_32_4",
            binary: selftest::ISA,
            params: &params,
            meta: &meta,
        })
        .unwrap();
    let mut q = dev.create_queue().unwrap();
    q.wait(0).unwrap();
    let args = args.map(|(offset, size)| Arg::Buffer { offset, size });
    q.exec(k, &args, [groups, 1, 1], [32, 1, 1]).unwrap();
    q.signal(1).unwrap();
    dev.submit(&mut q).unwrap_err().to_string()
}

#[test]
fn a_kernel_reading_past_its_object_is_a_gpu_fault_naming_the_kernel() {
    // Three 4 KiB buffers; input `a` is placed 16 bytes before the end of the arena object, so the kernel's
    // 1024-float read of `a` runs off the object.
    let e = faulting_launch(
        3 * 4096,
        [(0, 4096), (3 * 4096 - 16, 16), (4096, 4096)],
        8,
        1,
    );
    assert!(
        e.contains("kernel E_8_32_4") && e.contains("GPU fault"),
        "{e}"
    );
}

#[test]
fn a_fault_in_a_parallel_work_group_is_the_serial_runs_fault() {
    // 40 work groups = 3 batches of up to 16 (512 fibers). Each work group reads 512 bytes of `a`, which starts
    // 10 240 bytes before the end of the 64 KiB arena: work groups 20…39 read past it, so batches 1 and 2
    // fault, and the first faulting fiber of batch 1 is fiber 128 (work group 20's first).
    let args = [(0, 20480), (65536 - 10240, 10240), (20480, 20480)];
    let serial = faulting_launch(65536, args, 40, 1);
    assert!(
        serial.contains("kernel E_8_32_4")
            && serial.contains("work groups (16, 0, 0)…(31, 0, 0)")
            && serial.contains("GPU fault in fiber 128"),
        "{serial}"
    );
    // Each model maps its arena at its own host address: compare the texts with the address cut out.
    let unaddressed = |e: &str| {
        let (head, tail) = e.split_once("read 0x").expect("the fault names the read");
        let end = tail.find('+').expect("address+length");
        format!("{head}read ADDR{}", &tail[end..])
    };
    for threads in [2, 3] {
        assert_eq!(
            unaddressed(&faulting_launch(65536, args, 40, threads)),
            unaddressed(&serial),
            "{threads} threads"
        );
    }
}
