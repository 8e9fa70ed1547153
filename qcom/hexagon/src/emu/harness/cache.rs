//! Where the built `qemu_harness` is kept: a directory only the current user can reach, so no
//! other user can plant the program that runs, or a symlink that redirects a write.
//!
//! - The root is `$XDG_RUNTIME_DIR/modelrt` when `XDG_RUNTIME_DIR` is an absolute path to a
//!   directory owned by the current user that no one else can enter (as the XDG spec requires),
//!   else `modelrt-<uid>` in the temp directory (`$TMPDIR`, default `/tmp`).
//! - The root is created with mode 0700. An existing root is used only if it is a real directory
//!   (not a symlink) owned by the current user with no group or other permissions; anything else is
//!   refused with an error naming it, never repaired or followed.
//! - The executable is `ROOT/qemu-harness-<hash of sources and flags>`, reused only if it is a
//!   regular file owned by the current user that no one else can write. It is built in a fresh
//!   directory `ROOT/build-<pid>-<k>` (created exclusively, sources written with `O_CREAT|O_EXCL`
//!   and `O_NOFOLLOW`) and renamed into place, so concurrent builds never share a file.
use std::ffi::OsStr;
use std::fs::{DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The process's effective user id, from `/proc/self/status` (the harness runs under qemu-user,
/// which is Linux-only; reading it needs no `unsafe` call).
pub(crate) fn effective_uid() -> Result<u32, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status for the user id: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|euid| euid.parse().ok())
        .ok_or_else(|| "cannot find the effective user id in /proc/self/status".to_string())
}

/// Why `path` (already `lstat`ed as `meta`) is not private to `uid`, if it is not.
fn not_private(meta: &std::fs::Metadata, uid: u32, want_dir: bool) -> Option<String> {
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Some("it is a symbolic link".into());
    }
    if want_dir && !ft.is_dir() {
        return Some("it is not a directory".into());
    }
    if !want_dir && !ft.is_file() {
        return Some("it is not a regular file".into());
    }
    if meta.uid() != uid {
        return Some(format!(
            "it is owned by uid {}, not by uid {uid}",
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o7777;
    // A directory must be closed to everyone else; a file must not be writable by anyone else.
    let open = if want_dir { 0o077 } else { 0o022 };
    if mode & open != 0 {
        return Some(format!(
            "its mode is {mode:04o}, not private to its owner ({})",
            if want_dir {
                "0700"
            } else {
                "no group/other write"
            }
        ));
    }
    None
}

/// Create `dir` with mode 0700 unless it exists, then require that it is a private directory of
/// `uid` (see the module doc).
fn ensure_private_dir(dir: &Path, uid: u32) -> Result<(), String> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| format!("cannot inspect {}: {e}", dir.display()))?;
    match not_private(&meta, uid, true) {
        None => Ok(()),
        Some(why) => Err(format!(
            "refusing to keep the qemu harness in {}: {why}; remove it (or set XDG_RUNTIME_DIR to a private directory)",
            dir.display()
        )),
    }
}

/// The private root for user `uid` (created if missing): under `xdg_runtime` when that is usable,
/// else `modelrt-<uid>` under `tmp`.
pub(crate) fn private_root(
    xdg_runtime: Option<&OsStr>,
    tmp: &Path,
    uid: u32,
) -> Result<PathBuf, String> {
    let xdg = xdg_runtime.map(Path::new).filter(|p| {
        p.is_absolute()
            && std::fs::symlink_metadata(p).is_ok_and(|m| not_private(&m, uid, true).is_none())
    });
    let root = match xdg {
        Some(x) => x.join("modelrt"),
        None => tmp.join(format!("modelrt-{uid}")),
    };
    ensure_private_dir(&root, uid)?;
    Ok(root)
}

/// Whether a usable executable is cached at `exe`: `Ok(false)` if nothing is there, an error if
/// something is there that is not a private regular file of `uid`.
pub(crate) fn cached(exe: &Path, uid: u32) -> Result<bool, String> {
    match std::fs::symlink_metadata(exe) {
        Ok(meta) => match not_private(&meta, uid, false) {
            None => Ok(true),
            Some(why) => Err(format!(
                "refusing to run the cached qemu harness {}: {why}; remove it",
                exe.display()
            )),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot inspect {}: {e}", exe.display())),
    }
}

/// A new, empty directory `root/PREFIX-<pid>-<k>` (mode 0700), created exclusively.
pub(crate) fn fresh_dir(root: &Path, prefix: &str) -> io::Result<PathBuf> {
    for k in 0..1000u32 {
        let dir = root.join(format!("{prefix}-{}-{k}", std::process::id()));
        match DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no free {prefix}-* name in {}", root.display()),
    ))
}

/// Write `bytes` to a new file `path` (mode 0600): fails if anything, a symlink included, is there.
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("modelrt-cache-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn uid() -> u32 {
        effective_uid().unwrap()
    }

    #[test]
    fn effective_uid_matches_a_new_files_owner() {
        let dir = scratch("uid");
        assert_eq!(std::fs::metadata(&dir).unwrap().uid(), uid());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn root_is_created_private_per_user() {
        let tmp = scratch("fresh");
        let root = private_root(None, &tmp, uid()).unwrap();
        assert_eq!(root, tmp.join(format!("modelrt-{}", uid())));
        let meta = std::fs::symlink_metadata(&root).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.mode() & 0o777, 0o700);
        // Reused as it is.
        assert_eq!(private_root(None, &tmp, uid()).unwrap(), root);
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn a_planted_symlink_at_the_root_is_refused_not_followed() {
        let tmp = scratch("symlink");
        let elsewhere = tmp.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o700)).unwrap();
        let root = tmp.join(format!("modelrt-{}", uid()));
        std::os::unix::fs::symlink(&elsewhere, &root).unwrap();
        let e = private_root(None, &tmp, uid()).unwrap_err();
        assert!(e.contains("it is a symbolic link"), "{e}");
        assert!(e.starts_with(&format!(
            "refusing to keep the qemu harness in {}",
            root.display()
        )));
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn a_root_open_to_others_or_owned_by_another_user_is_refused() {
        let tmp = scratch("perms");
        let root = tmp.join(format!("modelrt-{}", uid()));
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = private_root(None, &tmp, uid()).unwrap_err();
        assert!(e.contains("its mode is 0755"), "{e}");
        // The same directory seen by another user: not theirs.
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
        let other = uid() + 1;
        let other_root = tmp.join(format!("modelrt-{other}"));
        std::fs::rename(&root, &other_root).unwrap();
        let e = private_root(None, &tmp, other).unwrap_err();
        assert!(
            e.contains(&format!("it is owned by uid {}, not by uid {other}", uid())),
            "{e}"
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn xdg_runtime_dir_is_used_only_when_private() {
        let tmp = scratch("xdg");
        let xdg = tmp.join("run");
        std::fs::create_dir(&xdg).unwrap();
        std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o700)).unwrap();
        let root = private_root(Some(xdg.as_os_str()), &tmp, uid()).unwrap();
        assert_eq!(root, xdg.join("modelrt"));
        // Open to others (or relative): the temp directory's per-user root instead.
        std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o777)).unwrap();
        let fallback = tmp.join(format!("modelrt-{}", uid()));
        assert_eq!(
            private_root(Some(xdg.as_os_str()), &tmp, uid()).unwrap(),
            fallback
        );
        assert_eq!(
            private_root(Some(OsStr::new("run")), &tmp, uid()).unwrap(),
            fallback
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn only_a_private_regular_file_is_reused() {
        let tmp = scratch("exe");
        let exe = tmp.join("qemu-harness-0");
        assert_eq!(cached(&exe, uid()), Ok(false));
        write_new(&exe, b"x").unwrap();
        assert_eq!(cached(&exe, uid()), Ok(true));
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(cached(&exe, uid())
            .unwrap_err()
            .contains("its mode is 0777"));
        assert!(cached(&exe, uid() + 1)
            .unwrap_err()
            .contains("owned by uid"));
        let link = tmp.join("qemu-harness-1");
        std::os::unix::fs::symlink(&exe, &link).unwrap();
        assert!(cached(&link, uid()).unwrap_err().contains("symbolic link"));
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn sources_never_follow_or_overwrite() {
        let tmp = scratch("write");
        let victim = tmp.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let link = tmp.join("qemu_harness.c");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(write_new(&link, b"int main;").is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        // A dangling symlink is not followed either (O_EXCL refuses it).
        let dangling = tmp.join("dsp_helpers.c");
        std::os::unix::fs::symlink(tmp.join("missing"), &dangling).unwrap();
        assert!(write_new(&dangling, b"x").is_err());
        assert!(!tmp.join("missing").exists());
        // An existing file is not overwritten.
        assert!(write_new(&victim, b"x").is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        // Fresh directories never collide.
        let (a, b) = (
            fresh_dir(&tmp, "build").unwrap(),
            fresh_dir(&tmp, "build").unwrap(),
        );
        assert_ne!(a, b);
        assert_eq!(std::fs::metadata(&a).unwrap().mode() & 0o777, 0o700);
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
