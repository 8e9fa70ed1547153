//! `cargo xtask hexagon`: its arguments and what it runs.
use anyhow::Result;

/// The Hexagon DSP path on the MobileNetV2-1.0-shaped QDQ model at 224×224 (and the 64×64 CI net): compile,
/// run under qemu-hexagon, compare with tinygrad's CPU result and onnxruntime; writes docs/hexagon.md.
#[derive(clap::Args)]
pub struct Args {
    /// Input resolution of the MobileNetV2-1.0-shaped model.
    #[arg(long, default_value_t = 224)]
    pub res: u32,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self { res } = self;
        let py = xtask::setup::ensure_all()?;
        let figures = vec![
            xtask::hexagon::measure(&py, 64, false)?,
            xtask::hexagon::measure(&py, res, true)?,
        ];
        let table = xtask::hexagon::markdown(&figures);
        println!("{table}");
        println!("updated {}", xtask::hexagon::write_doc(&table)?.display());
        if figures.iter().any(|f| f.max_abs_vs_tinygrad_cpu != 0.0) {
            anyhow::bail!("a DSP result differs from tinygrad's CPU result");
        }
        Ok(())
    }
}
