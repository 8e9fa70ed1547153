//! The safe surface over GPU memory refuses every access it cannot prove in range: `GpuObj` reads,
//! writes, volatile cells and moves past the object (or overflowing `u64`), unmapping through a KGSL
//! implementation that did not make the mapping, and external buffers whose range wraps around.
use modelrt_qcom::adreno::{AdrenoDevice, AdrenoError, ExternalBuffer};
use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};
use modelrt_qcom::kgsl::{self, KgslError, KgslIo};

fn out_of_range<T: std::fmt::Debug>(r: Result<T, KgslError>) -> (u64, u64, u64) {
    match r {
        Err(KgslError::OutOfRange { offset, len, size }) => (offset, len, size),
        other => panic!("expected OutOfRange, got {other:?}"),
    }
}

#[test]
fn gpu_obj_refuses_accesses_outside_the_object() {
    let mut m = KgslModel::new(ModelConfig::default());
    // 100 bytes round up to one 4 KiB page (tinygrad's `_gpu_alloc` rounding).
    let obj = kgsl::alloc_obj(&mut m, 100).unwrap();
    assert_eq!(obj.size(), 4096);
    obj.write(4092, &[1, 2, 3, 4]).unwrap();

    assert_eq!(out_of_range(obj.write(4093, &[9; 4])), (4093, 4, 4096));
    assert_eq!(out_of_range(obj.write(u64::MAX, &[9])), (u64::MAX, 1, 4096));
    let mut buf = [0u8; 8];
    assert_eq!(out_of_range(obj.read(4090, &mut buf)), (4090, 8, 4096));
    assert_eq!(out_of_range(obj.read_u32(4096)), (4096, 4, 4096));
    assert_eq!(
        out_of_range(obj.read_u64(u64::MAX - 3)),
        (u64::MAX - 3, 8, 4096)
    );
    assert_eq!(out_of_range(obj.write_u32(4094, 0)), (4094, 4, 4096));
    assert_eq!(
        out_of_range(obj.copy_within(0, 4000, 200)),
        (4000, 200, 4096)
    );
    assert_eq!(
        out_of_range(obj.copy_within(4000, 0, 200)),
        (4000, 200, 4096)
    );
    assert_eq!(
        out_of_range(obj.copy_within(0, 0, u64::MAX)).1,
        u64::MAX,
        "a length past usize/u64 is refused, not truncated"
    );
    assert_eq!(
        obj.read_u32(2),
        Err(KgslError::Misaligned { offset: 2, size: 4 })
    );

    // The refused calls changed nothing: the last four bytes are still the ones written in range.
    let mut tail = [0u8; 4];
    obj.read(4092, &mut tail).unwrap();
    assert_eq!(tail, [1, 2, 3, 4]);
    assert_eq!(
        obj.read_u32(4092).unwrap(),
        u32::from_le_bytes([1, 2, 3, 4])
    );
    obj.copy_within(0, 4092, 4).unwrap();
    assert_eq!(obj.read_u32(0).unwrap(), u32::from_le_bytes([1, 2, 3, 4]));
    kgsl::free_obj(&mut m, obj).unwrap();
    assert_eq!(m.live_objects(), 0);
}

#[test]
fn allocation_size_overflow_is_an_error() {
    let mut m = KgslModel::new(ModelConfig::default());
    assert!(matches!(
        kgsl::alloc_obj(&mut m, u64::MAX),
        Err(KgslError::OutOfRange { .. })
    ));
}

#[test]
fn an_object_is_unmapped_only_by_the_model_that_mapped_it() {
    let mut a = KgslModel::new(ModelConfig::default());
    let mut b = KgslModel::new(ModelConfig::default());
    let obj = kgsl::alloc_obj(&mut a, 4096).unwrap();
    let id = obj.id();
    let va = obj.gpu_addr();
    // `b` has an object with the same id but not this mapping: it refuses to unmap it.
    let other = kgsl::alloc_obj(&mut b, 4096).unwrap();
    assert_eq!(other.id(), id);
    let err = kgsl::free_obj(&mut b, obj).unwrap_err();
    assert!(
        err.to_string().contains("unknown mapping"),
        "unexpected error: {err}"
    );
    // Neither model lost its own object: `a` still maps it, `b` still has `other`.
    assert_eq!(a.live_objects(), 1);
    assert_eq!(a.read(va, 4).unwrap(), vec![0; 4]);
    assert_eq!(b.live_objects(), 1);
    kgsl::free_obj(&mut b, other).unwrap();
    // A munmap of a range that is not exactly a mapping is refused, and the mapping survives.
    // SAFETY: the model refuses this call (wrong length), so no mapping is released.
    let wrong_len = unsafe { a.munmap(va, 8192) };
    assert!(wrong_len.is_err());
    assert_eq!(a.live_objects(), 1);
    assert_eq!(a.read(va, 4).unwrap(), vec![0; 4]);
}

#[test]
fn external_buffers_refuse_wrapping_ranges() {
    // SAFETY: refused before any address is used.
    let wrapping = unsafe { ExternalBuffer::from_gpu_addr(u64::MAX - 10, 64) };
    assert_eq!(wrapping, None);
    let mut d =
        AdrenoDevice::open(KgslModel::new(ModelConfig::default()), Default::default()).unwrap();
    // SAFETY: refused before the range is cleaned, mapped or used.
    let r = unsafe { d.import_user_memory(0x1000, u64::MAX - 0x800) };
    assert!(matches!(r, Err(AdrenoError::BadExternal { .. })), "{r:?}");
}
