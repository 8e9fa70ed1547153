//! Where `modelrt run` writes, driven as a user would: outputs and state buffers whose names map to
//! the same file name (`a/b` and `a_b`) get distinct files and the mapping is printed — for `run`,
//! `run --steps` and `--dump-state` — and `-o`/`--dump-state` are checked before the model runs; a
//! write that fails midway (`.npy` outputs, state dumps, `bench --trace`) keeps the file it would have
//! replaced and leaves no temporary file. The
//! expected file contents are the test bundle's input, weight and state initialisers, fixed here.
mod cli_common;

use cli_common::*;

/// The copy bundle with colliding output names (`a/b` is the input, `a_b` the weight) and
/// colliding state labels (`s:t` holds S0, `s_t` S1).
fn colliding(dir: &std::path::Path) -> String {
    write(
        dir,
        "names.mrt",
        &copy_bundle(host_cpu(), ["a/b", "a_b"], &["s:t", "s_t"]),
    )
}

#[test]
fn outputs_with_colliding_names_get_distinct_files() {
    let dir = scratch("names-run");
    let bundle = colliding(&dir);
    let out_dir = dir.join("out");
    let o = modelrt(&[
        "run",
        &bundle,
        "-i",
        &input_arg(&dir),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    let out = ok(&o);
    // The name that is already a safe file name keeps it; the other is disambiguated.
    let (x_file, w_file) = (out_dir.join("a_b-1.npy"), out_dir.join("a_b.npy"));
    assert!(
        out.contains(&format!("wrote       {} (output 'a/b')", x_file.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!("wrote       {} (output 'a_b')", w_file.display())),
        "{out}"
    );
    assert_eq!(read_npy(&x_file), (vec![N as u64], X.to_vec()));
    assert_eq!(read_npy(&w_file), (vec![N as u64], W.to_vec()));
}

#[test]
fn steps_and_dump_state_keep_every_file() {
    let dir = scratch("names-steps");
    let bundle = colliding(&dir);
    // Two steps of the same input, stacked.
    let stacked: Vec<f32> = X.iter().chain(X.iter()).copied().collect();
    let input = write(
        &dir,
        "x2.npy",
        &modelrt_targets::npy::encode(
            modelrt_hal::target::DType::F32,
            &[2, N as u64],
            &f32_bytes(&stacked),
        ),
    );
    // One directory for outputs and state: four names, four files.
    let out_dir = dir.join("all");
    let o = modelrt(&[
        "run",
        &bundle,
        "--steps",
        "2",
        "-i",
        &format!("x={input}"),
        "-o",
        out_dir.to_str().unwrap(),
        "--dump-state",
        out_dir.to_str().unwrap(),
    ]);
    let out = ok(&o);
    let w2: Vec<f32> = W.iter().chain(W.iter()).copied().collect();
    assert_eq!(
        read_npy(&out_dir.join("a_b-1.npy")),
        (vec![2, N as u64], stacked)
    );
    assert_eq!(read_npy(&out_dir.join("a_b.npy")), (vec![2, N as u64], w2));
    // `s_t` is safe and keeps its name; `s:t` maps to it too and is disambiguated.
    assert_eq!(read_npy(&out_dir.join("s_t.npy")).1, S1.to_vec());
    assert_eq!(read_npy(&out_dir.join("s_t-1.npy")).1, S0.to_vec());
    assert!(
        out.contains(&format!(
            "state       s:t float32 [4] (16 B) -> {}",
            out_dir.join("s_t-1.npy").display()
        )),
        "{out}"
    );
    let files = std::fs::read_dir(&out_dir).unwrap().count();
    assert_eq!(files, 4, "{out}");
}

#[test]
fn output_options_are_checked_before_the_model_runs() {
    let dir = scratch("checks");
    // The demo takes tens of milliseconds per run; a refusal must not print any of its results.
    let demo = asset(if cfg!(target_arch = "aarch64") {
        "demo-aarch64.mrt"
    } else {
        "demo-x86_64.mrt"
    });
    let bytes = std::fs::read(&demo).unwrap();
    let b = modelrt_core::Bundle::parse(&bytes).unwrap();
    let t = b.body().inputs.get(0).unwrap();
    let data = b.body().reference.unwrap().inputs.get(0).unwrap().data;
    let img = write(
        &dir,
        "img.npy",
        &modelrt_targets::npy::encode(t.dtype, &t.shape, data),
    );
    let demo = demo.to_str().unwrap();
    let input = format!("img={img}");
    let file = write(&dir, "existing-file", b"keep me");
    let state_dir = dir.join("s");
    let cases: [(&[&str], &str); 3] = [
        (
            &["--dump-state", state_dir.to_str().unwrap()],
            "this bundle has no state buffers",
        ),
        (&["-o", &file], "is an existing file, not a directory"),
        (
            &["-o", &format!("{file}/sub")],
            "cannot create the directory",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["run", demo, "-i", &input];
        args.extend_from_slice(extra);
        let o = modelrt(&args);
        let err = one_line_error(&o);
        assert!(err.contains(needle), "{extra:?}: {err}");
        let (out, _) = text(&o);
        assert!(
            !out.contains("output features") && !out.contains("timing"),
            "{extra:?} ran the model before refusing: {out}"
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
}

/// `/proc` is a directory nobody, root included, can create files in.
#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_output_directory_is_refused_before_the_run() {
    let dir = scratch("readonly");
    let bundle = colliding(&dir);
    let o = modelrt(&["run", &bundle, "-i", &input_arg(&dir), "-o", "/proc"]);
    let err = one_line_error(&o);
    assert!(
        err.contains("-o /proc: cannot write into the directory"),
        "{err}"
    );
    assert!(!text(&o).0.contains("output a/b"), "ran before refusing");
}

/// `modelrt ARGS` under a file-size limit of `bytes` (`prlimit --fsize`, with SIGXFSZ ignored so an
/// oversized write fails with EFBIG instead of killing the process): writing any `.npy` file of
/// the copy bundle (144 bytes) fails midway.
fn modelrt_with_file_limit(bytes: u64, args: &[&str]) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("trap '' XFSZ; exec prlimit --fsize={bytes} \"$@\""))
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_modelrt"))
        .args(args)
        .output()
        .expect("sh and prlimit (util-linux) run")
}

/// Names in `dir`, sorted.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_write_failing_midway_keeps_the_existing_file() {
    let dir = scratch("write-fails");
    let bundle = write(&dir, "b.mrt", &copy_bundle(host_cpu(), ["y", "w"], &["s"]));
    let x = input_arg(&dir);
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    // An earlier result the user keeps; smaller than the limit, so the limit alone cannot hurt it.
    let old = b"an earlier y.npy".to_vec();
    for name in ["y.npy", "s.npy"] {
        std::fs::write(out_dir.join(name), &old).unwrap();
    }
    let out = out_dir.to_str().unwrap();
    for (flag, file) in [("-o", "y.npy"), ("--dump-state", "s.npy")] {
        let o = modelrt_with_file_limit(100, &["run", &bundle, "-i", &x, flag, out]);
        let err = one_line_error(&o);
        assert!(
            err.contains(&format!("cannot write {}", out_dir.join(file).display())),
            "{flag}: {err}"
        );
        // The old file is intact and no partial or temporary file is left behind.
        assert_eq!(std::fs::read(out_dir.join(file)).unwrap(), old, "{flag}");
        assert_eq!(listing(&out_dir), ["s.npy", "y.npy"], "{flag}");
    }
    // Without the limit both are replaced whole.
    ok(&modelrt(&[
        "run",
        &bundle,
        "-i",
        &x,
        "-o",
        out,
        "--dump-state",
        out,
    ]));
    assert_eq!(
        read_npy(&out_dir.join("y.npy")),
        (vec![N as u64], X.to_vec())
    );
    assert_eq!(
        read_npy(&out_dir.join("s.npy")),
        (vec![N as u64], S0.to_vec())
    );
}

#[test]
fn a_trace_write_failing_midway_keeps_the_existing_trace() {
    let dir = scratch("trace-fails");
    let demo = asset(&format!("demo-{}.mrt", std::env::consts::ARCH));
    let demo = demo.to_str().unwrap();
    let trace = dir.join("t.json");
    let old = b"{\"an earlier\": \"trace\"}".to_vec();
    std::fs::write(&trace, &old).unwrap();
    let t = trace.to_str().unwrap();
    let args = ["bench", demo, "--iters", "1", "--warmup", "0", "--trace", t];
    // 64 bytes: less than any trace of the demo bundle (its name alone is longer).
    let o = modelrt_with_file_limit(64, &args);
    let err = one_line_error(&o);
    assert!(err.contains(&format!("cannot write {t}")), "{err}");
    assert_eq!(std::fs::read(&trace).unwrap(), old);
    assert_eq!(listing(&dir), ["t.json"]);
    // Without the limit it is replaced whole by a trace-event document.
    ok(&modelrt(&args));
    let doc = std::fs::read_to_string(&trace).unwrap();
    assert!(
        doc.contains("\"traceEvents\"") && doc.trim_end().ends_with('}'),
        "{doc}"
    );
    assert_eq!(listing(&dir), ["t.json"]);
}
