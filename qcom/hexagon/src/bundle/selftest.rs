//! The part of `modelrt dsp selftest` that runs a model: a tiny hexagon bundle embedded in the binary
//! (qcom/hexagon/assets/dsp-selftest.mrt — one QDQ depthwise 3×3 over 576 channels at 7×7, built by the exporter from
//! `xtask/exporter/tools/dsp_models.py --dwtrap`; tests/tests/hexagon/hexagon_models.rs checks it is what the exporter builds today) is loaded
//! on the Hexagon device through the executor ([`crate::device`], one FastRPC invoke per step), run on its embedded reference inputs and compared with its
//! embedded reference outputs, with timings. On the model (`--emu`) it also reports the FastRPC invokes per step.
use std::time::Instant;

use crate::device::{self, DspOptions, Transport};
use crate::fastrpc::selftest::Check;
use anyhow::Context;
use modelrt_core::bundle::Bundle;
use modelrt_core::verify::compare_reference;
use modelrt_core::Executor;

/// The embedded bundle.
pub static SELFTEST_BUNDLE: &[u8] = include_bytes!("../../assets/dsp-selftest.mrt");

fn check(name: &'static str, ok: bool, detail: impl Into<String>) -> Check {
    Check {
        name,
        ok,
        detail: detail.into(),
    }
}

/// Load, run twice and verify the embedded bundle on `transport`; one [`Check`] per stage (a failed stage ends
/// the list).
pub fn run_embedded(transport: Transport, opts: &DspOptions) -> Vec<Check> {
    match run(transport, opts) {
        Ok(c) => c,
        Err((mut done, e)) => {
            done.push(check("embedded bundle", false, format!("{e:#}")));
            done
        }
    }
}

type Partial = (Vec<Check>, anyhow::Error);

fn run(transport: Transport, opts: &DspOptions) -> Result<Vec<Check>, Partial> {
    let mut out = Vec::new();
    macro_rules! try_ {
        ($e:expr) => {
            match $e {
                Ok(v) => v,
                Err(e) => return Err((out, anyhow::Error::from(e))),
            }
        };
    }
    let b = try_!(Bundle::parse(SELFTEST_BUNDLE).context("the embedded bundle does not parse"));
    let r = try_!(b
        .body()
        .reference
        .context("the embedded bundle has no reference"));
    let inputs: Vec<&[u8]> = try_!(r
        .inputs
        .iter()
        .map(|t| Ok::<_, anyhow::Error>(t?.data))
        .collect::<Result<Vec<_>, _>>());
    let t = Instant::now();
    let (dev, model) = try_!(device::open(transport, opts).map_err(|e| anyhow::anyhow!("{e}")));
    let mut m = try_!(Executor::load(b.clone(), dev).map_err(|e| anyhow::anyhow!("{e}")));
    let launches = m.device_and_queue_mut().1.launches();
    out.push(check(
        "embedded bundle load",
        true,
        format!(
            "{} bytes, {} {}/step; session, arena, model library open: {:.1} ms",
            SELFTEST_BUNDLE.len(),
            launches,
            if launches == 1 { "launch" } else { "launches" },
            t.elapsed().as_secs_f64() * 1e3
        ),
    ));
    let mut outputs: Vec<Vec<u8>> = try_!(b
        .body()
        .outputs
        .iter()
        .map(|t| Ok::<_, anyhow::Error>(vec![0u8; usize::try_from(t?.byte_len())?]))
        .collect::<Result<Vec<_>, _>>());
    let mut times = Vec::new();
    let mut calls = Vec::new();
    for _ in 0..2 {
        let before = model.as_ref().map(|f| f.counts());
        let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        let t = Instant::now();
        let timing = try_!(m
            .run(&inputs, &mut outs)
            .map_err(|e| anyhow::anyhow!("{e}")));
        times.push((t.elapsed().as_secs_f64() * 1e3, timing.device_ns / 1000));
        if let (Some(a), Some(f)) = (before, model.as_ref()) {
            calls.push(f.counts().app_invokes() - a.app_invokes());
        }
    }
    let mut ok = true;
    let mut worst = 0f64;
    for ((t, want), got) in b.body().outputs.iter().zip(r.outputs.iter()).zip(&outputs) {
        let (t, want) = try_!(t.and_then(|t| Ok((t, want?))));
        let c = compare_reference(t.dtype, got, want.data, r.atol as f64, r.rtol as f64);
        ok &= c.ok();
        worst = worst.max(c.max_abs);
    }
    out.push(check(
        "embedded bundle output",
        ok,
        format!(
            "vs its embedded reference: max abs err {worst:.3e} (atol {:e}, rtol {:e})",
            r.atol, r.rtol
        ),
    ));
    let per_step = if calls.is_empty() {
        String::new()
    } else {
        format!("; FastRPC invokes per step {calls:?} (counted by the model)")
    };
    out.push(check(
        "embedded bundle timing",
        true,
        format!(
            "first step {:.1} ms, warm step {:.1} ms, DSP-reported {} µs{per_step}",
            times[0].0, times[1].0, times[1].1
        ),
    ));
    out.push(match m.device_mut().close() {
        Ok(()) => check(
            "embedded bundle close",
            true,
            "library closed, arena freed, session closed",
        ),
        Err(e) => check("embedded bundle close", false, format!("{e:#}")),
    });
    Ok(out)
}
