//! `modelrt dsp selftest`'s checks (`dsp::selftest`) against a fake device tree and the FastRPC model: every
//! present item is reported ok, a missing node/shell/testsig is reported by name, the session comes up and closes
//! on the model, and a library that is not a Hexagon shared object is refused by the model's loader.
use std::sync::Arc;
use std::time::Duration;

use modelrt_hexagon::emu::device::{FastRpcModel, Refuse};
use modelrt_hexagon::fastrpc::selftest::{bring_up, find_shell, probe};

fn tree(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("modelrt-dsp-selftest-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    for sub in ["dev", "vendor/dsp/cdsp", "sys/devices/soc0", "sig"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    d
}

#[test]
fn probe_reports_present_and_missing_items() {
    let d = tree("probe");
    let sig = d.join("sig");
    let c = probe(&d, &sig);
    let names_failed: Vec<_> = c.iter().filter(|c| !c.ok).map(|c| c.name).collect();
    assert_eq!(
        names_failed,
        ["ION node", "FastRPC node", "cDSP shell", "test signature"]
    );

    std::fs::write(d.join("dev/ion"), b"").unwrap();
    std::fs::write(d.join("dev/adsprpc-smd"), b"").unwrap();
    std::fs::write(
        d.join("vendor/dsp/cdsp/fastrpc_shell_3"),
        b"\x7fELF\x01\x01",
    )
    .unwrap();
    std::fs::write(d.join("sys/devices/soc0/serial_number"), b"3735928559\n").unwrap();
    std::fs::write(sig.join("testsig-0x12345678.so"), b"x").unwrap();
    let c = probe(&d, &sig);
    let t = c.iter().find(|c| c.name == "test signature").unwrap();
    assert!(!t.ok && t.detail.contains("testsig-0xdeadbeef.so"), "{t:?}");
    std::fs::write(sig.join("testsig-0xdeadbeef.so"), b"x").unwrap();
    let c = probe(&d, &sig);
    assert!(c.iter().all(|c| c.ok), "{c:?}");
    assert_eq!(
        find_shell(&d),
        Some(d.join("vendor/dsp/cdsp/fastrpc_shell_3"))
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bring_up_on_the_model() {
    let model = Arc::new(FastRpcModel::new(
        Box::new(Refuse),
        Duration::from_millis(500),
    ));
    let c = bring_up(model.clone(), b"\x7fELF....".to_vec(), None, None);
    assert!(c.iter().all(|c| c.ok), "{c:?}");
    assert_eq!(c.len(), 2);
    assert_eq!(model.live_ion(), 0, "the shell buffer was freed");

    let host = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    let c = bring_up(
        model.clone(),
        b"\x7fELF....".to_vec(),
        None,
        Some(("host.so", host)),
    );
    let l = c.iter().find(|c| c.name == "library load+close").unwrap();
    assert!(!l.ok && l.detail.contains("host.so"), "{l:?}");
    assert_eq!(model.counts().open_lib, 1);

    let c = bring_up(model.clone(), b"not an elf".to_vec(), None, None);
    assert!(!c[0].ok && c[0].detail.contains("INIT"), "{c:?}");
    assert_eq!(model.live_ion(), 0, "a failed bring-up frees the shell");
    let c = bring_up(model, b"\x7fELF....".to_vec(), None, None);
    assert!(
        c.iter().all(|c| c.ok),
        "a failed bring-up closed its channel: {c:?}"
    );
}
