//! `cargo xtask compile --sign` end to end, through the library call it makes
//! (`xtask::compile::compile_with`): the vision net compiled for the host CPU with a key lands at the
//! destination signed — byte for byte the unsigned compile of the same arguments signed with that key
//! (Ed25519 signatures are deterministic), accepted by a trust store of that key and refused by one of
//! another key — and an earlier file at the destination is replaced only by the signed bundle: a
//! watcher thread reads every version of the destination during the compile.
use std::path::PathBuf;

use modelrt_platform::trust::TrustStore;
use modelrt_tests::{compile, python, root};
use xtask::exporter::ExportArgs;
use xtask::signing::{keygen, read_signing_key};

#[test]
fn compile_with_a_key_writes_the_signed_bundle_only() {
    let Some(py) = python() else { return };
    let model = root().join("xtask/models/vision.onnx");
    let target = modelrt_hal::target::TargetName::host_cpu();
    let unsigned = std::fs::read(compile(&py, &model, target.as_str(), false, "")).unwrap();
    let dir = root().join("target/e2e/signed-compile");
    let _ = std::fs::remove_dir_all(&dir);
    let (secret, public) = keygen(&dir.join("keys"), false).unwrap();
    let (_, other) = keygen(&dir.join("other"), false).unwrap();
    let key = read_signing_key(&secret).unwrap();
    let out = dir.join("vision.mrt");
    std::fs::write(&out, b"an earlier bundle").unwrap();
    let args = ExportArgs::onnx(&model, target, PathBuf::new());
    // While the compile runs, every version of the destination is read (on each change of its inode,
    // length or mtime): each must be the earlier file or a bundle the key's trust store accepts —
    // never an unsigned bundle, which the old `--sign` (write, then sign in place) left there.
    let store = TrustStore::from_paths(&[&public]).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            use std::os::unix::fs::MetadataExt;
            let mut last = None;
            let mut seen = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let stamp = std::fs::metadata(&out)
                    .ok()
                    .map(|m| (m.ino(), m.len(), m.mtime_nsec()));
                if stamp.is_some() && stamp != last {
                    last = stamp;
                    if let Ok(bytes) = std::fs::read(&out) {
                        let ok = bytes == b"an earlier bundle" || store.check(&bytes).is_ok();
                        seen.push((bytes.len(), ok));
                    }
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            seen
        });
        let r = xtask::compile::compile_with(
            &xtask::compile::Toolchain::repo(&py),
            args,
            &out,
            Some(&key),
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let seen = watcher.join().unwrap();
        assert!(
            seen.iter().all(|(_, ok)| *ok),
            "the destination held an unsigned or partial bundle: {seen:?}"
        );
        r.unwrap()
    });
    let signed = std::fs::read(&out).unwrap();
    assert_eq!(r.bytes, signed.len());
    assert_eq!(
        r.signer.as_deref(),
        Some(modelrt_platform::trust::fingerprint(&key.public()).as_str())
    );
    assert_eq!(
        signed,
        key.sign(&unsigned).unwrap(),
        "the unsigned compile, signed"
    );
    assert_eq!(store.check(&signed).unwrap(), key.public());
    let foreign = TrustStore::from_paths(&[&other]).unwrap();
    let e = foreign.check(&signed).unwrap_err().to_string();
    assert!(e.contains("not trusted"), "{e}");
    // Only the keys, the bundle and nothing temporary.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["keys", "other", "vision.mrt"]);
}
