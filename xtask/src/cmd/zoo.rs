//! `cargo xtask zoo`: its arguments and what it runs.
use anyhow::Result;

/// The ONNX light model zoo: compile for CPU, run, compare with each model's reference output;
/// compile for Adreno and AMD and check every kernel decodes. Writes docs/zoo.md.
#[derive(clap::Args)]
pub struct Args {
    /// Only these models (e.g. squeezenet resnet50); default all.
    pub models: Vec<String>,
    /// Skip the Adreno/AMD compiles.
    #[arg(long)]
    pub cpu_only: bool,
    /// Instead: give the models seeded random weights, compile them for adreno-a630 (fp32 and --image) with an
    /// onnxruntime reference and run them on the KGSL model's IR3 interpreter (`--device qcom-emu`); writes the
    /// Adreno table of docs/zoo.md. Slow: minutes per model.
    #[arg(long, group = "emulated_zoo")]
    pub adreno: bool,
    /// Instead: give the models seeded random weights, compile them for amd-gfx1100 with an onnxruntime
    /// reference and run them through the whole `--device usb-emu` path (AM driver → bridge emulator → Navi31
    /// GPU model → RDNA3 interpreter); writes the AMD table of docs/zoo.md. Slow: up to minutes per model.
    #[arg(long, group = "emulated_zoo")]
    pub amd: bool,
    /// With --adreno or --amd: run the bundles an earlier run left in target/zoo/ instead of compiling them again.
    #[arg(long, requires = "emulated_zoo")]
    pub reuse: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        if self.amd {
            let results = xtask::zoo::run_amd_all(&self.models, self.reuse)?;
            let table = xtask::zoo::markdown_amd(&results);
            println!("{table}");
            let doc = xtask::setup::workspace_root().join("docs/zoo.md");
            xtask::doc_section::write(&doc, "zoo-amd", &table)?;
            println!("updated {}", doc.display());
            if results
                .iter()
                .any(|r| r.runs.iter().any(|x| x.status != "pass"))
            {
                anyhow::bail!("some zoo models failed on usb-emu (see the table)");
            }
            return Ok(());
        }
        if self.adreno {
            let results = xtask::zoo::run_adreno_all(&self.models, self.reuse)?;
            let table = xtask::zoo::markdown_adreno(&results);
            println!("{table}");
            let doc = xtask::setup::workspace_root().join("docs/zoo.md");
            xtask::doc_section::write(&doc, "zoo-adreno", &table)?;
            println!("updated {}", doc.display());
            if results
                .iter()
                .any(|r| r.runs.iter().any(|x| x.status != "pass"))
            {
                anyhow::bail!("some zoo models failed on the KGSL model (see the table)");
            }
            return Ok(());
        }
        let Self {
            models, cpu_only, ..
        } = self;
        let results = xtask::zoo::run(&models, !cpu_only)?;
        let table = xtask::zoo::markdown(&results);
        println!("{table}");
        if models.is_empty() && !cpu_only {
            let doc = xtask::setup::workspace_root().join("docs/zoo.md");
            let text = std::fs::read_to_string(&doc).unwrap_or_default();
            let head = text
                .split("<!-- zoo-table -->")
                .next()
                .unwrap_or_default()
                .to_string();
            std::fs::write(&doc, format!("{head}<!-- zoo-table -->\n{table}"))?;
            println!("updated {}", doc.display());
        }
        if results.iter().any(|r| r.cpu != "pass") {
            anyhow::bail!("some zoo models failed on the CPU (see the table)");
        }
        Ok(())
    }
}
