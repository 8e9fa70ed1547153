//! Signed bundles and the trust store, driven as a user would: `verify`/`run`/`bench` with
//! `--trusted-keys FILE|DIR` (or `MODELRT_TRUSTED_KEYS`) load a bundle signed by a trusted key and
//! refuse an unsigned one, one signed by another key and a changed one (resealed CRCs) with one
//! `error:` line before anything runs; without a store unsigned bundles run as before; `info` shows
//! the signer; `info` and `disasm` say in their help that they never run a bundle's code.
mod cli_common;

use cli_common::*;
use ed25519_compact::{KeyPair, Seed};
use modelrt_core::bundle::writer::{reseal, sign_bundle};
use modelrt_platform::trust::{fingerprint, public_key_text};

fn demo() -> Vec<u8> {
    let name = if cfg!(target_arch = "aarch64") {
        "demo-aarch64.mrt"
    } else {
        "demo-x86_64.mrt"
    };
    std::fs::read(asset(name)).unwrap()
}

fn keypair(seed: u8) -> KeyPair {
    KeyPair::from_seed(Seed::new([seed; 32]))
}

fn signed(kp: &KeyPair) -> Vec<u8> {
    sign_bundle(&demo(), &kp.pk, |m| *kp.sk.sign(m, None)).unwrap()
}

/// Write `kp`'s public key file into `dir`; its path.
fn pub_file(dir: &std::path::Path, name: &str, kp: &KeyPair) -> String {
    write(dir, name, public_key_text(&kp.pk, name).as_bytes())
}

#[test]
fn a_signed_bundle_verifies_under_a_trust_store_file_dir_or_env() {
    let dir = scratch("sign-ok");
    let kp = keypair(1);
    let bundle = write(&dir, "signed.mrt", &signed(&kp));
    let keys = dir.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let key = pub_file(&keys, "me.pub", &kp);
    pub_file(&keys, "other.pub", &keypair(2));
    for store in [key.as_str(), keys.to_str().unwrap()] {
        let out = ok(&modelrt(&["verify", &bundle, "--trusted-keys", store]));
        assert!(out.contains("verify features: ok"), "{out}");
    }
    ok(&modelrt_env(
        &["verify", &bundle],
        &[("MODELRT_TRUSTED_KEYS", &key)],
    ));
}

#[test]
fn unsigned_foreign_and_changed_bundles_are_refused_with_one_line() {
    let dir = scratch("sign-refused");
    let kp = keypair(1);
    let key = pub_file(&dir, "me.pub", &kp);
    let unsigned = write(&dir, "unsigned.mrt", &demo());
    let foreign = write(&dir, "foreign.mrt", &signed(&keypair(3)));
    let mut t = signed(&kp);
    let n = t.len();
    t[n - 200] ^= 1; // a weight byte
    reseal(&mut t);
    let changed = write(&dir, "changed.mrt", &t);
    let cases = [
        (&unsigned, "error: bundle refused by the trust store: the bundle is not signed".to_string()),
        (
            &foreign,
            format!(
                "error: bundle refused by the trust store: the bundle is signed by a key that is not trusted (signer {})",
                fingerprint(&keypair(3).pk)
            ),
        ),
        (
            &changed,
            "error: bundle refused by the trust store: the signature does not match the bundle's bytes (changed after signing)"
                .to_string(),
        ),
    ];
    for (bundle, want) in &cases {
        for cmd in ["verify", "bench"] {
            let err = one_line_error(&modelrt(&[cmd, bundle, "--trusted-keys", &key]));
            assert!(err.starts_with(want.as_str()), "{cmd} {bundle}: {err}");
        }
        let err = one_line_error(&modelrt_env(
            &["verify", bundle],
            &[("MODELRT_TRUSTED_KEYS", &key)],
        ));
        assert!(err.starts_with(want.as_str()), "{err}");
    }
    // `run` is refused before it runs or writes anything; the same bundle signed runs.
    let copy = copy_bundle(host_cpu(), ["y", "w"], &[]);
    let unsigned_copy = write(&dir, "copy.mrt", &copy);
    let out_dir = dir.join("out");
    let input = input_arg(&dir);
    let run = |bundle: &str| {
        modelrt(&[
            "run",
            bundle,
            "-i",
            &input,
            "--trusted-keys",
            &key,
            "-o",
            out_dir.to_str().unwrap(),
        ])
    };
    let err = one_line_error(&run(&unsigned_copy));
    assert!(err.contains("the bundle is not signed"), "{err}");
    assert!(!out_dir.join("y.npy").exists());
    let signed_copy = sign_bundle(&copy, &kp.pk, |m| *kp.sk.sign(m, None)).unwrap();
    ok(&run(&write(&dir, "copy-signed.mrt", &signed_copy)));
    assert!(out_dir.join("y.npy").exists());
    // The embedded demo bundles are unsigned: refused under a store too.
    let err = one_line_error(&modelrt(&["demo", "--trusted-keys", &key]));
    assert!(err.contains("the bundle is not signed"), "{err}");
}

#[test]
fn a_bad_trust_store_is_one_line() {
    let dir = scratch("sign-badstore");
    let bundle = write(&dir, "unsigned.mrt", &demo());
    let bogus = write(&dir, "bogus.pub", b"ssh-ed25519 AAAA");
    let err = one_line_error(&modelrt(&["verify", &bundle, "--trusted-keys", &bogus]));
    assert!(err.contains("is not a modelrt public key file"), "{err}");
    let err = one_line_error(&modelrt(&[
        "verify",
        &bundle,
        "--trusted-keys",
        "/nonexistent/k.pub",
    ]));
    assert!(err.contains("cannot read public key"), "{err}");
}

#[test]
fn unsigned_bundles_still_run_without_a_trust_store() {
    let dir = scratch("sign-none");
    let bundle = write(&dir, "unsigned.mrt", &demo());
    ok(&modelrt_env(
        &["verify", &bundle],
        &[("MODELRT_TRUSTED_KEYS", "")],
    ));
}

#[test]
fn info_shows_the_signer() {
    let dir = scratch("sign-info");
    let kp = keypair(1);
    let unsigned = write(&dir, "unsigned.mrt", &demo());
    let out = ok(&modelrt(&["info", &unsigned]));
    assert!(out.contains("\nsigner      unsigned\n"), "{out}");
    assert!(out.contains("format 2.1"), "{out}");
    let bundle = write(&dir, "signed.mrt", &signed(&kp));
    let out = ok(&modelrt(&["info", &bundle]));
    let want = format!(
        "\nsigner      ed25519 {} (signature matches the bytes; not checked against any trust store)\n",
        fingerprint(&kp.pk)
    );
    assert!(out.contains(&want), "{out}");
    assert!(out.contains("format 2.2"), "{out}");
    // Changed after signing (CRCs resealed): info still describes it, and says so.
    let mut t = signed(&kp);
    let n = t.len();
    t[n - 200] ^= 1;
    reseal(&mut t);
    let out = ok(&modelrt(&["info", &write(&dir, "changed.mrt", &t)]));
    assert!(
        out.contains("(the signature does NOT match the bytes: changed after signing)"),
        "{out}"
    );
}

#[test]
fn info_and_disasm_say_they_never_run_code() {
    for cmd in ["info", "disasm"] {
        let out = ok(&modelrt(&[cmd, "--help"]));
        assert!(
            out.contains("Never maps or runs the bundle's code"),
            "{cmd}: {out}"
        );
    }
    let out = ok(&modelrt(&["verify", "--help"]));
    assert!(out.contains("--trusted-keys <FILE|DIR>"), "{out}");
}
