//! The trust store in the generic loader: with one set, `Registry::load` refuses an unsigned bundle,
//! one signed by another key and every tampered variant (a byte of the header, body, weights or
//! signature changed, CRCs resealed as an attacker would) without opening the device — a counting
//! device proves that no refused bundle reached one — and loads a bundle signed by a trusted key.
//! Without a store, unsigned bundles load as before.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use ed25519_compact::{KeyPair, Seed};
use modelrt_core::bundle::signature::SIGNATURE_BLOCK_LEN;
use modelrt_core::bundle::writer::{reseal, sign_bundle};
use modelrt_core::bundle::Bundle;
use modelrt_platform::device::{always, serves_all};
use modelrt_platform::trust::{parse_public_key, public_key_text, TrustStore};
use modelrt_platform::{DeviceChoice, DeviceSpec, LoadOptions, LoadedModel, OpenRequest, Registry};

/// How often [`COUNTING`] was opened.
static OPENS: AtomicUsize = AtomicUsize::new(0);
/// The tests share [`OPENS`]: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A device that counts its opens and loads nothing.
static COUNTING: DeviceSpec = DeviceSpec {
    name: "counting",
    help: "counts opens",
    family: None,
    emulated: None,
    hidden: true,
    serves: serves_all,
    available: always,
    open,
};

fn open<'b>(_: Bundle<'b>, _: &OpenRequest<'_>) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    OPENS.fetch_add(1, Ordering::SeqCst);
    anyhow::bail!("opened")
}

static REGISTRY: Registry = Registry::new(&[&COUNTING]);

const DEMO: &[u8] = include_bytes!("../../assets/demo-x86_64.mrt");

fn keypair(seed: u8) -> KeyPair {
    KeyPair::from_seed(Seed::new([seed; 32]))
}

fn signed(kp: &KeyPair) -> Vec<u8> {
    sign_bundle(DEMO, &kp.pk, |m| *kp.sk.sign(m, None)).unwrap()
}

fn store(kp: &KeyPair) -> TrustStore {
    TrustStore::new(vec![*kp.pk])
}

/// Parse and load `bytes` under `trust`: the error line (parse or load) and whether the device opened.
fn try_load(bytes: &[u8], trust: Option<TrustStore>) -> (String, bool) {
    let before = OPENS.load(Ordering::SeqCst);
    let msg = match Bundle::parse(bytes) {
        Err(e) => format!("parse: {e}"),
        Ok(b) => {
            let opts = LoadOptions {
                device: DeviceChoice::Device(&COUNTING),
                trusted_keys: trust,
                ..LoadOptions::default()
            };
            match REGISTRY.load(b, None, &opts) {
                Ok(_) => unreachable!("the counting device never loads"),
                Err(e) => format!("{e:#}"),
            }
        }
    };
    (msg, OPENS.load(Ordering::SeqCst) != before)
}

#[test]
fn a_trusted_signature_reaches_the_device() {
    let _g = SERIAL.lock().unwrap();
    let kp = keypair(1);
    let (msg, opened) = try_load(&signed(&kp), Some(store(&kp)));
    assert!(opened, "{msg}");
    assert_eq!(msg, "opened");
}

#[test]
fn unsigned_bundles_load_without_a_trust_store_and_are_refused_with_one() {
    let _g = SERIAL.lock().unwrap();
    assert_eq!(try_load(DEMO, None), ("opened".to_string(), true));
    let (msg, opened) = try_load(DEMO, Some(store(&keypair(1))));
    assert!(!opened);
    assert_eq!(
        msg,
        "bundle refused by the trust store: the bundle is not signed"
    );
}

#[test]
fn another_key_is_refused_before_the_device_opens() {
    let _g = SERIAL.lock().unwrap();
    let (msg, opened) = try_load(&signed(&keypair(2)), Some(store(&keypair(1))));
    assert!(!opened);
    assert!(
        msg.starts_with("bundle refused by the trust store: the bundle is signed by a key that is not trusted (signer SHA256:"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}

#[test]
fn every_tampered_variant_is_refused_before_the_device_opens() {
    let _g = SERIAL.lock().unwrap();
    let kp = keypair(1);
    let good = signed(&kp);
    let block = good.len() - SIGNATURE_BLOCK_LEN;
    let weights_at = u64::from_le_bytes(good[32..40].try_into().unwrap()) as usize;
    let places = [
        ("header (schema hash)", 17),
        ("header (weights length)", 41),
        ("body", 64 + 10),
        ("weights", weights_at + 5),
        ("weights (last byte)", block - 1),
        ("signature block (key)", block + 13),
        ("signature", block + 44),
        ("signature (last byte)", block + 107),
    ];
    for (what, at) in places {
        for resealed in [false, true] {
            let mut t = good.clone();
            t[at] ^= 0x04;
            if resealed {
                reseal(&mut t);
            }
            let (msg, opened) = try_load(&t, Some(store(&kp)));
            assert!(
                !opened,
                "{what} changed (resealed {resealed}) reached the device"
            );
            assert!(!msg.contains('\n'), "{msg}");
            if resealed && msg.starts_with("bundle refused") {
                assert!(
                    msg.contains("does not match") || msg.contains("not trusted"),
                    "{what}: {msg}"
                );
            }
        }
    }
    // An attacker who reseals: the trust check itself refuses a changed weight byte.
    let mut t = good.clone();
    t[weights_at + 5] ^= 0x04;
    reseal(&mut t);
    let (msg, _) = try_load(&t, Some(store(&kp)));
    assert!(
        msg.starts_with(
            "bundle refused by the trust store: the signature does not match the bundle's bytes"
        ),
        "{msg}"
    );
}

#[test]
fn trust_store_from_files_and_directories() {
    let dir = std::env::temp_dir().join(format!("modelrt-trust-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (keypair(1), keypair(2));
    std::fs::write(dir.join("a.pub"), public_key_text(&a.pk, "a")).unwrap();
    std::fs::write(dir.join("b.pub"), public_key_text(&b.pk, "b")).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a key").unwrap();
    let s = TrustStore::from_paths(&[&dir]).unwrap();
    assert_eq!(s.keys(), &[*a.pk, *b.pk]);
    let s = TrustStore::from_paths(&[dir.join("b.pub")]).unwrap();
    assert_eq!(s.keys(), &[*b.pk]);
    let e = TrustStore::from_paths(&[dir.join("notes.txt")]).unwrap_err();
    assert!(
        format!("{e:#}").contains("is not a modelrt public key file"),
        "{e:#}"
    );
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let e = TrustStore::from_paths(&[&empty]).unwrap_err();
    assert!(format!("{e:#}").contains("has no *.pub file"), "{e:#}");
    assert_eq!(parse_public_key(&public_key_text(&a.pk, "")), Some(*a.pk));
    std::fs::remove_dir_all(&dir).unwrap();
}
