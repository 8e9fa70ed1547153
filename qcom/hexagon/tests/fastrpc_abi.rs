//! The FastRPC wire layer against the fact sheet's tables (docs/hw/fastrpc.md, written from the spec): ioctl
//! numbers, struct sizes and field offsets on an LP64 host, the scalars words tinygrad uses, a property test of
//! the scalars encoder/decoder, launch packing byte for byte, and the reverse-RPC request/response layout.
use std::mem::{offset_of, size_of};

use modelrt_hexagon::fastrpc::abi::*;
use modelrt_hexagon::fastrpc::listener::{self, decode_request, encode_response, FileServer};
use modelrt_hexagon::fastrpc::pack::{BufView, LaunchFrame};
use modelrt_hexagon::fastrpc::scalars::{self, Scalars};
use proptest::prelude::*;

#[test]
fn ioctl_numbers_match_the_spec_table() {
    let table = [
        (FASTRPC_IOCTL_INVOKE, 0xC010_5201u32),
        (FASTRPC_IOCTL_MMAP, 0xC020_5202),
        (FASTRPC_IOCTL_MUNMAP, 0xC010_5203),
        (FASTRPC_IOCTL_INVOKE_FD, 0xC018_5204),
        (FASTRPC_IOCTL_INIT, 0xC028_5206),
        (FASTRPC_IOCTL_INVOKE_ATTRS, 0xC020_5207),
        (FASTRPC_IOCTL_GETINFO, 0xC004_5208),
        (FASTRPC_IOCTL_CONTROL, 0xC00C_520C),
        (ION_IOC_ALLOC, 0xC020_4900),
        (ION_IOC_FREE, 0xC004_4901),
        (ION_IOC_SHARE, 0xC008_4904),
    ];
    for (got, want) in table {
        assert_eq!(got, want, "{got:#x} != {want:#x}");
    }
}

#[test]
fn struct_layouts_match_the_spec_table() {
    assert_eq!(size_of::<RemoteArg>(), 16);
    assert_eq!(
        (
            size_of::<InvokeArgs>(),
            offset_of!(InvokeArgs, sc),
            offset_of!(InvokeArgs, pra)
        ),
        (16, 4, 8)
    );
    assert_eq!(
        (
            size_of::<InvokeAttrsArgs>(),
            offset_of!(InvokeAttrsArgs, fds),
            offset_of!(InvokeAttrsArgs, attrs)
        ),
        (32, 16, 24)
    );
    assert_eq!(size_of::<InitArgs>(), 40);
    let init = [
        offset_of!(InitArgs, file),
        offset_of!(InitArgs, filelen),
        offset_of!(InitArgs, filefd),
        offset_of!(InitArgs, mem),
        offset_of!(InitArgs, memlen),
        offset_of!(InitArgs, memfd),
    ];
    assert_eq!(init, [8, 16, 20, 24, 32, 36]);
    assert_eq!(size_of::<MmapArgs>(), 32);
    let mmap = [
        offset_of!(MmapArgs, flags),
        offset_of!(MmapArgs, vaddrin),
        offset_of!(MmapArgs, size),
        offset_of!(MmapArgs, vaddrout),
    ];
    assert_eq!(mmap, [4, 8, 16, 24]);
    assert_eq!(size_of::<MunmapArgs>(), 16);
    assert_eq!(
        (size_of::<ControlArgs>(), offset_of!(ControlArgs, words)),
        (12, 4)
    );
    assert_eq!(size_of::<IonAllocationData>(), 32);
    let ion = [
        offset_of!(IonAllocationData, align),
        offset_of!(IonAllocationData, heap_id_mask),
        offset_of!(IonAllocationData, flags),
        offset_of!(IonAllocationData, handle),
    ];
    assert_eq!(ion, [8, 16, 20, 24]);
    assert_eq!(
        (
            size_of::<IonHandleData>(),
            size_of::<IonFdData>(),
            offset_of!(IonFdData, fd)
        ),
        (4, 8, 4)
    );
    // the dma view of remote_arg: fd in bytes 0..4, offset in 4..8
    let d = RemoteArg::dma(-1, 0x80);
    assert_eq!(d.pv.to_le_bytes(), [0xFF, 0xFF, 0xFF, 0xFF, 0x80, 0, 0, 0]);
}

#[test]
fn scalars_words_of_the_spec() {
    let t = |sc: u32, m, i, o, h| {
        let s = Scalars::decode(sc);
        assert_eq!(
            (s.method, s.inbufs, s.outbufs, s.inhandles + s.outhandles),
            (m, i, o, h),
            "{sc:#x}"
        );
    };
    t(scalars::SC_OPEN_LIB, 0, 2, 2, 0);
    t(scalars::SC_CLOSE_LIB, 1, 1, 2, 0);
    t(scalars::SC_LISTENER_INIT, 3, 0, 0, 0);
    t(scalars::SC_LISTENER_NEXT, 4, 2, 2, 0);
    t(scalars::SC_PROCESS_EXIT, 2, 0, 0, 0);
    t(listener::RSC_OPEN, 19, 5, 1, 0);
    t(listener::RSC_STAT, 31, 2, 1, 0);
    assert_eq!(scalars::launch_sc(5), Some(0x0202_0105));
    assert_eq!(
        Scalars::decode(0x0202_0105).outhandles,
        5,
        "nbufs travel in the output-handle nibble"
    );
    assert_eq!(scalars::launch_sc(15), Some(0x0202_010F));
    assert_eq!(scalars::launch_sc(16), None);
}

proptest! {
    #[test]
    fn scalars_roundtrip(attr in 0u8..8, method in 0u8..32, i in any::<u8>(), o in any::<u8>(), ih in 0u8..16, oh in 0u8..16) {
        let s = Scalars { attr, method, inbufs: i, outbufs: o, inhandles: ih, outhandles: oh };
        let w = s.encode().unwrap();
        prop_assert_eq!(Scalars::decode(w), s);
        prop_assert_eq!(w >> 29, u32::from(attr));
        prop_assert_eq!((w >> 24) & 31, u32::from(method));
        prop_assert_eq!(s.total(), i as usize + o as usize + ih as usize + oh as usize);
    }

    #[test]
    fn every_word_decodes_and_reencodes(w in any::<u32>()) {
        prop_assert_eq!(Scalars::decode(w).encode(), Some(w));
    }

    #[test]
    fn out_of_range_fields_are_refused(method in 32u8.., ih in 16u8..) {
        prop_assert_eq!(Scalars { method, ..Default::default() }.encode(), None);
        prop_assert_eq!(Scalars { inhandles: ih, ..Default::default() }.encode(), None);
    }
}

#[test]
fn launch_packing_is_byte_exact() {
    let f = LaunchFrame::new(
        &[
            BufView {
                fd: 7,
                offset: 0,
                size: 300,
            },
            BufView {
                fd: 9,
                offset: 256,
                size: 64,
            },
        ],
        &[0x1122_3344_5566_7788],
    )
    .unwrap();
    assert_eq!(f.sc(), 0x0202_0102);
    let mut want = vec![0u8; 24];
    want[0..4].copy_from_slice(&300u32.to_le_bytes());
    want[8..12].copy_from_slice(&64u32.to_le_bytes());
    want[16..24].copy_from_slice(&[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]);
    assert_eq!(f.sizes_vals(), want.as_slice());
    assert_eq!(f.offsets(), [0, 0, 0, 0, 0, 1, 0, 0].as_slice());
    let v = |offset| BufView {
        fd: 3,
        offset,
        size: 4,
    };
    assert!(LaunchFrame::new(&[v(64)], &[])
        .unwrap_err()
        .to_string()
        .contains("128-byte"));
    assert!(LaunchFrame::new(&[v(0); 16], &[])
        .unwrap_err()
        .to_string()
        .contains("at most 15"));
    assert!(LaunchFrame::new(&[v(0); 15], &[]).is_ok());
}

#[test]
fn reverse_requests_decode_and_responses_encode_as_documented() {
    // read request: in {fd 0xFFFF, length 10}; outs of 8 and 10 bytes — built by hand from the layout
    let mut req = vec![8, 0, 0, 0, 0, 0, 0, 0];
    req.extend_from_slice(&0xFFFFu32.to_le_bytes());
    req.extend_from_slice(&10u32.to_le_bytes());
    req.extend_from_slice(&[8, 0, 0, 0, 10, 0, 0, 0]);
    let r = decode_request(&req, 1, 2).unwrap();
    let mut huge = req.clone();
    huge[20..24].copy_from_slice(&0xFFFF_0000u32.to_le_bytes());
    assert!(
        decode_request(&huge, 1, 2).is_none(),
        "outputs larger than a response are refused"
    );
    assert!(
        decode_request(&req[..10], 1, 2).is_none(),
        "truncated request"
    );
    assert_eq!(r.ins, vec![&req[8..16]]);
    assert_eq!(r.out_sizes, vec![8, 10]);
    let mut srv = FileServer::new(None);
    srv.bind((0u8..13).collect::<Vec<_>>().into());
    let (status, outs) = srv.serve(listener::RSC_READ, &r).unwrap();
    assert_eq!(status, 0);
    assert_eq!(outs[0], [10, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(outs[1], (0u8..10).collect::<Vec<_>>());
    let mut buf = [0xAAu8; 64];
    let refs: Vec<&[u8]> = outs.iter().map(Vec::as_slice).collect();
    let n = encode_response(&mut buf, &refs).unwrap();
    // {u32 8, pad 4, 8 bytes} {u32 10, pad 4, 10 bytes}
    assert_eq!(n, 16 + 8 + 10);
    assert_eq!(&buf[0..4], &[8, 0, 0, 0]);
    assert_eq!(&buf[16..20], &[10, 0, 0, 0]);
    assert_eq!(&buf[24..34], (0u8..10).collect::<Vec<_>>().as_slice());
    // the next read returns the last 3 bytes, then EOF
    let (_, outs) = srv.serve(listener::RSC_READ, &r).unwrap();
    assert_eq!(outs[1], vec![10, 11, 12]);
    let (_, outs) = srv.serve(listener::RSC_READ, &r).unwrap();
    assert_eq!(
        (outs[0][0..4].to_vec(), outs[0][4]),
        (vec![0, 0, 0, 0], 1),
        "0 bytes and the EOF flag"
    );
    // unknown reverse calls are refused; names other than tinylib/testsig are not served
    assert!(srv.serve(0x7F00_0000, &r).is_none());
    let name = b"/etc/passwd\0";
    let mut open = Vec::new();
    for a in [&[0u8; 4][..], &[], &[], name, &[]] {
        open.extend_from_slice(&(a.len() as u32).to_le_bytes());
        open.resize(open.len().div_ceil(8) * 8, 0);
        open.extend_from_slice(a);
    }
    open.extend_from_slice(&4u32.to_le_bytes());
    let r = decode_request(&open, 5, 1).unwrap();
    assert_eq!(r.ins[3], name);
    assert_eq!(
        srv.serve(listener::RSC_OPEN, &r).unwrap().0,
        1,
        "only tinylib and testsig files are served"
    );
}

/// The shared layout constants (`fastrpc::layout`, read by the host's packers and the model's decoders) against the
/// fact sheet's numbers: §3 4-bit handle counts; §5 three fixed launch arguments, 8-byte size/scalar slots, u32
/// offsets, an 8-byte timer, 128-byte views; §6 `MRS1`, op kinds 0/1, 3-word views, 5-word copies, ≤ 64 scalars,
/// a 16-byte result.
#[test]
fn argument_layouts_match_the_spec() {
    use modelrt_hexagon::fastrpc::layout::*;
    assert_eq!(MAX_HANDLES, 15);
    assert_eq!(scalars::MAX_LAUNCH_BUFFERS, MAX_HANDLES);
    assert_eq!(
        (
            LAUNCH_FIXED_ARGS,
            LAUNCH_SLOT,
            LAUNCH_OFFSET,
            LAUNCH_TIMER,
            BUFFER_ALIGN
        ),
        (3, 8, 4, 8, 128)
    );
    assert_eq!(&TABLE_MAGIC.to_le_bytes(), b"MRS1");
    assert_eq!(
        (
            RUN_FIXED_ARGS,
            OP_LAUNCH,
            OP_COPY,
            VIEW_WORDS,
            COPY_WORDS,
            MAX_VALS,
            RESULT_LEN
        ),
        (2, 0, 1, 3, 5, 64, 16)
    );
}
