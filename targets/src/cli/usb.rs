//! `modelrt usb …` subcommands.
use clap::Subcommand;

#[derive(Subcommand)]
pub enum UsbCmd {}

pub fn run(cmd: UsbCmd) -> anyhow::Result<()> {
    match cmd {}
}
