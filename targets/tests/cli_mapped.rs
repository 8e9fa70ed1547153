//! How `modelrt` gets a bundle's bytes (`bundle_file`): a regular file is mapped and its weights read
//! in place, `--no-mmap` reads it, a pipe or FIFO is read (no mapping possible) — all verify against
//! the demo bundle's embedded onnxruntime reference with the same errors — and a truncated file is
//! one `error:` line.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn modelrt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_modelrt"))
}

/// The demo bundle for this host's architecture (a real tinygrad bundle with an onnxruntime
/// reference).
fn host_demo() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    dir.join(format!("assets/demo-{}.mrt", std::env::consts::ARCH))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `modelrt verify` succeeded; returns its per-output lines (names, errors against the reference).
fn verified(o: &Output, source: &str) -> Vec<String> {
    let out = stdout(o);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains(&format!("bundle      {source}")), "{out}");
    assert!(out.contains("verified    outputs match the embedded reference"));
    out.lines()
        .filter(|l| l.starts_with("verify "))
        .map(str::to_string)
        .collect()
}

/// `modelrt verify` with the bundle bytes written into its stdin (a pipe) or a FIFO.
fn verify_streamed(target: &str, fifo: Option<&Path>) -> Output {
    let bytes = std::fs::read(host_demo()).unwrap();
    let mut child = modelrt()
        .args(["verify", target])
        .stdin(if fifo.is_some() {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut sink: Box<dyn Write> = match fifo {
        // Opening a FIFO for writing blocks until modelrt opens it for reading.
        Some(p) => Box::new(std::fs::OpenOptions::new().write(true).open(p).unwrap()),
        None => Box::new(child.stdin.take().unwrap()),
    };
    sink.write_all(&bytes).unwrap();
    drop(sink);
    child.wait_with_output().unwrap()
}

#[test]
fn mapped_read_piped_and_fifo_bundles_verify_alike() {
    let demo = host_demo();
    let o = modelrt()
        .args(["verify", demo.to_str().unwrap()])
        .output()
        .unwrap();
    let mapped = verified(&o, "mapped read-only");
    // The weights are read in place from the file, none copied.
    let out = stdout(&o);
    let line = out.lines().find(|l| l.starts_with("weights ")).unwrap();
    assert!(
        !line.starts_with("weights     0 ") && line.contains(", 0 copied"),
        "{line}"
    );
    assert!(!mapped.is_empty());

    let o = modelrt()
        .args(["verify", "--no-mmap", demo.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(verified(&o, "read into memory (--no-mmap)"), mapped);
    assert!(
        stdout(&o).contains("weights     12 buffers (") // the demo's 12 weight buffers
            && stdout(&o).contains("KiB) copied into the arena at load"),
        "{}",
        stdout(&o)
    );

    let o = verify_streamed("/dev/stdin", None);
    assert_eq!(
        verified(&o, "read into memory (not a regular file)"),
        mapped
    );

    let dir = std::env::temp_dir().join(format!("modelrt-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("bundle.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo failed");
    let o = verify_streamed(fifo.to_str().unwrap(), Some(&fifo));
    assert_eq!(
        verified(&o, "read into memory (not a regular file)"),
        mapped
    );
}

#[test]
fn a_truncated_mapped_file_is_one_error_line() {
    let bytes = std::fs::read(host_demo()).unwrap();
    let dir = std::env::temp_dir().join(format!("modelrt-trunc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Cut inside the weights blob and inside the header: both are caught before anything runs.
    for (name, len, needle) in [
        ("weights", bytes.len() - 100, "truncated"),
        ("header", 20, "shorter than the bundle header"),
    ] {
        let p = dir.join(format!("{name}.mrt"));
        std::fs::write(&p, &bytes[..len]).unwrap();
        for extra in [&[][..], &["--no-mmap"][..]] {
            let o = modelrt()
                .arg("verify")
                .args(extra)
                .arg(&p)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{name} {extra:?}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            assert!(err.starts_with("error: ") && err.contains(needle), "{err}");
        }
    }
    // An empty file cannot be mapped: it is read, and refused the same way.
    let p = dir.join("empty.mrt");
    std::fs::write(&p, b"").unwrap();
    let o = modelrt().arg("verify").arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
}
