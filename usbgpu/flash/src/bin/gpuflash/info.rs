//! `gpuflash info`: identify the flash (JEDEC id, status registers, SFDP, write protection).
use anyhow::Result;
use modelrt_gpuflash::flashtool::flash::{self, FlashOptions};
use modelrt_gpuflash::flashtool::Board;

pub fn run(board: &mut Board, opts: &FlashOptions) -> Result<()> {
    let i = flash::info(board, opts)?;
    let cap = i.jedec;
    say!(
        "JEDEC capture: {:02X} {:02X} {:02X} {:02X}",
        cap[0],
        cap[1],
        cap[2],
        cap[3]
    );
    match i.chip {
        Some(c) => say!(
            "chip: {} ({} KiB, {} sectors of {} B)",
            c.name,
            c.size / 1024,
            c.sectors(),
            c.sector_size
        ),
        None => say!("chip: unknown (not in the chip table; read-only)"),
    }
    let [sr1, sr2, sr3] = i.status;
    say!("SR1=0x{sr1:02X} SR2=0x{sr2:02X} SR3=0x{sr3:02X}");
    if let (Some(bp), Some(cmp)) = (i.block_protect(), i.cmp()) {
        let cmp_text = if cmp {
            "set (array write-protected; write needs --clear-cmp)"
        } else {
            "clear"
        };
        say!("protection: BP=0x{bp:02X} CMP {cmp_text}");
    }
    let hex: Vec<String> = i.sfdp.iter().map(|b| format!("{b:02X}")).collect();
    let sig = if i.sfdp_signature_ok() {
        "signature OK"
    } else {
        "no SFDP signature"
    };
    say!("SFDP: {} ({sig})", hex.join(" "));
    eprintln!("SPI transactions: {}", i.spi_transactions);
    Ok(())
}
