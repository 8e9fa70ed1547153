//! Where `modelrt_hexagon::emu::harness::qemu::harness` builds and caches `qemu_harness`: in a
//! per-user directory of the temp directory created with mode 0700 — nothing world-readable or
//! predictable-and-shared in the temp directory itself — and a directory planted at that place by
//! someone else (a symlink, or one open to others) is refused, never followed or written into.
//! Each case runs `harness()` in a child process (its result is cached per process) with its own
//! `TMPDIR` and no `XDG_RUNTIME_DIR`. Needs clang-19 (the harness is compiled, not run).
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The child's side: print what `harness()` gives.
#[test]
#[ignore = "run by the other tests in a child process"]
fn child_builds_the_harness() {
    match modelrt_hexagon::emu::harness::qemu::harness() {
        Ok(p) => println!("HARNESS-OK {}", p.display()),
        Err(e) => println!("HARNESS-ERR {e}"),
    }
}

/// Run [`child_builds_the_harness`] with `TMPDIR=tmp`; returns its `Ok(path)` or `Err(message)`.
fn harness_in(tmp: &Path) -> Result<PathBuf, String> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_builds_the_harness",
            "--ignored",
            "--nocapture",
        ])
        .env("TMPDIR", tmp)
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if let Some(l) = text.lines().find_map(|l| l.strip_prefix("HARNESS-OK ")) {
        return Ok(PathBuf::from(l));
    }
    if let Some(l) = text.lines().find_map(|l| l.strip_prefix("HARNESS-ERR ")) {
        return Err(l.to_string());
    }
    panic!(
        "child printed no result: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "modelrt-harness-cache-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Our uid: the owner of a directory we just created.
fn uid(dir: &Path) -> u32 {
    std::fs::metadata(dir).unwrap().uid()
}

fn clang_missing() -> bool {
    Command::new(modelrt_hexagon::emu::harness::qemu::CLANG)
        .arg("--version")
        .output()
        .is_err()
}

#[test]
fn harness_is_built_in_a_private_per_user_directory() {
    if clang_missing() {
        eprintln!("skipped: clang-19 is not installed");
        return;
    }
    let tmp = scratch("fresh");
    let root = tmp.join(format!("modelrt-{}", uid(&tmp)));
    let exe = harness_in(&tmp).unwrap();
    // Only the private root appears in the temp directory; the build directory is gone.
    assert_eq!(names(&tmp), [format!("modelrt-{}", uid(&tmp))]);
    assert_eq!(exe.parent(), Some(root.as_path()));
    assert_eq!(names(&root).len(), 1, "{:?}", names(&root));
    let meta = std::fs::symlink_metadata(&root).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.mode() & 0o777, 0o700);
    // A second process reuses the build.
    let mtime = std::fs::metadata(&exe).unwrap().mtime_nsec();
    assert_eq!(harness_in(&tmp).unwrap(), exe);
    assert_eq!(std::fs::metadata(&exe).unwrap().mtime_nsec(), mtime);
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn a_planted_root_is_refused_and_not_written_into() {
    let tmp = scratch("planted");
    let root = tmp.join(format!("modelrt-{}", uid(&tmp)));
    // A symlink to a directory someone else controls.
    let victim = tmp.join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&victim, &root).unwrap();
    let e = harness_in(&tmp).unwrap_err();
    assert!(
        e.contains(&format!(
            "refusing to keep the qemu harness in {}: it is a symbolic link",
            root.display()
        )),
        "{e}"
    );
    assert!(names(&victim).is_empty());
    // A real directory that others can enter (as a shared /tmp directory would be).
    std::fs::remove_file(&root).unwrap();
    std::fs::create_dir(&root).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = harness_in(&tmp).unwrap_err();
    assert!(e.contains("its mode is 0777"), "{e}");
    assert!(names(&root).is_empty());
    std::fs::remove_dir_all(&tmp).unwrap();
}
