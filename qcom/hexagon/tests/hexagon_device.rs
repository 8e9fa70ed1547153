//! `HexagonDevice` as a HAL device (`modelrt_hal::device::Device`) over the FastRPC model, with no DSP code run (the
//! model's `Refuse` executor; the qemu paths are tests/tests/hexagon/): the target check, the ION arena as the HAL
//! arena (uploads and downloads round-trip at arena offsets, ranges outside it are refused), the model library opened
//! once on load and required before a queue, the executor's launches and copies recorded as the engine's op list
//! in the one arena, a misaligned view refused when the recording closes (naming the kernel), an empty queue
//! submitting no invoke, a non-empty one exactly one model-level invoke, and `close` leaving nothing open.
use std::sync::Arc;
use std::time::Duration;

use modelrt_hal::device::{Arg, Device, KernelId, KernelImage, Queue};
use modelrt_hal::target::{CpuKernelMeta, KernelMeta, Target};
use modelrt_hexagon::device::{HexagonDevice, MODEL_LIBRARY};
use modelrt_hexagon::emu::device::{FastRpcModel, Refuse};
use modelrt_hexagon::fastrpc::engine::{Op, View};
use modelrt_hexagon::fastrpc::session::{Session, SessionConfig};

fn device() -> (Arc<FastRpcModel>, HexagonDevice) {
    let io = Arc::new(FastRpcModel::new(Box::new(Refuse), Duration::from_secs(5)));
    let mut shell = b"\x7fELF".to_vec();
    shell.resize(4096, 0);
    let cfg = SessionConfig {
        shell,
        testsig_dir: None,
        listener_timeout: Duration::from_secs(2),
    };
    let s = Session::open(io.clone(), &cfg).expect("session on the FastRPC model");
    (io, HexagonDevice::new(s))
}

/// The smallest library the model's loader accepts (docs/hw/fastrpc.md §5): an ELF32 little-endian Hexagon
/// `ET_DYN` whose dynamic symbol table defines `entry` (header, then a null, a `.dynsym` and a `.dynstr` section).
fn tiny_library() -> Vec<u8> {
    let mut b = vec![0u8; 52];
    b[..6].copy_from_slice(b"\x7fELF\x01\x01");
    b[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    b[18..20].copy_from_slice(&164u16.to_le_bytes()); // EM_HEXAGON
    let strtab = b.len() as u32;
    b.extend_from_slice(b"\0entry\0\0");
    let symtab = b.len() as u32;
    b.extend_from_slice(&[0; 16]); // the null symbol
    let mut sym = [0u8; 16];
    sym[..4].copy_from_slice(&1u32.to_le_bytes()); // "entry"
    sym[14..16].copy_from_slice(&1u16.to_le_bytes()); // defined
    b.extend_from_slice(&sym);
    let shoff = b.len() as u32;
    b[32..36].copy_from_slice(&shoff.to_le_bytes());
    b[46..48].copy_from_slice(&40u16.to_le_bytes());
    b[48..50].copy_from_slice(&3u16.to_le_bytes());
    let section = |kind: u32, off: u32, size: u32, link: u32| {
        let mut h = [0u8; 40];
        h[4..8].copy_from_slice(&kind.to_le_bytes());
        h[16..20].copy_from_slice(&off.to_le_bytes());
        h[20..24].copy_from_slice(&size.to_le_bytes());
        h[24..28].copy_from_slice(&link.to_le_bytes());
        h
    };
    b.extend_from_slice(&[0; 40]);
    b.extend_from_slice(&section(11, symtab, 32, 2)); // SHT_DYNSYM, strings in section 2
    b.extend_from_slice(&section(3, strtab, 8, 0)); // SHT_STRTAB
    b
}

fn load(dev: &mut HexagonDevice, name: &str) -> KernelId {
    let lib = tiny_library();
    let meta = KernelMeta::Cpu(CpuKernelMeta { threads: 1 });
    dev.load_kernel(&KernelImage {
        name,
        entry: "entry",
        binary: &lib,
        params: &[],
        meta: &meta,
    })
    .expect("kernel loads")
}

#[test]
fn the_arena_round_trips_and_refuses_what_lies_outside() {
    let (_, mut dev) = device();
    assert!(dev.check_target(&Target::Hexagon { version: 65 }).is_ok());
    let e = dev
        .check_target(&Target::Amd { gfx: 0x1100 })
        .unwrap_err()
        .to_string();
    assert!(e.contains("not the Hexagon DSP"), "{e}");
    assert!(dev.upload(0, &[1]).is_err(), "no arena yet");
    dev.alloc_arena(1000).unwrap();
    dev.upload(600, &[1, 2, 3, 4]).unwrap();
    let mut back = [0u8; 4];
    dev.download(600, &mut back).unwrap();
    assert_eq!(back, [1, 2, 3, 4]);
    let e = dev.upload(998, &[0; 4]).unwrap_err().to_string();
    assert!(e.contains("outside the 1000-byte arena"), "{e}");
    assert!(
        dev.download(u64::MAX, &mut back).is_err(),
        "overflow is outside"
    );
    dev.close().unwrap();
    assert!(dev
        .upload(0, &[1])
        .unwrap_err()
        .to_string()
        .contains("closed"));
}

#[test]
fn a_queue_needs_the_model_library() {
    let (io, mut dev) = device();
    dev.alloc_arena(4096).unwrap();
    load(&mut dev, "r_16");
    let e = dev.create_queue().err().expect("refused").to_string();
    assert!(
        e.contains("no DSP model library") && e.contains(MODEL_LIBRARY),
        "{e}"
    );
    assert_eq!(io.open_libs(), 0, "only the model library is opened");
}

#[test]
fn launches_and_copies_become_one_table_and_one_invoke() {
    let (io, mut dev) = device();
    dev.alloc_arena(8192).unwrap();
    assert_eq!(load(&mut dev, "r_16"), KernelId(0));
    assert_eq!(load(&mut dev, MODEL_LIBRARY), KernelId(1));
    assert_eq!(io.open_libs(), 1, "the model library is open");
    // an empty queue: no invoke
    let mut empty = dev.create_queue().unwrap();
    empty.timestamp().unwrap();
    empty.timestamp().unwrap();
    empty.signal(1).unwrap();
    assert_eq!(dev.submit(&mut empty).unwrap().device_ns, 0);
    assert_eq!(dev.invokes(), 0);
    // a launch and a copy, by arena offset
    let mut q = dev.create_queue().unwrap();
    q.wait(0).unwrap();
    q.timestamp().unwrap();
    q.exec(
        KernelId(0),
        &[
            Arg::Buffer {
                offset: 4096,
                size: 64,
            },
            Arg::Buffer {
                offset: 0,
                size: 64,
            },
            Arg::Int(-1),
        ],
        [16, 1, 1],
        [1, 1, 1],
    )
    .unwrap();
    q.copy(256, 4096, 64).unwrap();
    q.timestamp().unwrap();
    q.signal(1).unwrap();
    assert_eq!(q.launches(), 1);
    match q.ops() {
        [Op::Launch { kernel, bufs, vals }, Op::Copy { dst, src }] => {
            assert_eq!(*kernel, 0);
            assert_eq!(
                bufs.as_slice(),
                [
                    View {
                        buffer: 0,
                        offset: 4096,
                        size: 64
                    },
                    View {
                        buffer: 0,
                        offset: 0,
                        size: 64
                    }
                ]
            );
            assert_eq!(vals.as_slice(), [0xFFFF_FFFF], "the int zero-extended");
            assert_eq!((dst.offset, src.offset, dst.size), (256, 4096, 64));
        }
        ops => panic!("{ops:?}"),
    }
    // the model refuses to run kernels: the one invoke reaches it and its error names the model library
    let before = io.counts();
    let e = dev.submit(&mut q).unwrap_err().to_string();
    assert!(e.contains(MODEL_LIBRARY), "{e}");
    assert_eq!(io.counts().run - before.run, 1, "one model-level invoke");
    dev.close().unwrap();
    assert_eq!(io.open_libs(), 0, "closed");
}

#[test]
fn a_misaligned_view_is_refused_when_the_recording_closes() {
    let (_, mut dev) = device();
    dev.alloc_arena(4096).unwrap();
    load(&mut dev, "r_bad");
    load(&mut dev, MODEL_LIBRARY);
    let mut q = dev.create_queue().unwrap();
    q.exec(
        KernelId(0),
        &[Arg::Buffer {
            offset: 64,
            size: 16,
        }],
        [1, 1, 1],
        [1, 1, 1],
    )
    .unwrap();
    let e = q.signal(1).unwrap_err().to_string();
    assert!(
        e.contains("not 128-byte aligned") && e.contains("kernel r_bad"),
        "{e}"
    );
}
