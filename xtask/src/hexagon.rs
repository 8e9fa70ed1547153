//! `cargo xtask hexagon`: the MobileNetV2-1.0-shaped QDQ uint8 model (random weights, onnxruntime static
//! quantisation) at 224×224 through the whole Hexagon path — compile for `hexagon-v65`, run every kernel under
//! qemu-hexagon with modelrt's harness, compare with tinygrad's own CPU result (must be bit-identical) and with
//! onnxruntime (quantisation tolerance) — and write the figures into docs/hexagon.md between
//! `<!-- hexagon-results -->` markers. Too slow for CI (minutes); CI runs the 64×64 net (tests/tests/hexagon/hexagon_models.rs).
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use modelrt_core::bundle::Bundle;

use crate::exporter::ExportArgs;

/// Measured figures of one model.
#[derive(Debug, Clone)]
pub struct Figures {
    pub label: String,
    pub kernels: usize,
    pub launches: usize,
    pub bundle_bytes: usize,
    pub compile_s: f64,
    pub qemu_s: f64,
    pub instructions: u64,
    pub max_abs_vs_tinygrad_cpu: f32,
    pub max_abs_vs_ort: f32,
    pub peak_logit: f32,
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Generate the model with xtask/exporter/tools/dsp_models.py.
fn make_model(py: &Path, dir: &Path, res: u32, full: bool) -> Result<PathBuf> {
    let mut cmd = crate::exporter_python::command(py);
    cmd.arg(crate::exporter_python::tool("dsp_models.py"))
        .arg("--out")
        .arg(dir)
        .args(["--res", &res.to_string()]);
    if full {
        cmd.arg("--full");
    }
    if !cmd.status().context("cannot run python")?.success() {
        bail!("tools/dsp_models.py failed");
    }
    Ok(dir.join("qdq.onnx"))
}

/// tinygrad's own result on the host CPU for the same graph and input.
fn tinygrad_cpu(py: &Path, onnx: &Path, x: &[u8], res: u32, dir: &Path) -> Result<Vec<f32>> {
    let (inp, outp) = (dir.join("tg_in.bin"), dir.join("tg_out.bin"));
    std::fs::write(&inp, x)?;
    let script = "import sys, numpy as np\nfrom tinygrad import Tensor\nfrom tinygrad.nn.onnx import OnnxRunner\n\
                  r = int(sys.argv[4]); x = np.fromfile(sys.argv[2], np.float32).reshape(1, 3, r, r)\n\
                  out = list(OnnxRunner(sys.argv[1])({'input': Tensor(x)}).values())[0]\n\
                  out.numpy().astype(np.float32).tofile(sys.argv[3])\n";
    let ok = Command::new(py)
        .args(["-c", script])
        .arg(onnx)
        .arg(&inp)
        .arg(&outp)
        .arg(res.to_string())
        .env("DEV", "CPU")
        .status()?
        .success();
    if !ok {
        bail!("tinygrad's CPU run failed");
    }
    Ok(f32s(&std::fs::read(&outp)?))
}

/// Compile, run and compare one MobileNetV2-shaped QDQ model.
pub fn measure(py: &Path, res: u32, full: bool) -> Result<Figures> {
    let root = crate::setup::workspace_root();
    let dir = root.join(format!(
        "target/hexagon/mobilenet-{res}{}",
        if full { "-full" } else { "" }
    ));
    std::fs::create_dir_all(&dir)?;
    let onnx = make_model(py, &dir, res, full)?;
    let out = dir.join("qdq-hexagon.mrt");
    let mut args = ExportArgs::onnx(
        &onnx,
        modelrt_hal::target::TargetName::HexagonV65,
        PathBuf::new(),
    );
    args.reference = true;
    let t = Instant::now();
    let report = crate::compile::compile(py, args, &out)?;
    let compile_s = t.elapsed().as_secs_f64();
    let bytes = std::fs::read(&out)?;
    let b = Bundle::parse(&bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
    let r = b.body().reference.context("bundle has no reference")?;
    let ins: Vec<&[u8]> = r
        .inputs
        .iter()
        .map(|t| t.map(|t| t.data))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let ort = f32s(r.outputs.get(0).map_err(|e| anyhow::anyhow!("{e}"))?.data);
    let run = modelrt_hexagon::bundle::emu::run_bundle(&b, &ins)?;
    let got = f32s(&run.outputs[0]);
    let cpu = tinygrad_cpu(py, &onnx, ins[0], res, &dir)?;
    Ok(Figures {
        label: format!(
            "MobileNetV2-{} QDQ uint8, {res}×{res}",
            if full { "1.0" } else { "small" }
        ),
        kernels: report.kernels,
        launches: report.launches,
        bundle_bytes: bytes.len(),
        compile_s,
        qemu_s: run.qemu_seconds,
        instructions: run.steps.iter().map(|s| u64::from(s.instructions)).sum(),
        max_abs_vs_tinygrad_cpu: max_abs(&got, &cpu),
        max_abs_vs_ort: max_abs(&got, &ort),
        peak_logit: ort.iter().fold(0f32, |m, v| m.max(v.abs())),
    })
}

/// The results table for docs/hexagon.md.
pub fn markdown(f: &[Figures]) -> String {
    let mut s = String::from(
        "| model | kernels | launches | bundle | compile | qemu run | instructions | vs tinygrad CPU (max abs) | vs onnxruntime (max abs / peak) |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for x in f {
        s += &format!(
            "| {} | {} | {} | {:.1} MB | {:.0} s | {:.1} s | {:.2} G | {} | {:.3} / {:.2} |\n",
            x.label,
            x.kernels,
            x.launches,
            x.bundle_bytes as f64 / 1e6,
            x.compile_s,
            x.qemu_s,
            x.instructions as f64 / 1e9,
            if x.max_abs_vs_tinygrad_cpu == 0.0 {
                "0 (bit-identical)".to_string()
            } else {
                format!("{:.3}", x.max_abs_vs_tinygrad_cpu)
            },
            x.max_abs_vs_ort,
            x.peak_logit
        );
    }
    s
}

/// Replace the `<!-- hexagon-results -->` section of docs/hexagon.md.
pub fn write_doc(table: &str) -> Result<PathBuf> {
    let doc = crate::setup::workspace_root().join("docs/hexagon.md");
    let text = std::fs::read_to_string(&doc)?;
    let (Some((head, rest)), true) = (
        text.split_once("<!-- hexagon-results -->\n"),
        text.contains("<!-- /hexagon-results -->"),
    ) else {
        bail!(
            "docs/hexagon.md has no <!-- hexagon-results --> … <!-- /hexagon-results --> section"
        );
    };
    let tail = rest
        .split_once("<!-- /hexagon-results -->")
        .map(|x| x.1)
        .unwrap_or_default();
    std::fs::write(
        &doc,
        format!("{head}<!-- hexagon-results -->\n{table}<!-- /hexagon-results -->{tail}"),
    )?;
    Ok(doc)
}
