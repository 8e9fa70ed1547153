//! The committed golden vectors (`tests/golden/asm24_usb.json`) are exactly what
//! `tests/golden/record_usb_golden.py` records from tinygrad 0.14.0 today: re-run the recorder with
//! the exporter's Python and compare. Without that Python the test reports a skip (a failure when
//! `CI` or `MODELRT_REQUIRE_PYTHON=1` is set).
use std::path::Path;

/// The one skip helper of the workspace's tests (modelrt-asm24 cannot depend on `modelrt-tests`).
#[path = "../../../tests/src/skip.rs"]
mod skip;

#[test]
fn recorder_reproduces_the_committed_vectors() {
    let Some(py) = skip::exporter_python() else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let out =
        std::env::temp_dir().join(format!("modelrt-asm24-golden-{}.json", std::process::id()));
    let run = std::process::Command::new(&py)
        .arg(dir.join("record_usb_golden.py"))
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run the recorder");
    assert!(
        run.status.success(),
        "record_usb_golden.py failed with {py:?}:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let fresh = std::fs::read_to_string(&out).expect("recorder output");
    let _ = std::fs::remove_file(&out);
    let committed = std::fs::read_to_string(dir.join("asm24_usb.json")).expect("golden file");
    assert!(
        fresh == committed,
        "tests/golden/asm24_usb.json is stale: regenerate it with record_usb_golden.py"
    );
}
