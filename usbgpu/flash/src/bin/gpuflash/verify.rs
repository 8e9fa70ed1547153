//! `gpuflash verify FILE`: compare the flash with an image.
use std::path::Path;

use anyhow::Result;
use modelrt_gpuflash::flashtool::flash::{self, load_image, FlashOptions};
use modelrt_gpuflash::flashtool::{sha256_hex, Board};
use modelrt_gpuflash::navi31::chips;

use crate::draw::Draw;

pub fn run(board: &mut Board, opts: &FlashOptions, file: &Path) -> Result<()> {
    let img = load_image(file, chips::GD25LQ16E.size)?;
    let mut draw = Draw::new(0);
    let r = flash::verify(board, opts, &img, &mut |ev| draw.event(ev))?;
    eprintln!("SPI transactions: {}", r.spi_transactions);
    say!("verify OK; sha256 {}", sha256_hex(&r.data));
    Ok(())
}
