//! The C API's hardened boundary: `mrt_model_run` refuses an output that overlaps another output
//! or an input (in-place calls would alias a Rust `&mut [u8]`), with MRT_ERR_INVALID_ARGUMENT and a
//! message naming both buffers; `mrt_model_load_ex(..., MRT_LOAD_READ, ...)` reads the bundle file
//! instead of mapping it, so truncating the file under a loaded model changes nothing.
mod common;
#[path = "../../tests/state_common/mod.rs"]
mod state_common;

use std::ffi::CString;

use common::*;
use modelrt::error::{MRT_ERR_INVALID_ARGUMENT, MRT_OK};
use modelrt::ffi::*;
use state_common::{expected, f32_bytes, stateful_bundle, x, N};

#[test]
fn an_output_overlapping_an_input_is_refused() {
    let (ins, _, _, _) = reference();
    let (rc, m) = load(demo().to_str().unwrap(), Some("cpu"));
    assert_eq!(rc, MRT_OK, "{}", last_error());
    // One buffer holds the input and, 1 KiB in, the 128-byte output: an in-place call.
    let mut buf = ins[0].clone();
    let base = buf.as_mut_ptr();
    let io = Io {
        ins: vec![base.cast_const().cast()],
        in_sizes: vec![ins[0].len()],
        // SAFETY: 1024 + 128 bytes lie inside `buf` (1572864 bytes).
        outs: vec![unsafe { base.add(1024) }.cast()],
        out_sizes: vec![128],
    };
    // SAFETY: live handle; every pointer addresses `buf`, alive for the call.
    let rc = unsafe { io.run(m) };
    assert_eq!(
        rc, MRT_ERR_INVALID_ARGUMENT,
        "an in-place call must be refused"
    );
    assert!(
        last_error().contains("output 0 (features) overlaps input 0 (img)"),
        "{}",
        last_error()
    );
    assert_eq!(buf, ins[0], "nothing was written");
    // Adjacent (not overlapping) is fine: the output right after the input.
    let mut both = ins[0].clone();
    both.extend_from_slice(&[0u8; 128]);
    let base = both.as_mut_ptr();
    let io = Io {
        ins: vec![base.cast_const().cast()],
        in_sizes: vec![ins[0].len()],
        // SAFETY: the output's 128 bytes follow the input's inside `both`.
        outs: vec![unsafe { base.add(ins[0].len()) }.cast()],
        out_sizes: vec![128],
    };
    // SAFETY: as above.
    let rc = unsafe { io.run(m) };
    assert_eq!(rc, MRT_OK, "{}", last_error());
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };
}

fn stateful_file(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("modelrt-capi-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stateful.mrt");
    std::fs::write(&path, stateful_bundle()).unwrap();
    (dir, path)
}

#[test]
fn outputs_overlapping_each_other_are_refused() {
    let (dir, path) = stateful_file("overlap");
    let (rc, m) = load(path.to_str().unwrap(), Some("cpu"));
    assert_eq!(rc, MRT_OK, "{}", last_error());
    let ins = vec![f32_bytes(&x(3, 0))];
    let mut buf = vec![0u8; N * 4 + 4];
    let base = buf.as_mut_ptr();
    let io = Io {
        ins: ins.iter().map(|b| b.as_ptr().cast()).collect(),
        in_sizes: vec![N * 4],
        // SAFETY: both 16-byte outputs lie inside the 20-byte `buf`, 4 bytes apart.
        outs: vec![base.cast(), unsafe { base.add(4) }.cast()],
        out_sizes: vec![N * 4, N * 4],
    };
    // SAFETY: live handle; the buffers are alive for the call.
    let rc = unsafe { io.run(m) };
    assert_eq!(rc, MRT_ERR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("output 1 (") && last_error().contains("overlaps output 0 ("),
        "{}",
        last_error()
    );
    // The refused call did not step the state: the next good call is step 0.
    let mut outs = vec![vec![0u8; N * 4], vec![0u8; N * 4]];
    // SAFETY: as above.
    let rc = unsafe { Io::new(&ins, &mut outs).run(m) };
    assert_eq!(rc, MRT_OK, "{}", last_error());
    let (_, y, _) = expected(3, 0);
    assert_eq!(state_common::bytes_f32(&outs[0]), y);
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };
    let _ = std::fs::remove_dir_all(&dir);
}

fn load_ex(path: &str, flags: u32) -> (i32, *mut MrtModel) {
    let p = CString::new(path).unwrap();
    let d = CString::new("cpu").unwrap();
    let mut m = std::ptr::null_mut();
    // SAFETY: valid C strings and a writable handle slot.
    let rc = unsafe { mrt_model_load_ex(p.as_ptr(), d.as_ptr(), flags, &mut m) };
    (rc, m)
}

#[test]
fn a_read_bundle_survives_its_file_being_truncated() {
    let (dir, path) = stateful_file("read");
    let (rc, m) = load_ex(path.to_str().unwrap(), MRT_LOAD_READ);
    assert_eq!(rc, MRT_OK, "{}", last_error());
    // What would kill a mapped model (SIGBUS on the next page touched past the end).
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    for k in 0..3 {
        let ins = vec![f32_bytes(&x(3, k))];
        let mut outs = vec![vec![0u8; N * 4], vec![0u8; N * 4]];
        // SAFETY: live handle; the buffers outlive the call.
        let rc = unsafe { Io::new(&ins, &mut outs).run(m) };
        assert_eq!(rc, MRT_OK, "{}", last_error());
        let (_, y, q) = expected(3, k);
        assert_eq!(
            (
                state_common::bytes_f32(&outs[0]),
                state_common::bytes_f32(&outs[1])
            ),
            (y, q),
            "step {k}"
        );
    }
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };

    let (rc, m) = load_ex(path.to_str().unwrap(), 0x80);
    assert_eq!((rc, m.is_null()), (MRT_ERR_INVALID_ARGUMENT, true));
    assert!(
        last_error().contains("mrt_model_load_ex: unknown flags 0x80"),
        "{}",
        last_error()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
