//! Every workspace crate is on the maps a newcomer reads: each member of the root `Cargo.toml`
//! (`members = [...]`, package `name` from its own `Cargo.toml`) has a row in the crate map of
//! `docs/architecture.md` ("## Crate map") and in the layout table of `README.md` ("## Layout"), and
//! the row names both its folder (`` `qcom/ir3/` ``) and its package (`` (`modelrt-ir3`) ``).
use modelrt_tests::root;

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `(folder, package name)` of every workspace member.
fn members() -> Vec<(String, String)> {
    let manifest = read("Cargo.toml");
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("root Cargo.toml has a `members = [...]` line");
    let list = &line[line.find('[').unwrap() + 1..line.rfind(']').unwrap()];
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .map(|dir| {
            let name = package_name(&read(&format!("{dir}/Cargo.toml")))
                .unwrap_or_else(|| panic!("{dir}/Cargo.toml has no package name"));
            (dir, name)
        })
        .collect()
}

/// The `name = "…"` of the `[package]` table of a Cargo manifest.
fn package_name(manifest: &str) -> Option<String> {
    let package = &manifest[manifest.find("[package]")?..];
    package
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "name").then(|| v.trim().trim_matches('"').to_string())
        })
}

/// The first cells of the table rows in the section of `doc` headed `heading`.
fn first_cells(doc: &str, heading: &str) -> Vec<String> {
    let start = doc
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no `{heading}` section"));
    let section = &doc[start + heading.len() + 2..];
    let section = &section[..section.find("\n#").unwrap_or(section.len())];
    section
        .lines()
        .filter(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1).map(|c| c.trim().to_string()))
        .collect()
}

/// The members missing from the table rows `cells`, as readable lines.
fn missing(cells: &[String], members: &[(String, String)]) -> Vec<String> {
    members
        .iter()
        .filter(|(dir, name)| {
            let want = format!("`{dir}/` (`{name}`)");
            !cells.contains(&want)
        })
        .map(|(dir, name)| format!("`{dir}/` (`{name}`)"))
        .collect()
}

#[test]
fn every_workspace_crate_is_in_the_architecture_crate_map() {
    let members = members();
    assert!(members.len() >= 7, "{members:?}");
    let cells = first_cells(&read("docs/architecture.md"), "## Crate map");
    let gone = missing(&cells, &members);
    assert!(
        gone.is_empty(),
        "docs/architecture.md's crate map has no row for {}",
        gone.join(", ")
    );
}

#[test]
fn every_workspace_crate_is_in_the_readme_layout_table() {
    let cells = first_cells(&read("README.md"), "## Layout");
    let gone = missing(&cells, &members());
    assert!(
        gone.is_empty(),
        "README.md's layout table has no row for {}",
        gone.join(", ")
    );
}

#[test]
fn the_readers_find_what_they_look_for() {
    let manifest =
        "[package]\nname = \"modelrt-ir3\"\nversion = \"1\"\n[dependencies]\nname = \"x\"\n";
    assert_eq!(package_name(manifest).as_deref(), Some("modelrt-ir3"));
    let doc = "# T\n## Crate map\n\n| crate | x |\n|---|---|\n| `qcom/ir3/` (`modelrt-ir3`) | y |\n\n## Next\n| `hal/` (`modelrt-hal`) | z |\n";
    let cells = first_cells(doc, "## Crate map");
    assert_eq!(cells, ["crate", "---", "`qcom/ir3/` (`modelrt-ir3`)"]);
    let ir3 = ("qcom/ir3".to_string(), "modelrt-ir3".to_string());
    let hal = ("hal".to_string(), "modelrt-hal".to_string());
    assert!(missing(&cells, &[ir3]).is_empty());
    assert_eq!(missing(&cells, &[hal]), ["`hal/` (`modelrt-hal`)"]);
}
