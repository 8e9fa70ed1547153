//! The C API called as a C program would: the demo bundle's outputs equal what the Rust runner
//! (the CLI's path) computes, bit for bit, and its embedded reference within tolerance; bad
//! arguments are error codes with a message.
mod common;

use std::ffi::CStr;

use common::*;
use modelrt::error::{MRT_ERR_INVALID_ARGUMENT, MRT_ERR_LOAD, MRT_OK};
use modelrt::ffi::*;
use modelrt_core::bundle::Bundle;
use modelrt_targets::runner::LoadOptions;

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn outputs_match_the_runner_and_the_reference() {
    let (ins, expected, atol, rtol) = reference();
    let (rc, m) = load(demo().to_str().unwrap(), Some("cpu"));
    assert_eq!(rc, MRT_OK, "{}", last_error());
    // SAFETY: live handle.
    let (ni, no) = unsafe { (mrt_model_input_count(m), mrt_model_output_count(m)) };
    assert_eq!((ni, no), (1, 1));
    // SAFETY: `m` is NULL or a live handle; the buffers outlive the call.
    let (rc, t) = unsafe { info(m, false, 0) };
    assert_eq!(rc, MRT_OK);
    // SAFETY: the name is a NUL-terminated string that lives until mrt_model_free.
    let name = unsafe { CStr::from_ptr(t.name_ptr()) };
    assert_eq!(name.to_str().unwrap(), "img");
    assert_eq!(t.dtype, 0, "float32 is MRT_DTYPE_F32 = 0");
    assert_eq!(&t.dims[..t.ndim as usize], &[1, 12, 128, 256]);
    assert_eq!(t.nbytes, 12 * 128 * 256 * 4);
    // SAFETY: `m` is NULL or a live handle; the buffers outlive the call.
    let (rc, t) = unsafe { info(m, true, 0) };
    assert_eq!(rc, MRT_OK);
    // SAFETY: as above.
    let name = unsafe { CStr::from_ptr(t.name_ptr()) };
    assert_eq!(name.to_str().unwrap(), "features");
    assert_eq!(&t.dims[..t.ndim as usize], &[1, 32]);

    let mut outs = vec![vec![0u8; t.nbytes]];
    // SAFETY: `m` is NULL or a live handle; the buffers outlive the call.
    let rc = unsafe { Io::new(&ins, &mut outs).run(m) };
    assert_eq!(rc, MRT_OK, "{}", last_error());
    assert_eq!(last_error(), "", "a successful call clears the last error");
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };

    // The Rust runner on the same bundle (what `modelrt run` uses).
    let bytes = std::fs::read(demo()).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let mut model = modelrt_targets::runner::load(
        b,
        LoadOptions::on(modelrt_targets::runner::device("cpu").unwrap()),
    )
    .unwrap();
    let mut want = vec![0u8; t.nbytes];
    model.run(&[&ins[0]], &mut [&mut want]).unwrap();
    assert_eq!(outs[0], want, "C API and runner differ");

    for (g, e) in f32s(&outs[0]).iter().zip(f32s(&expected[0])) {
        assert!(
            (g - e).abs() <= atol + rtol * e.abs(),
            "{g} vs reference {e}"
        );
    }
}

#[test]
fn bad_arguments_are_errors_with_a_message() {
    let (ins, _, _, _) = reference();
    // Load errors.
    let (rc, m) = load("/nonexistent/x.mrt", None);
    assert_eq!(rc, MRT_ERR_LOAD);
    assert!(m.is_null());
    assert!(
        last_error().contains("/nonexistent/x.mrt"),
        "{}",
        last_error()
    );
    let (rc, m) = load(demo().to_str().unwrap(), Some("gpu"));
    assert_eq!((rc, m.is_null()), (MRT_ERR_INVALID_ARGUMENT, true));
    assert!(
        last_error().contains("unknown device \"gpu\""),
        "{}",
        last_error()
    );
    let (rc, m) = load(demo().to_str().unwrap(), Some("qcom-emu"));
    assert_eq!((rc, m.is_null()), (MRT_ERR_LOAD, true));
    // The suggestion names the C device argument, not the CLI's flag.
    assert!(
        last_error().contains("device \"qcom-emu\" runs adreno bundles only: use device \"cpu\""),
        "{}",
        last_error()
    );
    assert!(!last_error().contains("--device"), "{}", last_error());
    // SAFETY: NULL arguments are what is tested.
    unsafe {
        assert_eq!(
            mrt_model_load(std::ptr::null(), std::ptr::null(), std::ptr::null_mut()),
            MRT_ERR_INVALID_ARGUMENT
        );
        let mut m = std::ptr::null_mut();
        assert_eq!(
            mrt_model_load(std::ptr::null(), std::ptr::null(), &mut m),
            MRT_ERR_INVALID_ARGUMENT
        );
        assert!(last_error().contains("path is NULL"), "{}", last_error());
        assert_eq!(mrt_model_input_count(std::ptr::null()), 0);
        assert_eq!(mrt_model_output_count(std::ptr::null()), 0);
        mrt_model_free(std::ptr::null_mut());
        assert_eq!(
            mrt_model_reset_state(std::ptr::null_mut()),
            MRT_ERR_INVALID_ARGUMENT
        );
    }
    // SAFETY: `m` is NULL or a live handle; the buffers outlive the call.
    let (rc, _) = unsafe { info(std::ptr::null(), false, 0) };
    assert_eq!(rc, MRT_ERR_INVALID_ARGUMENT);
    assert!(last_error().contains("model is NULL"), "{}", last_error());

    let (rc, m) = load(demo().to_str().unwrap(), None);
    assert_eq!(rc, MRT_OK, "{}", last_error());
    // SAFETY: `m` is NULL or a live handle; the buffers outlive the call.
    let (rc, _) = unsafe { info(m, true, 1) };
    assert_eq!(rc, MRT_ERR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("output index 1 is out of range: the model has 1 outputs"),
        "{}",
        last_error()
    );
    // SAFETY: live handle, NULL out.
    let rc = unsafe { mrt_model_input_info(m, 0, std::ptr::null_mut()) };
    assert_eq!(rc, MRT_ERR_INVALID_ARGUMENT);

    let mut outs = vec![vec![0u8; 128]];
    // Wrong input size.
    let short = vec![ins[0][..100].to_vec()];
    // SAFETY: `m` is NULL or a live handle; the buffers outlive the call.
    let rc = unsafe { Io::new(&short, &mut outs).run(m) };
    assert_eq!(rc, MRT_ERR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("input 0 (img) has 100 bytes; expected 1572864"),
        "{}",
        last_error()
    );
    // Wrong output size.
    let mut long = vec![vec![0u8; 129]];
    // SAFETY: `m` is NULL or a live handle; the buffers outlive the call.
    let rc = unsafe { Io::new(&ins, &mut long).run(m) };
    assert_eq!(rc, MRT_ERR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("output 0 (features) has 129 bytes"),
        "{}",
        last_error()
    );
    // NULL buffer pointer and NULL arrays.
    let mut io = Io::new(&ins, &mut outs);
    io.outs[0] = std::ptr::null_mut();
    // SAFETY: `m` is NULL or a live handle; the buffers outlive the call.
    let rc = unsafe { io.run(m) };
    assert_eq!(rc, MRT_ERR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("output 0 (features) is NULL"),
        "{}",
        last_error()
    );
    // SAFETY: NULL arrays are what is tested.
    let rc = unsafe {
        mrt_model_run(
            m,
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, MRT_ERR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("inputs or input_sizes is NULL"),
        "{}",
        last_error()
    );
    // The model still works after every refusal, and reset_state succeeds on a stateless bundle.
    // SAFETY: `m` is NULL or a live handle; the buffers outlive the call.
    let rc = unsafe { Io::new(&ins, &mut outs).run(m) };
    assert_eq!(rc, MRT_OK, "{}", last_error());
    // SAFETY: live handle; freed once.
    unsafe {
        assert_eq!(mrt_model_reset_state(m), MRT_OK);
        mrt_model_free(m);
    }
}
