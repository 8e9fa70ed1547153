//! The compile options xtask passes to export.py are the ones its argparse parser takes: the flags of
//! `xtask::exporter::{EXPORT_OPTIONS, PICKLE_OPTIONS, SOURCE_FLAGS, ROLE_FLAGS}` and `--out` against `export.option_names()`, run
//! with the exporter's Python. Without that Python the test is a reported skip, a failure under CI or
//! `MODELRT_REQUIRE_PYTHON=1` (tests/src/skip.rs).
use xtask::exporter::{EXPORT_OPTIONS, PICKLE_OPTIONS, ROLE_FLAGS, SOURCE_FLAGS};

#[path = "../../tests/src/skip.rs"]
mod skip;

#[test]
fn the_option_table_is_export_py_parser() {
    let Some(python) = skip::exporter_python() else {
        return;
    };
    let out = xtask::exporter_python::command(&python)
        .args([
            "-c",
            "import export, json; print(json.dumps(export.option_names()))",
        ])
        .output()
        .expect("run the exporter's Python");
    assert!(
        out.status.success(),
        "export.option_names() failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parser: Vec<String> = serde_json::from_slice(&out.stdout).expect("a JSON list of options");
    let mut table: Vec<String> = EXPORT_OPTIONS
        .iter()
        .chain(PICKLE_OPTIONS)
        .map(|o| o.0)
        .chain(SOURCE_FLAGS.iter().copied())
        .chain(ROLE_FLAGS.iter().copied())
        .chain(["--out"])
        .map(String::from)
        .collect();
    table.sort();
    assert_eq!(
        parser, table,
        "export.py's options (left) differ from the ones xtask passes (right, xtask/src/exporter.rs EXPORT_OPTIONS / PICKLE_OPTIONS): declare the option once in ExportArgs and add it to the table"
    );
}
