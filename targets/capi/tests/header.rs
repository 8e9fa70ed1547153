//! `include/modelrt.h` is written by hand (cbindgen is not in this workspace's dependency set): this
//! checks it against the crate's source. Every `extern "C"` function in `src/ffi` is declared in the
//! header with the same return and parameter types (Rust types translated to C by the table below),
//! the header declares no function the crate lacks, and the status codes, dtype codes and struct
//! layout agree with the Rust definitions.
use std::collections::BTreeMap;
use std::path::Path;

use modelrt::dtype::MrtDtype;
use modelrt::error::*;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

/// A C type in one spelling: `const T` becomes `T const`, one space between tokens.
fn canon_c(t: &str) -> String {
    let spaced = t.replace('*', " * ");
    let mut toks: Vec<&str> = spaced.split_whitespace().collect();
    if toks.len() >= 2 && toks[0] == "const" {
        toks.swap(0, 1);
    }
    toks.join(" ")
}

/// The C spelling (canonical) of a Rust FFI type.
fn rust_to_c(t: &str) -> String {
    let t = t.trim();
    if let Some(inner) = t.strip_prefix("*const ") {
        return format!("{} const *", rust_to_c(inner));
    }
    if let Some(inner) = t.strip_prefix("*mut ") {
        return format!("{} *", rust_to_c(inner));
    }
    match t {
        "c_char" => "char",
        "c_void" | "()" => "void",
        "usize" => "size_t",
        "i32" => "int32_t",
        "u32" => "uint32_t",
        "i64" => "int64_t",
        "MrtModel" => "mrt_model",
        "MrtTensorInfo" => "mrt_tensor_info",
        other => panic!("no C spelling for Rust type {other}: extend the table"),
    }
    .to_string()
}

/// Split a parameter list on top-level commas, dropping empty items.
fn params(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

type Sig = (String, Vec<String>);

/// `extern "C" fn`s of the Rust source: name → (return type, parameter types), in C spelling.
fn rust_fns(src: &str) -> BTreeMap<String, Sig> {
    let mut out = BTreeMap::new();
    let mut rest = src;
    while let Some(at) = rest.find("extern \"C\" fn ") {
        rest = &rest[at + "extern \"C\" fn ".len()..];
        let open = rest.find('(').unwrap();
        let name = rest[..open].trim().to_string();
        let close = rest.find(')').unwrap();
        let body = rest.find('{').unwrap();
        let ret = rest[close + 1..body].trim();
        let ret = ret.strip_prefix("->").map_or("void".into(), rust_to_c);
        let ps = params(&rest[open + 1..close])
            .iter()
            .map(|p| rust_to_c(p.split_once(':').unwrap().1))
            .collect();
        out.insert(name, (ret, ps));
    }
    out
}

/// Function declarations of the header: name → (return type, parameter types), canonical C.
fn header_fns(h: &str) -> BTreeMap<String, Sig> {
    // Drop comments and preprocessor lines, then split statements on ';'.
    let mut code = String::new();
    let mut rest = h;
    while let Some(at) = rest.find("/*") {
        code.push_str(&rest[..at]);
        rest = &rest[at + rest[at..].find("*/").unwrap() + 2..];
    }
    code.push_str(rest);
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = BTreeMap::new();
    for stmt in code.split(';') {
        let stmt = stmt.trim();
        if stmt.starts_with("typedef") || !stmt.contains("mrt_") || !stmt.ends_with(')') {
            continue;
        }
        let stmt = stmt.rsplit('}').next().unwrap().trim();
        let open = stmt.find('(').unwrap();
        let head = &stmt[..open];
        let name_at = head
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap()
            + 1;
        let (ret, name) = (canon_c(&head[..name_at]), head[name_at..].to_string());
        let ps: Vec<String> = params(&stmt[open + 1..stmt.len() - 1])
            .iter()
            .filter(|p| p.as_str() != "void")
            .map(|p| {
                // Drop the parameter name (the last identifier).
                let cut = p
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap()
                    + 1;
                canon_c(&p[..cut])
            })
            .collect();
        out.insert(name, (ret, ps));
    }
    out
}

#[test]
fn every_exported_function_is_declared_with_its_types() {
    let rust = rust_fns(&read("src/ffi/mod.rs"));
    let header = header_fns(&read("include/modelrt.h"));
    assert_eq!(rust.len(), 9, "exported functions found: {:?}", rust.keys());
    assert_eq!(
        rust.keys().collect::<Vec<_>>(),
        header.keys().collect::<Vec<_>>(),
        "functions in the crate vs declared in modelrt.h"
    );
    for (name, sig) in &rust {
        assert_eq!(&header[name], sig, "{name}: header vs crate");
    }
}

/// `#define NAME VALUE` lines and `NAME = VALUE,` enum items of the header.
fn header_constants(h: &str) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for l in h.lines().map(str::trim) {
        let (name, value) = if let Some(d) = l.strip_prefix("#define ") {
            match d.split_once(' ') {
                Some((n, v)) => (n, v),
                None => continue,
            }
        } else if let Some((n, v)) = l.trim_end_matches(',').split_once(" = ") {
            (n, v)
        } else {
            continue;
        };
        if let Ok(v) = value.trim().parse() {
            out.insert(name.trim().to_string(), v);
        }
    }
    out
}

#[test]
fn codes_and_layout_agree() {
    let c = header_constants(&read("include/modelrt.h"));
    for (name, v) in [
        ("MRT_OK", MRT_OK),
        ("MRT_ERR_INVALID_ARGUMENT", MRT_ERR_INVALID_ARGUMENT),
        ("MRT_ERR_LOAD", MRT_ERR_LOAD),
        ("MRT_ERR_RUN", MRT_ERR_RUN),
        ("MRT_ERR_PANIC", MRT_ERR_PANIC),
        ("MRT_MAX_DIMS", modelrt::info::MRT_MAX_DIMS as i32),
    ] {
        assert_eq!(c.get(name), Some(&i64::from(v)), "{name}");
    }
    // Every dtype of the bundle format has its code, and the header spells it the same.
    use modelrt_hal::target::DType::*;
    let dtypes = [
        ("F32", F32),
        ("F16", F16),
        ("BF16", BF16),
        ("F64", F64),
        ("I8", I8),
        ("U8", U8),
        ("I16", I16),
        ("U16", U16),
        ("I32", I32),
        ("U32", U32),
        ("I64", I64),
        ("U64", U64),
        ("BOOL", Bool),
    ];
    for (name, d) in dtypes {
        let code = MrtDtype::from(d) as i32;
        assert_eq!(
            c.get(&format!("MRT_DTYPE_{name}")),
            Some(&i64::from(code)),
            "{name}"
        );
    }
    let enum_items = c.keys().filter(|k| k.starts_with("MRT_DTYPE_")).count();
    assert_eq!(enum_items, dtypes.len(), "header dtype items");
    // The struct as C lays it out on LP64: pointer, i32, u32, 8 x i64, size_t.
    assert_eq!(
        std::mem::size_of::<modelrt::info::MrtTensorInfo>(),
        8 + 4 + 4 + 64 + 8
    );
    assert_eq!(
        std::mem::offset_of!(modelrt::info::MrtTensorInfo, nbytes),
        80
    );
}

#[test]
fn the_parsers_see_a_mismatch() {
    let h = header_fns("int32_t mrt_x(const mrt_model *m, size_t i);\nvoid mrt_y(void);");
    let r = rust_fns(
        "pub unsafe extern \"C\" fn mrt_x(m: *mut MrtModel, i: usize) -> i32 {}\n\
         pub extern \"C\" fn mrt_y() {}",
    );
    assert_eq!(h["mrt_y"], r["mrt_y"]);
    assert_eq!(h["mrt_x"].1[1], r["mrt_x"].1[1]);
    assert_ne!(h["mrt_x"], r["mrt_x"], "const vs mut pointer must differ");
}
