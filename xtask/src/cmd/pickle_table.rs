//! `cargo xtask pickle-table`: its arguments and what it runs.
use anyhow::Result;
use xtask::pickle_table::{run_one, table, PICKLES};

/// Convert every real openpilot 0.11 pickle (qcom/testdata/openpilot-0.11/) and run each converted one on qcom-emu
/// against the numpy warp models; write the table (pickle, tinygrad, layout, result) into docs/openpilot-pickles.md.
/// Takes a few minutes (the road warps run 10+ launches on the IR3 interpreter).
#[derive(clap::Args)]
pub struct Args {
    /// Print the table only; leave docs/openpilot-pickles.md as it is.
    #[arg(long)]
    pub no_write: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let root = xtask::setup::workspace_root();
        let py = xtask::venv::ensure_venv(&root)?;
        let work = root.join("target/pickle-table");
        let mut rows = Vec::new();
        for (stem, _, _) in PICKLES {
            eprintln!("pickle-table: {stem}");
            rows.push(run_one(&py, &root, stem, &work)?);
        }
        let t = table(&rows);
        print!("{t}");
        if !self.no_write {
            xtask::doc_section::write(&root.join("docs/openpilot-pickles.md"), "pickle-table", &t)?;
            println!("wrote docs/openpilot-pickles.md");
        }
        Ok(())
    }
}
