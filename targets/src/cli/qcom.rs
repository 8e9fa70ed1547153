//! `modelrt qcom …` subcommands.
use clap::Subcommand;

#[derive(Subcommand)]
pub enum QcomCmd {}

pub fn run(cmd: QcomCmd) -> anyhow::Result<()> {
    match cmd {}
}
