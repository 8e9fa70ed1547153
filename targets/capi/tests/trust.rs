//! The C API's trust store (`MrtLoadOptions::trusted_keys`): a bundle signed by a trusted key loads
//! and runs; an unsigned one, one signed by another key and one changed after signing are
//! MRT_ERR_UNTRUSTED with the one-line message the CLI prints; a bad key file is
//! MRT_ERR_INVALID_ARGUMENT; without trusted keys unsigned bundles load as before.
mod common;

use std::ffi::CString;

use common::*;
use ed25519_compact::{KeyPair, Seed};
use modelrt::error::{MRT_ERR_INVALID_ARGUMENT, MRT_ERR_UNTRUSTED, MRT_OK};
use modelrt::ffi::*;
use modelrt_core::bundle::writer::{reseal, sign_bundle};
use modelrt_platform::trust::public_key_text;

fn keypair(seed: u8) -> KeyPair {
    KeyPair::from_seed(Seed::new([seed; 32]))
}

fn load_with(path: &std::path::Path, trusted: Option<&str>) -> (i32, *mut MrtModel) {
    let p = CString::new(path.to_str().unwrap()).unwrap();
    let d = CString::new("cpu").unwrap();
    let t = trusted.map(|t| CString::new(t).unwrap());
    let opts = MrtLoadOptions::new(Some(&d), t.as_deref());
    let mut m = std::ptr::null_mut();
    // SAFETY: valid C strings (or NULL), a whole MrtLoadOptions and a writable handle slot.
    let rc = unsafe { mrt_model_load_with(p.as_ptr(), &opts, &mut m) };
    (rc, m)
}

#[test]
fn the_trust_store_refuses_before_loading_and_accepts_its_keys() {
    let dir = std::env::temp_dir().join(format!("modelrt-capi-trust-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let demo_bytes = std::fs::read(demo()).unwrap();
    let kp = keypair(1);
    let sign = |kp: &KeyPair| sign_bundle(&demo_bytes, &kp.pk, |m| *kp.sk.sign(m, None)).unwrap();
    let key = dir.join("me.pub");
    std::fs::write(&key, public_key_text(&kp.pk, "me")).unwrap();
    let key = key.to_str().unwrap();
    let write = |name: &str, b: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, b).unwrap();
        p
    };

    let good = write("good.mrt", &sign(&kp));
    let (rc, m) = load_with(&good, Some(key));
    assert_eq!(rc, MRT_OK, "{}", last_error());
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };

    let mut changed = sign(&kp);
    let n = changed.len();
    changed[n - 300] ^= 1;
    reseal(&mut changed);
    for (name, bytes, want) in [
        (
            "unsigned.mrt",
            demo_bytes.clone(),
            "the bundle is not signed",
        ),
        (
            "foreign.mrt",
            sign(&keypair(2)),
            "the bundle is signed by a key that is not trusted",
        ),
        (
            "changed.mrt",
            changed,
            "the signature does not match the bundle's bytes",
        ),
    ] {
        let (rc, m) = load_with(&write(name, &bytes), Some(key));
        assert_eq!(rc, MRT_ERR_UNTRUSTED, "{name}: {}", last_error());
        assert!(m.is_null());
        let e = last_error();
        assert!(
            e.contains(&format!("bundle refused by the trust store: {want}")),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }

    let bogus = write("bogus.pub", b"nope");
    let (rc, _) = load_with(&good, Some(bogus.to_str().unwrap()));
    assert_eq!(rc, MRT_ERR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("not a modelrt public key file"),
        "{}",
        last_error()
    );

    // No trust store (and no MODELRT_TRUSTED_KEYS in this test's environment): unsigned loads.
    let (rc, m) = load_with(&demo(), None);
    assert_eq!(rc, MRT_OK, "{}", last_error());
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };
    // A NULL options pointer is every default.
    let p = CString::new(demo().to_str().unwrap()).unwrap();
    let mut m = std::ptr::null_mut();
    // SAFETY: a valid path, NULL options, a writable slot.
    let rc = unsafe { mrt_model_load_with(p.as_ptr(), std::ptr::null(), &mut m) };
    assert_eq!(rc, MRT_OK);
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };
    std::fs::remove_dir_all(&dir).unwrap();
}
