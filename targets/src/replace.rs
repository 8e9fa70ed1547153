//! Files replaced whole or not at all: the bytes go to a new temporary file in the same directory
//! (created exclusively, so no existing file or symlink is followed), which is synced and then
//! renamed over the destination, and the directory is synced. A failure at any point removes the
//! temporary file and leaves whatever was at the destination as it was. The tools that write what
//! they derive go through [`replace_file`] and replace an earlier result (`modelrt run -o` and
//! `--dump-state` `.npy` files, `modelrt bench --trace`, bundles written and signed by `cargo
//! xtask compile/convert/sign`). Files that cannot be made again — flash dumps and reads
//! (`gpuflash dump`, `read -o`, `rom dump`), signing keys (`cargo xtask keygen`) — are never
//! replaced without `--yes`, and gpuflash's backups are named by their hash and never replaced.
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Create `path` with the bytes `fill` writes, all or nothing (see the module doc). A symlink at
/// `path` is replaced, not written through.
pub fn replace_file(path: &Path, fill: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let (tmp, mut file) = create_temp_beside(path)?;
    let written = fill(&mut file)
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            std::fs::rename(&tmp, path)
        });
    if written.is_err() {
        // Best effort: the error that matters is the write's.
        let _ = std::fs::remove_file(&tmp);
        return written;
    }
    sync_parent(path);
    Ok(())
}

/// [`replace_file`] with `bytes` as the whole content.
pub fn replace_with(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    replace_file(path, |f| f.write_all(bytes))
}

/// The directory `path` is in (`.` for a bare file name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Make the rename durable. Best effort: the file is already complete under its name, and some
/// file systems cannot sync a directory.
fn sync_parent(path: &Path) {
    if let Ok(d) = File::open(parent(path)) {
        let _ = d.sync_all();
    }
}

/// A new, empty file next to `path` named `.NAME.PID-K.tmp`, created exclusively.
fn create_temp_beside(path: &Path) -> io::Result<(PathBuf, File)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let dir = parent(path);
    let mut k = 0u32;
    loop {
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}-{k}.tmp", std::process::id()));
        let tmp = dir.join(tmp_name);
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            // Left over by an earlier run with the same process id, or another thread's: the next name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && k < 1000 => k += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// Names in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("modelrt-replace-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_write_failing_midway_leaves_the_old_file_intact() {
        let dir = scratch("fail");
        let path = dir.join("y.npy");
        let old = b"an earlier result".to_vec();
        std::fs::write(&path, &old).unwrap();
        let e = replace_file(&path, |f| {
            f.write_all(b"\x93NUMPY partial")?;
            Err(io::Error::other("injected failure"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "injected failure");
        assert_eq!(std::fs::read(&path).unwrap(), old);
        // The temporary file is gone too.
        assert_eq!(listing(&dir), ["y.npy"]);
        // A new file that fails is not created at all.
        let fresh = dir.join("z.npy");
        assert!(replace_file(&fresh, |_| Err(io::Error::other("no"))).is_err());
        assert_eq!(listing(&dir), ["y.npy"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_destination_holds_the_old_bytes_until_the_new_ones_are_complete() {
        let dir = scratch("during");
        let path = dir.join("t.json");
        std::fs::write(&path, b"old").unwrap();
        replace_file(&path, |f| {
            f.write_all(b"new, first half")?;
            // Mid-write the destination is still the old file.
            assert_eq!(std::fs::read(&path).unwrap(), b"old");
            f.write_all(b", second half")
        })
        .unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"new, first half, second half"
        );
        assert_eq!(listing(&dir), ["t.json"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn replaces_a_symlink_instead_of_writing_through_it_and_skips_stale_names() {
        let dir = scratch("link");
        let victim = dir.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let link = dir.join("l.bin");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        replace_with(&link, b"new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(!std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
        let stale = dir.join(format!(".l.bin.{}-0.tmp", std::process::id()));
        std::fs::write(&stale, b"stale").unwrap();
        replace_with(&link, b"newer").unwrap();
        assert_eq!(std::fs::read(&stale).unwrap(), b"stale");
        assert_eq!(std::fs::read(&link).unwrap(), b"newer");
        // A path that names no file is an error, not a panic.
        assert!(replace_with(Path::new("/"), b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
