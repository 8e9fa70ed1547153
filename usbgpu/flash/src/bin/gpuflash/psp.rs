//! `gpuflash psp probe` and `gpuflash psp ifwi-all FILE --yes`: the PSP early-boot mailbox.
use std::path::Path;

use anyhow::Result;
use modelrt_gpuflash::flashtool::firmware::{self, IFWI_SIZE};
use modelrt_gpuflash::flashtool::flash::load_image;
use modelrt_gpuflash::flashtool::{sha256_hex, Board};
use modelrt_gpuflash::navi31::psp::{error_text, Reply, ERR_PARTITION_UPDATE};

use crate::draw::Draw;

fn show_reply(name: &str, r: &Reply) {
    if r.error == 0 {
        say!("{name:<20} ok        response=0x{:08X}", r.response);
    } else {
        say!(
            "{name:<20} error=0x{:02X} ({}) response=0x{:08X}",
            r.error,
            error_text(r.error),
            r.response
        );
    }
}

pub fn probe(board: &mut Board) -> Result<()> {
    let p = firmware::psp_probe(board)?;
    show_reply("GET_BOOT_PARTITION", &p.boot_partition);
    show_reply("GET_FB_STATE", &p.fb_state);
    show_reply("SPI_GET_MODEL_ID", &p.spi_model_id);
    show_reply("GET_TRANSFER_TYPE", &p.transfer_type);
    if p.transfer_type.error == ERR_PARTITION_UPDATE {
        say!("hint: update commands gated: reset card and do not initialize AMDev/SOS");
    } else if p.transfer_type.error == 0 {
        let v = p.transfer_type.response;
        say!("PSP requests item 0x{:02X} in phase {}", v & 0xFF, v >> 8);
    }
    Ok(())
}

pub fn ifwi_all(board: &mut Board, file: &Path) -> Result<()> {
    let img = load_image(file, IFWI_SIZE)?;
    let mut draw = Draw::new(0);
    let items = firmware::psp_ifwi_all(board, &img, &mut |ev| draw.event(ev))?;
    say!(
        "streamed {} items; image sha256 {}",
        items.len(),
        sha256_hex(&img)
    );
    say!("PSP reported the final phase: a hard power cycle is required");
    if board.is_emulated() {
        say!("note: the emulator records the streamed items; it does not reproduce the PSP's partition rewrite");
    }
    Ok(())
}
