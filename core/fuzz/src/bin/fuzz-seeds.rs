//! Writes the seed corpus (`modelrt_core_fuzz::seed_bundles`) into the directory given as the only
//! argument. Built without sanitizer flags by `run.sh`.
#![forbid(unsafe_code)]
fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("error: usage: fuzz-seeds DIR");
        std::process::exit(2);
    };
    let dir = std::path::PathBuf::from(dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: cannot create {}: {e}", dir.display());
        std::process::exit(1);
    }
    for (name, bytes) in modelrt_core_fuzz::seed_bundles() {
        if let Err(e) = modelrt_core::Bundle::parse(&bytes) {
            eprintln!("error: seed {name} does not validate: {e}");
            std::process::exit(1);
        }
        let path = dir.join(name);
        if let Err(e) = std::fs::write(&path, &bytes) {
            eprintln!("error: cannot write {}: {e}", path.display());
            std::process::exit(1);
        }
    }
}
