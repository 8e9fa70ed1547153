//! `cargo xtask compile`: its arguments ([`xtask::compile_cli::compile::Args`], shared with the wheel's
//! `modelrt compile`) run with this repository's exporter and venv.
use anyhow::Result;

pub use xtask::compile_cli::compile::Args;

/// Run `cargo xtask compile`.
pub fn run(args: Args) -> Result<()> {
    let python = xtask::venv::ensure_venv(&xtask::setup::workspace_root())?;
    args.run(&xtask::compile::Toolchain::repo(&python))
        .map(drop)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    /// `--seed` shows its default in `--help`, and `--dim` is repeatable.
    #[test]
    fn compile_help_and_repeated_dims() {
        use clap::CommandFactory;
        let mut cmd = crate::Cli::command();
        let help = cmd
            .find_subcommand_mut("compile")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(help.contains("[default: 0]"), "{help}");
        let cli = crate::Cli::try_parse_from([
            "xtask", "compile", "m.onnx", "-o", "m.mrt", "--dim", "N=8", "--dim", "T=2",
        ])
        .unwrap();
        let crate::Cmd::Compile(args) = cli.cmd else {
            panic!("not compile")
        };
        let export = args.export;
        assert_eq!(export.dims, [("N".to_string(), 8), ("T".to_string(), 2)]);
        assert_eq!(export.seed, Some(0));
        assert!(export.emu_check);
    }
}
