//! Writes the seed corpus of a fuzz target into the directory given as the first argument: the seed
//! bundles (`modelrt_core_fuzz::seed_bundles`), or for the target named `capi_load_run` in the second
//! argument those bundles behind C API arguments (`modelrt_core_fuzz::capi_seeds`). Built without
//! sanitizer flags by `run.sh`.
#![forbid(unsafe_code)]
fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("error: usage: fuzz-seeds DIR [TARGET]");
        std::process::exit(2);
    };
    let dir = std::path::PathBuf::from(dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: cannot create {}: {e}", dir.display());
        std::process::exit(1);
    }
    let capi = std::env::args_os()
        .nth(2)
        .is_some_and(|t| t == "capi_load_run");
    let seeds: Vec<(String, Vec<u8>)> = if capi {
        modelrt_core_fuzz::capi_seeds()
    } else {
        modelrt_core_fuzz::seed_bundles()
            .into_iter()
            .map(|(n, b)| (n.to_string(), b))
            .collect()
    };
    for (name, bytes) in seeds {
        let skip = if capi {
            modelrt_core_fuzz::CAPI_ARGS
        } else {
            0
        };
        if let Err(e) = modelrt_core::Bundle::parse(&bytes[skip..]) {
            eprintln!("error: seed {name} does not validate: {e}");
            std::process::exit(1);
        }
        let path = dir.join(&name);
        if let Err(e) = std::fs::write(&path, &bytes) {
            eprintln!("error: cannot write {}: {e}", path.display());
            std::process::exit(1);
        }
    }
}
