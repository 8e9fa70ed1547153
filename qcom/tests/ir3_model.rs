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

#[test]
fn a_kernel_reading_past_its_object_is_a_gpu_fault_naming_the_kernel() {
    use modelrt_hal::device::{Arg, Device, KernelImage, Queue};
    use modelrt_hal::target::{DType, KernelMeta, ParamDesc, ParamKind};
    let mut dev = AdrenoDevice::open(executing_model(), AdrenoOptions::default()).unwrap();
    // Three 4 KiB buffers; input `a` is placed 16 bytes before the end of the arena object, so the kernel's
    // 1024-float read of `a` runs off the object.
    dev.alloc_arena(3 * 4096).unwrap();
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
    let args = [
        Arg::Buffer {
            offset: 0,
            size: 4096,
        },
        Arg::Buffer {
            offset: 3 * 4096 - 16,
            size: 16,
        },
        Arg::Buffer {
            offset: 4096,
            size: 4096,
        },
    ];
    q.exec(k, &args, [8, 1, 1], [32, 1, 1]).unwrap();
    q.signal(1).unwrap();
    let e = dev.submit(&mut q).unwrap_err().to_string();
    assert!(
        e.contains("kernel E_8_32_4") && e.contains("GPU fault"),
        "{e}"
    );
}
