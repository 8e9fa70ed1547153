//! A stateful bundle through the C API (the CPU test bundle of `targets/tests/state_common`, whose
//! closed forms give the expected values): state carries over from one `mrt_model_run` to the next
//! like `modelrt run --steps`, and `mrt_model_reset_state` restarts from the load-time state.
//! (`tests/fixtures` links to `targets/cpu/tests/fixtures`, where the kernel object lives.)
mod common;
#[path = "../../tests/state_common/mod.rs"]
mod state_common;

use common::*;
use modelrt::error::MRT_OK;
use modelrt::ffi::{mrt_model_free, mrt_model_reset_state};
use state_common::{bytes_f32, expected, f32_bytes, stateful_bundle, x, N};

#[test]
fn steps_carry_state_and_reset_restarts() {
    let dir = std::env::temp_dir().join(format!("modelrt-capi-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stateful.mrt");
    std::fs::write(&path, stateful_bundle()).unwrap();
    let (rc, m) = load(path.to_str().unwrap(), Some("cpu"));
    assert_eq!(rc, MRT_OK, "{}", last_error());
    let seed = 3;
    let step = |k: usize| -> (Vec<f32>, Vec<f32>) {
        let ins = vec![f32_bytes(&x(seed, k))];
        let mut outs = vec![vec![0u8; N * 4], vec![0u8; N * 4]];
        // SAFETY: `m` is a live handle; the buffers outlive the call.
        let rc = unsafe { Io::new(&ins, &mut outs).run(m) };
        assert_eq!(rc, MRT_OK, "{}", last_error());
        (bytes_f32(&outs[0]), bytes_f32(&outs[1]))
    };
    for k in 0..5 {
        let (_, y, q) = expected(seed, k);
        assert_eq!(step(k), (y, q), "step {k}");
    }
    // SAFETY: live handle.
    assert_eq!(unsafe { mrt_model_reset_state(m) }, MRT_OK);
    let (_, y, q) = expected(seed, 0);
    assert_eq!(step(0), (y, q), "first step after reset");
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };
    let _ = std::fs::remove_dir_all(&dir);
}
