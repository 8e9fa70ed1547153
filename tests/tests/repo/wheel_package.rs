//! The Python distribution's declaration (`targets/python/pyproject.toml`) against the repository: the `compile`
//! extra pins exactly the exporter venv's packages (`xtask/exporter/requirements.txt`, less its linter), so
//! `pip install 'modelrt[compile]'` runs the exporter with what CI tests it with; and the exporter the wheel ships
//! (`targets/python/python/modelrt/_exporter`, symlinks) is this repository's `export.py` and `mrt/`.
use modelrt_tests::root;

/// The `compile = [...]` list of pyproject.toml, one quoted requirement a line.
fn compile_extra(pyproject: &str) -> Vec<String> {
    let start = pyproject
        .find("\ncompile = [")
        .expect("pyproject.toml declares the compile extra");
    let body = &pyproject[start..];
    let end = body.find(']').expect("the compile extra's list ends");
    body[..end]
        .lines()
        .skip(1)
        .filter_map(|l| l.trim().trim_end_matches(',').strip_prefix('"'))
        .filter_map(|l| l.strip_suffix('"'))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_compile_extra_pins_the_exporter_venv() {
    let pyproject = std::fs::read_to_string(root().join("targets/python/pyproject.toml")).unwrap();
    let mut extra = compile_extra(&pyproject);
    let reqs = std::fs::read_to_string(root().join("xtask/exporter/requirements.txt")).unwrap();
    let mut pins: Vec<String> = reqs
        .lines()
        .map(str::trim)
        // The venv's development tools (the linter, the Python API fuzzer) are not the compiler's.
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with('#')
                && !["ruff==", "atheris=="].iter().any(|t| l.starts_with(t))
        })
        .map(str::to_string)
        .collect();
    extra.sort();
    pins.sort();
    assert!(!pins.is_empty());
    assert_eq!(
        extra, pins,
        "pyproject.toml's compile extra vs requirements.txt"
    );
}

#[test]
fn the_wheel_ships_this_repositorys_exporter() {
    let shipped = root().join("targets/python/python/modelrt/_exporter");
    for part in ["export.py", "mrt"] {
        let link = shipped.join(part);
        let to = std::fs::canonicalize(&link).unwrap_or_else(|e| panic!("{}: {e}", link.display()));
        assert_eq!(
            to,
            std::fs::canonicalize(root().join("xtask/exporter").join(part)).unwrap(),
            "{}",
            link.display()
        );
    }
}
