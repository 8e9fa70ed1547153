//! The FastRPC path of hexagon bundles (`--device dsp-emu`: `core::Executor` on the Hexagon device over the FastRPC
//! device model, the bundle's model library under qemu-hexagon), checked against independent references:
//! - one invoke per step against tinygrad's three per launch, counted by the model, with outputs identical to the
//!   launch-by-launch run;
//! - faults on that path give one clear error each without hanging;
//! - `modelrt dsp selftest --emu`'s embedded bundle passes on the model.
//!
//! Needs the exporter's Python, clang-19 and qemu-hexagon-static >= 8 (`cargo xtask setup`); a missing one is a
//! visible skip, and a failure under CI. Shared helpers: `modelrt_tests::hexagon`.
use std::sync::Arc;
use std::time::{Duration, Instant};

use modelrt_core::bundle::Bundle;
use modelrt_core::Executor;
use modelrt_hexagon::bundle as dsp;
use modelrt_hexagon::device::MODEL_LIBRARY;
use modelrt_hexagon::device::{HexagonDevice, Transport};
use modelrt_hexagon::emu::device::{FastRpcModel, Fault, Qemu};
use modelrt_hexagon::fastrpc::engine::{Loaded, Pattern};
use modelrt_hexagon::fastrpc::session::{Session, SessionConfig};
use modelrt_tests::hexagon::{small_qdq, tools};
use modelrt_tests::reference;

/// `modelrt dsp selftest --emu`'s model run: the embedded bundle through the FastRPC engine on the model (the
/// DSP side under qemu) matches its embedded reference, at one FastRPC invoke per step, and closes cleanly.
#[test]
fn dsp_selftest_embedded_bundle_passes_on_the_model() {
    if tools().is_none() {
        return;
    }
    let checks =
        modelrt_hexagon::bundle::selftest::run_embedded(Transport::Emulated, &Default::default());
    for c in &checks {
        eprintln!(
            "{} {}: {}",
            if c.ok { "ok" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    let names: Vec<&str> = checks.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "embedded bundle load",
            "embedded bundle output",
            "embedded bundle timing",
            "embedded bundle close"
        ]
    );
    assert!(checks.iter().all(|c| c.ok), "every stage passes");
    assert!(
        checks[2].detail.contains("FastRPC invokes per step [1, 1]"),
        "{}",
        checks[2].detail
    );
}

fn emu_session(wait: Duration) -> (Arc<FastRpcModel>, Session) {
    let io = Arc::new(FastRpcModel::new(Box::new(Qemu), wait));
    let mut shell = b"\x7fELF".to_vec();
    shell.resize(4096, 0);
    let cfg = SessionConfig {
        shell,
        testsig_dir: None,
        listener_timeout: Duration::from_secs(2),
    };
    let s = Session::open(io.clone(), &cfg).expect("session on the FastRPC model");
    (io, s)
}

/// FastRPC calls per inference step of the small QDQ model, counted by the FastRPC model: modelrt's step is ONE
/// invoke (the bundle's model library runs the whole schedule on the DSP) with no loader traffic; tinygrad's
/// pattern (open, invoke, close the kernel's library per launch, the loader fetching it each time) is 3 invokes per
/// launch plus the listener's reverse calls. Both run under qemu through the same model and give the same bytes.
#[test]
fn small_qdq_one_invoke_per_step_against_tinygrads_three_per_launch() {
    let Some(py) = tools() else { return };
    let (bundle, _) = small_qdq(&py);
    let b = Bundle::parse(bundle).unwrap();
    assert!(b.body().init.is_empty(), "the small net has no init phase");
    let (ins, _, _, _) = reference(bundle);
    let out_len = usize::try_from(b.body().outputs.get(0).unwrap().byte_len()).unwrap();
    // ours: the executor on the Hexagon device over the FastRPC model (what `--device dsp-emu` runs)
    let (model, session) = emu_session(Duration::from_secs(120));
    let mut m =
        Executor::load(Bundle::parse(bundle).unwrap(), HexagonDevice::new(session)).unwrap();
    // the run queue the executor recorded on the device: the engine's op list, one invoke per submit
    let launches = m.device_and_queue_mut().1.launches();
    let mut ours = vec![0u8; out_len];
    let mut step_secs = Vec::new();
    let mut per_step = Vec::new();
    for _ in 0..2 {
        let before = model.counts();
        let t = Instant::now();
        m.run(&[ins[0].as_slice()], &mut [ours.as_mut_slice()])
            .unwrap();
        step_secs.push(t.elapsed().as_secs_f64());
        let after = model.counts();
        per_step.push((
            after.app_invokes() - before.app_invokes(),
            after.run - before.run,
            after.listener_next - before.listener_next,
        ));
    }
    assert_eq!(
        per_step,
        vec![(1, 1, 0); 2],
        "modelrt: one model-level invoke per step, no loader round trips"
    );
    assert_eq!(m.device_mut().invokes(), 2, "the device's own count");
    m.device_mut().close().unwrap();
    // tinygrad's pattern, per-kernel libraries through the per-launch engine
    let (io, s) = emu_session(Duration::from_secs(120));
    let mut l = Loaded::load(&s, dsp::ops::launch_plan(&b).unwrap(), Pattern::PerLaunch).unwrap();
    for (i, buf) in b.body().buffers.iter().enumerate() {
        if let Some(init) = b.init_bytes(&buf.unwrap()) {
            l.write(i as u32, 0, init).unwrap();
        }
    }
    let (tin, tout) = (
        b.body().inputs.get(0).unwrap(),
        b.body().outputs.get(0).unwrap(),
    );
    l.write(tin.buffer, tin.offset, &ins[0]).unwrap();
    let before = io.counts();
    let st = l.step().unwrap();
    let after = io.counts();
    let theirs = after.app_invokes() - before.app_invokes();
    let loader = after.listener_next - before.listener_next;
    assert_eq!(
        theirs, st.invokes,
        "the engine's count agrees with the model's"
    );
    assert_eq!(launches, 16, "the small net's launches per step");
    assert_eq!(
        theirs,
        3 * launches,
        "tinygrad: open + invoke + close per launch"
    );
    assert!(
        loader >= 3 * launches,
        "the loader fetches every library again ({loader} round trips)"
    );
    let mut theirs_out = vec![0u8; out_len];
    l.read(tout.buffer, tout.offset, &mut theirs_out).unwrap();
    l.unload().unwrap();
    s.close().unwrap();
    assert!(
        ours == theirs_out,
        "one-invoke step and per-launch replay give the same output bytes"
    );
    eprintln!(
        "small QDQ: {launches} launches/step; modelrt 1 invoke/step (qemu {:.2} s, {:.2} s); tinygrad pattern {theirs} invokes + {loader} listener round trips/step",
        step_secs[0], step_secs[1]
    );
}

/// Faults on the one-invoke path (the executor's `run` on the Hexagon device): a dying session, an invoke error
/// and a hung invoke each give one clear error naming the call and the model library, within the model's wait
/// bound, and a dead session stays failed.
#[test]
fn one_invoke_step_faults_give_clear_errors_without_hanging() {
    let Some(py) = tools() else { return };
    let (bundle, _) = small_qdq(&py);
    let (ins, _, _, _) = reference(bundle);
    let out_len = usize::try_from(
        Bundle::parse(bundle)
            .unwrap()
            .body()
            .outputs
            .get(0)
            .unwrap()
            .byte_len(),
    )
    .unwrap();
    let mut out = vec![0u8; out_len];
    for (fault, want) in [
        (Fault::SessionDies, "session died"),
        (Fault::InvokeError(5), "errno 5"),
        (Fault::Hang, "did not complete within 400 ms"),
    ] {
        let (io, s) = emu_session(Duration::from_millis(400));
        let mut m = Executor::load(Bundle::parse(bundle).unwrap(), HexagonDevice::new(s)).unwrap();
        io.inject(fault);
        let t = Instant::now();
        let mut step = || {
            m.run(&[ins[0].as_slice()], &mut [out.as_mut_slice()])
                .unwrap_err()
                .to_string()
        };
        let e = step();
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{fault:?} took {:?}",
            t.elapsed()
        );
        assert!(
            e.contains(want) && e.contains("INVOKE_ATTRS run") && e.contains(MODEL_LIBRARY),
            "{fault:?}: {e}"
        );
        if fault == Fault::SessionDies {
            let again = step();
            assert!(again.contains("session died"), "after death: {again}");
        }
        drop(m);
        assert_eq!(io.open_libs(), 0, "{fault:?}: no library left open");
    }
}
