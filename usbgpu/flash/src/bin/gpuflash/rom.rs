//! `gpuflash rom dump FILE [--yes]`: the flash through the ROM aperture (an existing FILE only
//! replaced with `--yes`).
use std::path::Path;

use anyhow::Result;
use modelrt_gpuflash::flashtool::firmware;
use modelrt_gpuflash::flashtool::flash::{save, save_new};
use modelrt_gpuflash::flashtool::{sha256_hex, Board};

use crate::draw::Draw;

/// `replace`: `--yes` (an existing FILE is replaced; else it is kept and the dump refused).
pub fn dump(board: &mut Board, file: &Path, replace: bool) -> Result<()> {
    let mut draw = Draw::new(0);
    let buf = firmware::rom_dump(board, &mut |ev| draw.event(ev))?;
    if replace {
        save(file, &buf)?;
    } else {
        save_new(file, &buf)?;
    }
    say!(
        "ROM aperture dump: {} bytes to {}; sha256 {}",
        buf.len(),
        file.display(),
        sha256_hex(&buf)
    );
    Ok(())
}
