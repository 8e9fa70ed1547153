//! `cargo xtask manifest-schema`: its arguments and what it runs.
use anyhow::Result;

/// Regenerate xtask/exporter/mrt/manifest_schema.json, the kernel-metadata records' schema the exporter checks what
/// it writes against, from the Rust declarations (xtask/src/manifest/meta_schema.rs), or check that it is current.
#[derive(clap::Args)]
pub struct Args {
    /// Only check that the checked-in schema matches the Rust declarations.
    #[arg(long)]
    pub check: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self { check } = self;
        let root = xtask::setup::workspace_root();
        if check {
            let on_disk =
                std::fs::read_to_string(root.join(xtask::manifest::meta_schema::SCHEMA_PATH))
                    .unwrap_or_default();
            if on_disk != xtask::manifest::meta_schema::schema_text()? {
                anyhow::bail!(
                    "{} is out of date (run `cargo xtask manifest-schema`)",
                    xtask::manifest::meta_schema::SCHEMA_PATH
                );
            }
            println!(
                "{} is up to date",
                xtask::manifest::meta_schema::SCHEMA_PATH
            );
        } else {
            println!(
                "wrote {}",
                xtask::manifest::meta_schema::write(&root)?.display()
            );
        }
        Ok(())
    }
}
