//! The cross-crate tests stay laid out by kind (tests/README.md): `tests/tests/` holds only group folders, each a test
//! binary with a `main.rs`, and every group is listed in tests/README.md.
use modelrt_tests::root;

#[test]
fn tests_are_grouped_by_kind_and_every_group_is_documented() {
    let dir = root().join("tests/tests");
    let readme = std::fs::read_to_string(root().join("tests/README.md")).expect("tests/README.md");
    let mut groups = 0;
    for e in std::fs::read_dir(&dir).expect("tests/tests") {
        let p = e.expect("entry").path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            p.is_dir(),
            "tests/tests/{name} is a loose file: put it in a group folder (tests/README.md)"
        );
        assert!(
            p.join("main.rs").exists(),
            "tests/tests/{name}/ has no main.rs"
        );
        assert!(
            readme.contains(&format!("| `{name}` |")),
            "tests/README.md does not list the group `{name}`"
        );
        groups += 1;
    }
    assert!(groups >= 7, "found only {groups} groups");
}
