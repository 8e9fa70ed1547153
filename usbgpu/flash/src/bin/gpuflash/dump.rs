//! `gpuflash dump FILE`: the whole flash into a file.
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use modelrt_gpuflash::flashtool::flash::{self, save, FlashOptions};
use modelrt_gpuflash::flashtool::{sha256_hex, Board};

use crate::draw::Draw;

pub fn run(board: &mut Board, opts: &FlashOptions, file: &Path) -> Result<()> {
    let t = Instant::now();
    let mut draw = Draw::new(0);
    let r = flash::dump(board, opts, &mut |ev| draw.event(ev))?;
    eprintln!("SPI transactions: {}", r.spi_transactions);
    save(file, &r.data)?;
    say!(
        "dumped {} bytes to {} in {:.1?}; sha256 {}",
        r.data.len(),
        file.display(),
        t.elapsed(),
        sha256_hex(&r.data)
    );
    Ok(())
}
