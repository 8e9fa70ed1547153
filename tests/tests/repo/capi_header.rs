//! The checked-in C header `targets/capi/include/modelrt.h` is exactly what cbindgen generates from
//! the C API crate's source (`xtask::capi_header`, config `targets/capi/cbindgen.toml`), so the
//! declarations, constants, dtype codes and struct layout C users compile against are the Rust
//! definitions, and their documentation is the Rust doc comments. (That the generated header also
//! compiles and links against the library is `tests/tests/api/capi.rs`, which builds `examples/c/`
//! with it.)
use modelrt_tests::root;

#[test]
fn checked_in_header_equals_the_cbindgen_output() {
    let generated = xtask::capi_header::generate(&root()).expect("cbindgen generates modelrt.h");
    let path = xtask::capi::header_path(&root());
    let checked_in = std::fs::read_to_string(&path).unwrap();
    if checked_in != generated {
        let line = checked_in
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or(
                checked_in.lines().count().min(generated.lines().count()),
                |i| i,
            )
            + 1;
        panic!(
            "{} differs from the header cbindgen generates from targets/capi/src (first at line {line}): \
             run `cargo xtask capi --write-header` and commit the result",
            path.display()
        );
    }
    // what C callers rely on is there
    for decl in [
        "typedef struct mrt_model mrt_model;",
        "int32_t mrt_model_load(const char *path, const char *device, struct mrt_model **out);",
        "#define MRT_OK 0",
        "MRT_DTYPE_BOOL = 12,",
        "int64_t dims[MRT_MAX_DIMS];",
        "const char *mrt_last_error(void);",
    ] {
        assert!(generated.contains(decl), "{decl}\n{generated}");
    }
}
