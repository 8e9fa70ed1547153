//! What `modelrt` prints, read as a new user would: counts with the right plural, sizes and times in
//! the unit their magnitude calls for (no `0.00 MiB`, no `0.000 ms`), what `--no-mmap` did with the
//! weights, a `verify` refusal that suggests a command that exists, and a `--help` that lists every
//! device.
mod cli_common;

use cli_common::*;

#[test]
fn help_lists_every_device() {
    let out = ok(&modelrt(&["--help"]));
    for device in [
        "cpu", "qcom", "qcom-emu", "dsp", "dsp-emu", "usb", "usb-emu",
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("  {device:9} "))),
            "{device} missing from:\n{out}"
        );
    }
}

#[test]
fn bench_prints_plurals_and_units_by_magnitude() {
    let dir = scratch("polish-bench");
    let bundle = write(&dir, "copy.mrt", &copy_bundle(host_cpu(), ["y", "w"], &[]));
    let out = ok(&modelrt(&[
        "bench",
        &bundle,
        "--iters",
        "1",
        "--warmup",
        "0",
        "--threads",
        "1",
    ]));
    assert!(out.contains("device      cpu (1 thread)\n"), "{out}");
    assert!(out.contains("(1 iter, 0 warm-up)"), "{out}");
    // Two 16-byte copies: the times are far below a millisecond, the sizes below a KiB.
    assert!(
        !out.contains("0.000 ms") && !out.contains("0.00 MiB"),
        "{out}"
    );
    assert!(
        out.contains("read in place from the bundle file (16 B)"),
        "{out}"
    );
}

#[test]
fn no_mmap_says_the_weights_were_copied() {
    let dir = scratch("polish-nommap");
    let bundle = write(&dir, "copy.mrt", &copy_bundle(host_cpu(), ["y", "w"], &[]));
    let out = ok(&modelrt(&["verify", &bundle, "--no-mmap"]));
    let line = out
        .lines()
        .find(|l| l.starts_with("weights"))
        .unwrap_or_else(|| panic!("no weights line: {out}"));
    assert!(
        line.contains("1 buffer (16 B) copied into the arena at load"),
        "{line}"
    );
    assert!(!line.contains("0 read in place"), "{line}");
    // Mapped: the one weight is accounted for either way.
    let out = ok(&modelrt(&["verify", &bundle]));
    let line = out.lines().find(|l| l.starts_with("weights")).unwrap();
    assert!(
        line.contains("read in place") && line.contains("copied"),
        "{line}"
    );
}

#[test]
fn verify_without_a_reference_suggests_what_works() {
    let dir = scratch("polish-noref");
    let bundle = write(
        &dir,
        "noref.mrt",
        &copy_bundle_with(host_cpu(), ["y", "w"], &[], false),
    );
    let err = one_line_error(&modelrt(&["verify", &bundle]));
    assert!(err.contains("has no embedded reference"), "{err}");
    assert!(err.contains("modelrt run"), "{err}");
    // `convert` has no --reference: the message must not send its bundles there.
    assert!(!err.contains("compile it with --reference"), "{err}");
}

#[test]
fn tolerances_print_in_their_shortest_form() {
    let dir = scratch("polish-tol");
    let bundle = write(&dir, "copy.mrt", &copy_bundle(host_cpu(), ["y", "w"], &[]));
    let out = ok(&modelrt(&["info", &bundle]));
    assert!(out.contains("atol 1e-4, rtol 1e-4"), "{out}");
    let out = ok(&modelrt(&["verify", &bundle]));
    assert!(out.contains("outside atol 1e-4 rtol 1e-4"), "{out}");
}

/// A bundle whose outputs are an int32 copy of its input and a bool weight.
fn int_bool_bundle() -> Vec<u8> {
    use modelrt_core::bundle::writer::{write_bundle, BufferSpec, BundleSpec};
    use modelrt_core::bundle::{BufRef, BufferKind, Producer, Step, TensorDesc};
    use modelrt_hal::target::DType;
    let flags: &'static [u8] = &[0, 1, 1, 0];
    let buf = |label, size, dtype, kind, init| BufferSpec {
        label,
        size,
        dtype,
        kind,
        init,
    };
    let copy = |dst, src, size| Step::Copy {
        dst: BufRef {
            buffer: dst,
            offset: 0,
        },
        src: BufRef {
            buffer: src,
            offset: 0,
        },
        size,
    };
    let io = |name, buffer, dtype| TensorDesc {
        name,
        buffer,
        offset: 0,
        dtype,
        shape: [4u64].into_iter().collect(),
    };
    write_bundle(&BundleSpec {
        target: host_cpu(),
        producer: Producer {
            tinygrad: "0.14.0",
            tinymesa: None,
            source_sha256: [6; 32],
            dev: "TEST",
            flags: "",
        },
        buffers: vec![
            buf("input:x", 16, DType::I32, BufferKind::Input, None),
            buf("flags", 4, DType::Bool, BufferKind::Weight, Some(flags)),
            buf("output:n", 16, DType::I32, BufferKind::Output, None),
            buf("output:b", 4, DType::Bool, BufferKind::Output, None),
        ],
        kernels: vec![],
        init: vec![],
        run: vec![copy(2, 0, 16), copy(3, 1, 4)],
        inputs: vec![io("x", 0, DType::I32)],
        outputs: vec![io("n", 2, DType::I32), io("b", 3, DType::Bool)],
        reference: None,
        index_checks: vec![],
        output_slices: vec![],
        checkpoint: "",
    })
    .expect("int/bool test bundle is valid")
}

#[test]
fn integer_and_bool_outputs_are_summarised_in_their_own_terms() {
    let dir = scratch("polish-int");
    let bundle = write(&dir, "int.mrt", &int_bool_bundle());
    let x: Vec<u8> = [7i32, -3, 2_000_000_001, 0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let input = write(
        &dir,
        "x.npy",
        &modelrt_targets::npy::encode(modelrt_hal::target::DType::I32, &[4], &x),
    );
    let out = ok(&modelrt(&["run", &bundle, "-i", &format!("x={input}")]));
    assert!(
        out.contains(
            "output n [4] int32: min -3 max 2000000001 (at 2) mean 500000001.25000  [7, -3, 2000000001, 0]"
        ),
        "{out}"
    );
    assert!(
        out.contains("output b [4] bool: 2 true of 4 (first at 1)  [false, true, true, false]"),
        "{out}"
    );
}
