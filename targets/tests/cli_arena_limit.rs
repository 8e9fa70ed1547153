//! A crafted bundle whose arena (and so its output) is larger than `modelrt_core::exec::MAX_ARENA`
//! is refused at load with one `error:` line by every command that loads it — before the device or
//! the CLI allocates anything for it — instead of a failed allocation aborting the process.
mod cli_common;

use cli_common::*;
use modelrt_core::bundle::writer::{write_bundle, BufferSpec, BundleSpec};
use modelrt_core::bundle::{BufferKind, Producer, TensorDesc};
use modelrt_core::exec::MAX_ARENA;
use modelrt_hal::target::DType;

/// Input `x` (f32 [4]) and one f32 output of `elems` elements that no step writes.
fn huge_output(elems: u64) -> Vec<u8> {
    let buf = |label, size, kind| BufferSpec {
        label,
        size,
        dtype: DType::F32,
        kind,
        init: None,
    };
    let io = |name, buffer, n: u64| TensorDesc {
        name,
        buffer,
        offset: 0,
        dtype: DType::F32,
        shape: [n].into_iter().collect(),
    };
    let spec = BundleSpec {
        target: host_cpu(),
        producer: Producer {
            tinygrad: "0.14.0",
            tinymesa: None,
            source_sha256: [5; 32],
            dev: "TEST",
            flags: "",
        },
        buffers: vec![
            buf("input:x", (N * 4) as u64, BufferKind::Input),
            buf("output:y", elems * 4, BufferKind::Output),
        ],
        kernels: vec![],
        init: vec![],
        run: vec![],
        inputs: vec![io("x", 0, N as u64)],
        outputs: vec![io("y", 1, elems)],
        reference: None,
        index_checks: vec![],
        output_slices: vec![],
        checkpoint: "",
    };
    write_bundle(&spec).expect("valid bundle")
}

#[test]
fn arena_over_the_limit_is_refused_in_one_line() {
    let dir = scratch("arena-limit");
    // An 80 GiB output (the arena is a little more): over the limit, and within what a large host
    // could map, so the refusal must not depend on this host running out of memory.
    let bundle = write(&dir, "huge.mrt", &huge_output(20 << 30));
    let x = input_arg(&dir);
    for args in [
        vec!["run", bundle.as_str(), "-i", x.as_str()],
        vec!["bench", bundle.as_str(), "--iters", "1", "--warmup", "0"],
    ] {
        let err = one_line_error(&modelrt(&args));
        assert!(
            err.contains(&format!("exceeds the 64 GiB limit ({MAX_ARENA} bytes)")),
            "{args:?}: {err}"
        );
    }
    // `info` only reads the bundle: it still describes it.
    ok(&modelrt(&["info", &bundle]));
}
