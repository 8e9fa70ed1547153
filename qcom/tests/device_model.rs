//! `AdrenoDevice` driven through the HAL `Device`/`Queue` API against the KGSL model: bring-up calls, replay
//! (timeline patching), multi-kernel streams, copies, arena bounds of host transfers, zero-copy input binding, hang
//! reporting, rejection of corrupted streams and fault injection.
use modelrt_hal::device::{Arg, Device, KernelImage, Queue};
use modelrt_hal::target::{DType, Ir3KernelMeta, KernelMeta, ParamDesc, ParamKind, Target};
use modelrt_qcom::adreno::{
    AdrenoDevice, AdrenoError, AdrenoOptions, AdrenoQueue, ExternalBuffer, PROGRESS_OFF,
};
use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};
use modelrt_qcom::kgsl::{self, CommandObject, KgslError, KgslIo};
use modelrt_qcom::selftest;

const B: u64 = 4096;

fn dev(cfg: ModelConfig) -> AdrenoDevice<KgslModel> {
    AdrenoDevice::open(
        KgslModel::new(cfg),
        AdrenoOptions {
            timeout_ms: 50,
            ..Default::default()
        },
    )
    .unwrap()
}

fn params() -> [ParamDesc; 3] {
    [ParamDesc {
        kind: ParamKind::Buffer,
        dtype: DType::F32,
    }; 3]
}

fn load(d: &mut AdrenoDevice<KgslModel>, name: &str) -> modelrt_hal::device::KernelId {
    let meta = KernelMeta::Ir3(selftest::kernel_meta());
    let p = params();
    d.load_kernel(&KernelImage {
        name,
        entry: name,
        binary: selftest::ISA,
        params: &p,
        meta: &meta,
    })
    .unwrap()
}

fn args(base: u64) -> Vec<Arg> {
    (0..3)
        .map(|i| Arg::Buffer {
            offset: base + i * B,
            size: B,
        })
        .collect()
}

/// A 3-buffer arena and the smallest replayable queue: `wait(0) → exec(k) → signal(1)`.
fn single_dispatch_queue(d: &mut AdrenoDevice<KgslModel>) -> AdrenoQueue<KgslModel> {
    d.alloc_arena(3 * B).unwrap();
    let k = load(d, "k");
    let mut q = d.create_queue().unwrap();
    q.wait(0).unwrap();
    q.exec(k, &args(0), [8, 1, 1], [32, 1, 1]).unwrap();
    q.signal(1).unwrap();
    q
}

/// One IB of `size` bytes at `gpuaddr`, as `AdrenoDevice::submit` passes it to GPU_COMMAND.
fn ib_at(gpuaddr: u64, size: u64) -> CommandObject {
    CommandObject {
        gpuaddr,
        size,
        flags: 1,
        ..Default::default()
    }
}

/// Copy `dw` into a fresh object and submit it straight to the model as one IB; the model must reject it.
fn submit_raw_ib(m: &mut KgslModel, dw: &[u32]) -> KgslError {
    let obj = kgsl::alloc_obj(m, dw.len() as u64 * 4).unwrap();
    let bytes: Vec<u8> = dw.iter().flat_map(|x| x.to_le_bytes()).collect();
    obj.write(0, &bytes).unwrap();
    let r = m.gpu_command(1, &[ib_at(obj.gpu_addr(), bytes.len() as u64)]);
    let _ = kgsl::free_obj(m, obj);
    r.unwrap_err()
}

#[test]
fn bring_up_follows_spec_and_checks_target() {
    let d = dev(ModelConfig::default());
    assert_eq!(d.gpu(), 630);
    d.with_kgsl(|m| {
        assert!(m.power_max());
        let t = m.trace();
        assert!(
            t[0].starts_with("GPUOBJ_ALLOC(0x1000"),
            "dummy first: {t:?}"
        );
        assert!(
            t[1].starts_with("DRAWCTXT_CREATE(flags 0x4008a12)"),
            "{t:?}"
        );
    });
    assert!(d
        .check_target(&Target::Adreno {
            chip: 630,
            image: true,
            half: true
        })
        .is_ok());
    assert!(matches!(
        d.check_target(&Target::Adreno {
            chip: 640,
            image: false,
            half: false
        }),
        Err(AdrenoError::WrongChip {
            bundle: 640,
            gpu: 630
        })
    ));
    assert!(matches!(
        d.check_target(&Target::Amd { gfx: 0x1100 }),
        Err(AdrenoError::WrongTarget(_))
    ));
}

#[test]
fn a7xx_is_rejected() {
    let r = AdrenoDevice::open(
        KgslModel::new(ModelConfig {
            chip_id: 0x0703_0001,
            ..Default::default()
        }),
        AdrenoOptions::default(),
    );
    assert!(matches!(
        r,
        Err(AdrenoError::UnsupportedGpu {
            chip_id: 0x0703_0001
        })
    ));
}

#[test]
fn replay_patches_only_timeline_values() {
    let mut d = dev(ModelConfig::default());
    d.alloc_arena(6 * B).unwrap();
    let k0 = load(&mut d, "first");
    let k1 = load(&mut d, "second");
    let mut q = d.create_queue().unwrap();
    q.wait(0).unwrap();
    q.timestamp().unwrap();
    q.exec(k0, &args(0), [8, 1, 1], [32, 1, 1]).unwrap();
    q.exec(k1, &args(3 * B), [4, 1, 1], [64, 1, 1]).unwrap();
    q.timestamp().unwrap();
    q.signal(1).unwrap();
    for _ in 0..3 {
        d.submit(&mut q).unwrap();
    }
    let (arena, _) = d.arena().unwrap();
    d.with_kgsl(|m| {
        let s = m.submitted();
        assert_eq!(s.len(), 3);
        let diff: Vec<usize> = (0..s[0].len()).filter(|&i| s[0][i] != s[1][i]).collect();
        // exactly the wait REF (dword 4) and the signal value change between replays
        assert_eq!(diff.len(), 2, "{diff:?}");
        assert_eq!(diff[0], 4);
        assert_eq!((s[0][4], s[1][4], s[2][4]), (0, 1, 2));
        assert_eq!(m.stats().dispatches, 6);
        assert_eq!(m.dispatches()[1].global, [4, 1, 1]);
        assert_eq!(m.dispatches()[1].local, [64, 1, 1]);
        // constant file: buffer VAs of the second dispatch point at arena + 3B.., immediate 3.7f at byte 64
        let c = &m.dispatches()[1].consts;
        assert_eq!(
            u64::from_le_bytes(c[0..8].try_into().unwrap()),
            arena + 3 * B
        );
        assert_eq!(
            u64::from_le_bytes(c[16..24].try_into().unwrap()),
            arena + 5 * B
        );
        assert_eq!(&c[64..68], &[0xCD, 0xCC, 0x6C, 0x40]);
    });
}

#[test]
fn copy_splits_the_stream_and_moves_arena_bytes() {
    let mut d = dev(ModelConfig::default());
    d.alloc_arena(8 * B).unwrap();
    let k = load(&mut d, "k");
    d.upload(6 * B, &[7u8; 16]).unwrap();
    let mut q = d.create_queue().unwrap();
    q.wait(0).unwrap();
    q.exec(k, &args(0), [8, 1, 1], [32, 1, 1]).unwrap();
    q.copy(7 * B, 6 * B, 16).unwrap();
    q.exec(k, &args(3 * B), [8, 1, 1], [32, 1, 1]).unwrap();
    q.signal(1).unwrap();
    d.submit(&mut q).unwrap();
    let mut out = [0u8; 16];
    d.download(7 * B, &mut out).unwrap();
    assert_eq!(out, [7u8; 16]);
    assert_eq!(d.with_kgsl(|m| m.stats().submissions), 2);
    assert!(matches!(
        q.copy(8 * B, 0, 1),
        Err(AdrenoError::OutOfArena { .. })
    ));
}

#[test]
fn zero_copy_binding_repoints_arguments() {
    let mut d = dev(ModelConfig::default());
    let mut q = single_dispatch_queue(&mut d);
    // a "camera frame" in host memory, page aligned, imported with MAP_USER_MEM
    let frame = vec![0u64; 2 * 4096 / 8];
    let p = frame.as_ptr() as u64;
    let page = (p + 0xFFF) & !0xFFF;
    // SAFETY: `page..page+4096` lies inside `frame`, which outlives the binding and the release below
    // and is not touched while the queue is bound (the model does not write it either).
    let ext = unsafe { d.import_user_memory(page, 4096) }.unwrap();
    assert_eq!(
        d.bind_external(&mut q, B, &ext).unwrap(),
        1,
        "input `a` is the only arg in [B, 2B)"
    );
    d.submit(&mut q).unwrap();
    let (arena, _) = d.arena().unwrap();
    d.with_kgsl(|m| {
        let c = &m.dispatches()[0].consts;
        assert_eq!(u64::from_le_bytes(c[8..16].try_into().unwrap()), page);
        assert_eq!(u64::from_le_bytes(c[0..8].try_into().unwrap()), arena);
    });
    assert_eq!(d.unbind_external(&mut q, B, B).unwrap(), 1);
    d.submit(&mut q).unwrap();
    d.with_kgsl(|m| {
        let c = &m.dispatches()[1].consts;
        assert_eq!(u64::from_le_bytes(c[8..16].try_into().unwrap()), arena + B);
    });
    d.release_external(ext).unwrap();
    // EFAULT: the pointer is already a GPU address (tinygrad's interop rule)
    let mut d2 = dev(ModelConfig {
        user_mem_efault: true,
        ..Default::default()
    });
    // SAFETY: the model never dereferences imported addresses, and nothing is bound or submitted.
    let imported = unsafe { d2.import_user_memory(0x1234_5000, 64) }.unwrap();
    assert!(!imported.is_user_mapping());
    assert_eq!((imported.gpu_addr(), imported.len()), (0x1234_5000, 64));
    // SAFETY: as above.
    let raw = unsafe { ExternalBuffer::from_gpu_addr(0x1234_5000, 64) };
    assert_eq!(raw.as_ref(), Some(&imported));
}

#[test]
fn hang_names_the_kernel() {
    let mut d = dev(ModelConfig {
        hang_at_dispatch: Some(1),
        ..Default::default()
    });
    d.alloc_arena(6 * B).unwrap();
    let k0 = load(&mut d, "E_ok");
    let k1 = load(&mut d, "r_hangs");
    let mut q = d.create_queue().unwrap();
    q.wait(0).unwrap();
    q.exec(k0, &args(0), [8, 1, 1], [32, 1, 1]).unwrap();
    q.exec(k1, &args(3 * B), [8, 1, 1], [32, 1, 1]).unwrap();
    q.signal(1).unwrap();
    let e = d.submit(&mut q).unwrap_err();
    assert!(
        matches!(&e, AdrenoError::Hang { index: 1, kernel, timeout_ms: 50 } if kernel == "r_hangs"),
        "{e}"
    );
    assert!(e.to_string().contains("r_hangs"));
}

#[test]
fn launch_limits_are_checked_before_encoding() {
    let mut d = dev(ModelConfig::default());
    d.alloc_arena(3 * B).unwrap();
    let k = load(&mut d, "k");
    let mut q = d.create_queue().unwrap();
    let e = q.exec(k, &args(0), [1, 1, 1], [1024, 2, 1]).unwrap_err();
    assert!(e.to_string().contains("Too many resources"), "{e}");
    let e = q.exec(k, &args(B), [1, 1, 1], [32, 1, 1]).unwrap_err();
    assert!(matches!(e, AdrenoError::OutOfArena { .. }));
    let e = q
        .exec(
            k,
            &[Arg::Int(1), Arg::Int(2), Arg::Int(3)],
            [1, 1, 1],
            [32, 1, 1],
        )
        .unwrap_err();
    assert!(e.to_string().contains("wrong kind"), "{e}");
    let meta = KernelMeta::Ir3(Ir3KernelMeta {
        image_size: 392,
        ..selftest::kernel_meta()
    });
    let p = params();
    let e = d
        .load_kernel(&KernelImage {
            name: "bad",
            entry: "bad",
            binary: selftest::ISA,
            params: &p,
            meta: &meta,
        })
        .unwrap_err();
    assert!(e.to_string().contains("bad"), "{e}");
}

#[test]
fn model_rejects_corrupted_streams() {
    let mut d = dev(ModelConfig::default());
    let q = single_dispatch_queue(&mut d);
    let ib = q.ib_addr().unwrap();
    let dw = q.dwords().to_vec();
    // flip a parity bit of the NDRANGE header; submit the raw IB through the model directly
    let at = dw
        .iter()
        .position(|&x| x == modelrt_qcom::pm4::pkt4_hdr(0xB990, 12))
        .unwrap();
    let cases: Vec<(usize, u32, &str)> = vec![
        (at, dw[at] ^ (1 << 7), "parity"),
        (at + 2, 999, "NDRANGE dim 0"), // NDRANGE_1 ≠ G·L
    ];
    for (i, v, want) in cases {
        let mut bad = dw.clone();
        bad[i] = v;
        let e = d.with_kgsl(|m| submit_raw_ib(m, &bad));
        assert!(e.to_string().contains(want), "{want}: {e}");
    }
    // an IB pointing outside any object
    let e = d.with_kgsl(|m| m.gpu_command(1, &[ib_at(ib + (1 << 40), 8)]).unwrap_err());
    assert!(e.to_string().contains("outside GPU objects"), "{e}");
}

#[test]
fn wait_on_a_value_nobody_signals_is_a_reported_deadlock() {
    let mut d = dev(ModelConfig::default());
    d.alloc_arena(3 * B).unwrap();
    let mut q = d.create_queue().unwrap();
    q.wait(5).unwrap();
    let e = d.submit(&mut q).unwrap_err();
    assert!(e.to_string().contains("deadlock"), "{e}");
}

#[test]
fn alloc_failure_is_an_error_not_a_panic() {
    let r = AdrenoDevice::open(
        KgslModel::new(ModelConfig {
            fail_alloc_at: Some(1),
            ..Default::default()
        }),
        AdrenoOptions::default(),
    );
    assert!(r.is_err_and(|e| e.to_string().contains("ENOMEM")));
}

#[test]
fn progress_slot_is_inside_the_dummy_object() {
    assert!(PROGRESS_OFF + 4 <= 0x1000 && PROGRESS_OFF.is_multiple_of(8) && PROGRESS_OFF >= 8);
}

#[test]
fn executor_shaped_queues_without_wait_get_a_barrier() {
    // modelrt-core records `timestamp → steps → timestamp → signal(1)` (no wait), and profile queues hold a
    // single step with no signal at all; both must pass the model (which requires an invalidate per IB).
    let mut d = dev(ModelConfig::default());
    d.alloc_arena(8 * B).unwrap();
    let k = load(&mut d, "k");
    let mut q = d.create_queue().unwrap();
    q.timestamp().unwrap();
    q.exec(k, &args(0), [8, 1, 1], [32, 1, 1]).unwrap();
    q.copy(7 * B, 0, 64).unwrap();
    q.exec(k, &args(3 * B), [8, 1, 1], [32, 1, 1]).unwrap();
    q.timestamp().unwrap();
    q.signal(1).unwrap();
    for _ in 0..2 {
        let t = d.submit(&mut q).unwrap();
        assert_eq!(t.device_ns, 2 * 10_000, "two dispatches of 192 model ticks");
    }
    let mut single = d.create_queue().unwrap();
    single.exec(k, &args(0), [8, 1, 1], [32, 1, 1]).unwrap();
    d.submit(&mut single).unwrap();
    d.with_kgsl(|m| {
        assert_eq!(m.stats().dispatches, 5);
        // the copy split each replay into two IBs, both starting their dispatch with an invalidate
        assert_eq!(m.stats().submissions, 5);
        for ib in m.submitted() {
            let inv = ib.iter().position(|&x| x == 0x7046_0001).unwrap();
            let exec = ib.iter().position(|&x| x == 0x70B3_0004).unwrap();
            assert!(inv < exec);
        }
    });
}

#[test]
fn model_rejects_a_dispatch_without_invalidate() {
    let mut d = dev(ModelConfig::default());
    d.alloc_arena(3 * B).unwrap();
    let k = load(&mut d, "k");
    let mut q = d.create_queue().unwrap();
    q.exec(k, &args(0), [8, 1, 1], [32, 1, 1]).unwrap();
    let mut dw = q.dwords().to_vec();
    // turn the CACHE_INVALIDATE event into a CP_WAIT_FOR_IDLE + CP_NOP-free equivalent length: WFI, WFI
    let at = dw.iter().position(|&x| x == 0x7046_0001).unwrap();
    dw[at] = modelrt_qcom::pm4::pkt7_hdr(0x26, 0);
    dw[at + 1] = modelrt_qcom::pm4::pkt7_hdr(0x26, 0);
    let e = d.with_kgsl(|m| submit_raw_ib(m, &dw));
    assert!(e.to_string().contains("cache invalidate"), "{e}");
}

#[test]
fn timeline_resets_past_the_wrap_value() {
    let opts = AdrenoOptions {
        timeline_wrap: 2,
        timeout_ms: 50,
        ..Default::default()
    };
    let mut d = AdrenoDevice::open(KgslModel::new(ModelConfig::default()), opts).unwrap();
    let mut q = single_dispatch_queue(&mut d);
    for _ in 0..5 {
        d.submit(&mut q).unwrap();
    }
    // wait REFs seen by the GPU: bases 0, 1, 2; the timeline is then 3 > 2, so it resets: 0, 1
    let refs: Vec<u32> = d.with_kgsl(|m| m.submitted().iter().map(|ib| ib[4]).collect());
    assert_eq!(refs, vec![0, 1, 2, 0, 1]);
}

#[test]
fn host_transfers_are_bounded_by_the_arena() {
    let mut d = dev(ModelConfig::default());
    assert!(matches!(d.upload(0, &[1]), Err(AdrenoError::NoArena)));
    d.alloc_arena(B).unwrap();
    let e = d.upload(B - 1, &[1, 2]).unwrap_err();
    assert!(
        matches!(e, AdrenoError::OutOfArena { offset, len: 2, size: B } if offset == B - 1),
        "{e}"
    );
    let mut out = [0u8; 2];
    let e = d.download(u64::MAX, &mut out).unwrap_err();
    assert!(
        matches!(
            e,
            AdrenoError::OutOfArena {
                offset: u64::MAX,
                len: 2,
                size: B
            }
        ),
        "{e}"
    );
    d.upload(B - 2, &[1, 2]).unwrap();
    d.download(B - 2, &mut out).unwrap();
    assert_eq!(out, [1, 2]);
}
