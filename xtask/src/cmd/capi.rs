//! `cargo xtask capi`: its arguments and what it runs.
use anyhow::Result;

/// Build the C library (release): target/capi/include/modelrt.h and target/capi/lib/libmodelrt.{so,a}
/// (with --target, under target/capi/<triple>/).
#[derive(clap::Args)]
pub struct Args {
    /// `cpu-aarch64` (comma devices) or a Rust target triple [default: this machine].
    #[arg(long)]
    pub target: Option<String>,
    /// Only regenerate the checked-in header targets/capi/include/modelrt.h with cbindgen (after
    /// changing the C API's Rust source or its doc comments); builds nothing.
    #[arg(long)]
    pub write_header: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        if self.write_header {
            let p = xtask::capi_header::write(&xtask::setup::workspace_root())?;
            println!("wrote {}", p.display());
            return Ok(());
        }
        let triple = self.target.as_deref().map(xtask::capi::triple_for);
        let b = xtask::capi::build(triple, true)?;
        println!("wrote {}/modelrt.h", b.include.display());
        println!("wrote {}", b.cdylib.display());
        println!("wrote {}", b.staticlib.display());
        Ok(())
    }
}
