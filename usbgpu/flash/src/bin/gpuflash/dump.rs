//! `gpuflash dump FILE [--yes]`: the whole flash into a file (an existing one only replaced with
//! `--yes`).
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use modelrt_gpuflash::flashtool::flash::{self, save, save_new, FlashOptions};
use modelrt_gpuflash::flashtool::{sha256_hex, Board};

use crate::draw::Draw;

/// `replace`: `--yes` (an existing FILE is replaced; else it is kept and the dump refused).
pub fn run(board: &mut Board, opts: &FlashOptions, file: &Path, replace: bool) -> Result<()> {
    let t = Instant::now();
    let mut draw = Draw::new(0);
    let r = flash::dump(board, opts, &mut |ev| draw.event(ev))?;
    eprintln!("SPI transactions: {}", r.spi_transactions);
    if replace {
        save(file, &r.data)?;
    } else {
        save_new(file, &r.data)?;
    }
    say!(
        "dumped {} bytes to {} in {:.1?}; sha256 {}",
        r.data.len(),
        file.display(),
        t.elapsed(),
        sha256_hex(&r.data)
    );
    Ok(())
}
