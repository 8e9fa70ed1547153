//! The two checks the model-level RDNA3 tests make: a kernel's decoded listing against
//! `llvm-objdump-19`, and a whole bundle on the interpreter against its embedded onnxruntime
//! reference.
use std::path::Path;
use std::time::Instant;

use modelrt_core::verify::compare;
use modelrt_core::Bundle;
use modelrt_rdna3::{disasm, program::Program, Stats};

use super::{elf, objdump, runner::Loaded};

/// Decode `binary` (an AMD kernel object) and compare every instruction with LLVM's listing
/// (the object is written to `dir/name.o` for llvm-objdump). Returns the instructions compared.
pub fn against_llvm(dir: &Path, name: &str, binary: &[u8]) -> Result<usize, String> {
    let obj = dir.join(format!("{name}.o"));
    std::fs::write(&obj, binary).map_err(|e| e.to_string())?;
    let llvm = objdump::listing(&obj);
    let prog = Program::decode(elf::text(binary));
    if let Some((off, raw, what)) = &prog.stop {
        return Err(format!(
            "{name}: decoding stopped at {off:#x} {raw:08x?}: {what}"
        ));
    }
    for (n, (inst, off)) in prog.insts.iter().zip(&prog.offsets).enumerate() {
        let ours = disasm::text(inst);
        let want = llvm.iter().find(|(a, _)| a == off).map(|x| x.1.as_str());
        if want != Some(ours.as_str()) {
            return Err(format!(
                "{name} instruction {n} at {off:#x}: ours `{ours}`, LLVM {want:?}"
            ));
        }
    }
    // Everything LLVM lists past our last instruction is s_code_end padding.
    let last = prog.offsets.last().copied().unwrap_or(0);
    if let Some((a, t)) = llvm.iter().find(|(a, t)| *a > last && t != "s_code_end") {
        return Err(format!(
            "{name}: LLVM lists `{t}` at {a:#x} after our last instruction"
        ));
    }
    Ok(prog.insts.len())
}

/// What one reference run gave.
pub struct RefRun {
    pub outputs: Vec<Vec<u8>>,
    pub inputs: Vec<Vec<u8>>,
    /// Largest absolute error over all outputs.
    pub max_abs: f64,
    /// Wall time of the inference step.
    pub step_secs: f64,
    pub stats: Stats,
}

/// Compare `outputs` with `bundle`'s embedded onnxruntime outputs under its atol/rtol; returns
/// the largest absolute error.
pub fn outputs_match_reference(bundle: &Bundle<'_>, outputs: &[Vec<u8>]) -> Result<f64, String> {
    let r = bundle.body().reference.ok_or("bundle has no reference")?;
    let mut max_abs = 0f64;
    for (k, (got, want)) in outputs.iter().zip(r.outputs.iter()).enumerate() {
        let dtype = bundle.body().outputs.get(k).unwrap().dtype;
        let c = compare(
            dtype,
            got,
            want.unwrap().data,
            f64::from(r.atol),
            f64::from(r.rtol),
        );
        if c.mismatches != 0 {
            return Err(format!("output {k} vs onnxruntime: {c:?}"));
        }
        max_abs = max_abs.max(c.max_abs);
    }
    Ok(max_abs)
}

/// Run `bundle` (compiled with `--reference`) on the interpreter and compare every output with
/// the embedded onnxruntime result under the bundle's atol/rtol.
pub fn against_reference(bundle: &Bundle<'_>) -> Result<RefRun, String> {
    let r = bundle.body().reference.ok_or("bundle has no reference")?;
    let inputs: Vec<Vec<u8>> = r.inputs.iter().map(|t| t.unwrap().data.to_vec()).collect();
    let mut l = Loaded::new(bundle.clone());
    l.init().map_err(|e| format!("init: {e}"))?;
    let t = Instant::now();
    let outputs = l.run(&inputs).map_err(|e| e.to_string())?;
    let step_secs = t.elapsed().as_secs_f64();
    let max_abs = outputs_match_reference(bundle, &outputs)?;
    // A second run on the same state must give the same bytes (no stale state between runs).
    if l.run(&inputs).map_err(|e| e.to_string())? != outputs {
        return Err("a second run gives different outputs".into());
    }
    Ok(RefRun {
        outputs,
        inputs,
        max_abs,
        step_secs,
        stats: l.exec.stats(),
    })
}
