//! The bundle format's documentation states the header size the code uses: the layout block of
//! `core/src/bundle/mod.rs`, the first line and field table of `core/src/bundle/header.rs`, and the
//! `header_len` field of a bundle the writer produced (the shipped demo bundle) all equal
//! [`HEADER_LEN`].
use modelrt_core::bundle::HEADER_LEN;
use modelrt_tests::root;

fn source(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The number right after `prefix` in `text`.
fn number_after(text: &str, prefix: &str) -> usize {
    let at = text
        .find(prefix)
        .unwrap_or_else(|| panic!("`{prefix}` not found"))
        + prefix.len();
    let digits: String = text[at..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after `{prefix}`"))
}

/// Assert that the number after `prefix` in `text` is [`HEADER_LEN`]; `what` names the place.
fn assert_states_header_len(text: &str, prefix: &str, what: &str) {
    assert_eq!(number_after(text, prefix), HEADER_LEN, "{what}");
}

#[test]
fn module_doc_layout_states_the_header_size() {
    let doc = source("core/src/bundle/mod.rs");
    assert_states_header_len(&doc, "Header (", "`Header (N bytes` in mod.rs");
    let body = doc
        .lines()
        .find(|l| l.contains("Body: postcard"))
        .expect("no Body line in the layout block");
    assert_states_header_len(body, "offset", "Body offset in mod.rs");
}

#[test]
fn header_doc_table_covers_exactly_the_header() {
    let doc = source("core/src/bundle/header.rs");
    assert_states_header_len(&doc, "//! The fixed", "header.rs first line");
    assert_states_header_len(&doc, "header length (", "header_len row");
    // Rows `//! | offset | size | field |`: contiguous, and ending at HEADER_LEN.
    let mut end = 0;
    for row in doc.lines().filter_map(|l| l.strip_prefix("//! | ")) {
        let mut cells = row.split('|').map(str::trim);
        let (Ok(offset), Ok(size)) = (
            cells.next().unwrap().parse::<usize>(),
            cells.next().unwrap_or("").parse::<usize>(),
        ) else {
            continue; // the heading and separator rows
        };
        assert_eq!(
            offset, end,
            "header.rs table row at offset {offset} leaves a gap"
        );
        end = offset + size;
    }
    assert_eq!(end, HEADER_LEN, "header.rs table ends at {end}");
}

#[test]
fn written_bundles_carry_the_documented_size() {
    let bytes = std::fs::read(root().join("targets/assets/demo-x86_64.mrt")).unwrap();
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
    assert_eq!(header_len as usize, HEADER_LEN);
}
