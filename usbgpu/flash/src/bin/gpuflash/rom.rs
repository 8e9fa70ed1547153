//! `gpuflash rom dump FILE`: the flash through the ROM aperture.
use std::path::Path;

use anyhow::Result;
use modelrt_gpuflash::flashtool::firmware;
use modelrt_gpuflash::flashtool::flash::save;
use modelrt_gpuflash::flashtool::{sha256_hex, Board};

use crate::draw::Draw;

pub fn dump(board: &mut Board, file: &Path) -> Result<()> {
    let mut draw = Draw::new(0);
    let buf = firmware::rom_dump(board, &mut |ev| draw.event(ev))?;
    save(file, &buf)?;
    say!(
        "ROM aperture dump: {} bytes to {}; sha256 {}",
        buf.len(),
        file.display(),
        sha256_hex(&buf)
    );
    Ok(())
}
