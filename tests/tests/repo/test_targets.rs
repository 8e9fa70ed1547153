//! No test target may hide behind `required-features`: cargo silently skips such a target when the
//! feature is off, so `cargo test -p CRATE` would pass without running it. A crate whose tests need a
//! feature enables it through a dev-dependency on itself (see `core/Cargo.toml`).
use std::path::Path;

/// `[[test]]` sections of `manifest` that carry `required-features`.
fn gated_tests(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_test = false;
    let mut name = String::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_test = line == "[[test]]";
            name.clear();
        } else if in_test {
            if let Some(n) = line.strip_prefix("name") {
                name = n
                    .trim_start_matches([' ', '='])
                    .trim_matches('"')
                    .to_string();
            } else if line.starts_with("required-features") {
                out.push(name.clone());
            }
        }
    }
    out
}

#[test]
fn no_test_target_requires_features() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let members = [
        "core",
        "hal",
        "targets",
        "targets/capi",
        "targets/python",
        "qcom",
        "qcom/ir3",
        "qcom/hexagon",
        "usbgpu/bridge",
        "usbgpu/amd",
        "usbgpu/flash",
        "xtask",
        "tests",
        "core/fuzz",
    ];
    for m in members {
        let path = root.join(m).join("Cargo.toml");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let gated = gated_tests(&text);
        assert!(
            gated.is_empty(),
            "{m}/Cargo.toml: test target(s) {gated:?} have required-features and would be skipped silently"
        );
    }
}

#[test]
fn the_check_sees_a_gated_test() {
    let m = "[package]\nname = \"x\"\n\n[[test]]\nname = \"t\"\nrequired-features = [\"alloc\"]\n\n[[bin]]\nname = \"b\"\nrequired-features = [\"emu\"]\n";
    assert_eq!(gated_tests(m), vec!["t".to_string()]);
}
