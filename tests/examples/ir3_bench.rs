//! Benchmark of the KGSL model's IR3 interpreter: runs the embedded reference inputs of adreno-a630
//! bundles through the Adreno backend over the executing KGSL model (what `--device qcom-emu` does) and prints,
//! per bundle, the interpreted fiber-instructions, the host seconds spent interpreting and their rate, plus the
//! max abs error against the bundle's onnxruntime reference (so a fast but wrong interpreter is visible).
//!
//! ```sh
//! cargo run --release -p modelrt-tests --example ir3_bench -- [--iters N] BUNDLE.mrt...
//! ```
//! Results are recorded in docs/hw/adreno-kgsl-pm4.md §16.6. Not a test: the figures depend on the machine.
use modelrt_core::bundle::Bundle;
use modelrt_core::verify::compare;
use modelrt_core::Executor;
use modelrt_qcom::adreno::AdrenoDevice;
use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};

fn bench(path: &str, iters: usize) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let b = Bundle::parse(&bytes).map_err(|e| format!("{path}: {e}"))?;
    let r = b
        .body()
        .reference
        .ok_or_else(|| format!("{path}: no embedded reference (compile with --reference)"))?;
    let ins: Vec<&[u8]> = r
        .inputs
        .iter()
        .map(|t| t.map(|t| t.data))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let want: Vec<(&[u8], _)> = r
        .outputs
        .iter()
        .zip(b.body().outputs.iter())
        .map(|(t, d)| Ok((t?.data, d?.dtype)))
        .collect::<Result<_, modelrt_core::BundleError>>()
        .map_err(|e| e.to_string())?;
    let (atol, rtol) = (r.atol as f64, r.rtol as f64);
    let model = KgslModel::new(ModelConfig {
        execute_shaders: true,
        ..Default::default()
    });
    let dev = AdrenoDevice::open(model, Default::default()).map_err(|e| e.to_string())?;
    let mut ex = Executor::load(b, dev).map_err(|e| e.to_string())?;
    let mut outs: Vec<Vec<u8>> = want.iter().map(|(w, _)| vec![0u8; w.len()]).collect();
    for it in 0..iters {
        let before = ex.device_mut().with_kgsl(|m| m.exec_stats());
        let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
        ex.run(&ins, &mut refs).map_err(|e| e.to_string())?;
        let after = ex.device_mut().with_kgsl(|m| m.exec_stats());
        let fi = after.fiber_instrs - before.fiber_instrs;
        let s = after.seconds - before.seconds;
        let mut max_abs = 0f64;
        for (got, (w, dt)) in outs.iter().zip(&want) {
            let c = compare(*dt, got, w, atol, rtol);
            if !c.ok() {
                return Err(format!("{path}: outputs differ from the reference: {c:?}"));
            }
            max_abs = max_abs.max(c.max_abs);
        }
        println!(
            "{path} iter {it}: {} dispatches, {:.1} M fiber-instructions in {s:.2} s = {:.1} M fiber-instr/s ({:.1} M issues/s), max abs err {max_abs:.1e}",
            after.dispatches - before.dispatches,
            fi as f64 / 1e6,
            fi as f64 / s / 1e6,
            (after.issues - before.issues) as f64 / s / 1e6,
        );
    }
    Ok(())
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut iters = 1;
    if let Some(i) = args.iter().position(|a| a == "--iters") {
        iters = match args.get(i + 1).and_then(|n| n.parse().ok()) {
            Some(n) => n,
            None => {
                eprintln!("error: --iters needs a number");
                std::process::exit(1);
            }
        };
        args.drain(i..i + 2);
    }
    if args.is_empty() {
        eprintln!("error: usage: ir3_bench [--iters N] BUNDLE.mrt...");
        std::process::exit(1);
    }
    for p in &args {
        if let Err(e) = bench(p, iters) {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
