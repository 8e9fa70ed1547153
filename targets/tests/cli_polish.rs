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
