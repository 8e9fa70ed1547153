//! `gpuflash read ADDR SIZE [-o FILE [--yes]]`: a byte range of the flash as a hexdump or into a
//! file (an existing one only replaced with `--yes`).
use std::io::Write as _;
use std::path::Path;

use anyhow::{bail, Result};
use modelrt_gpuflash::flashtool::flash::{self, save, save_new, FlashOptions, ReadOptions};
use modelrt_gpuflash::flashtool::{sha256_hex, Board};
use modelrt_gpuflash::navi31::chips;

use crate::draw::Draw;
use crate::out::stdout_failed;

fn parse_num(s: &str) -> Result<u32> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| anyhow::anyhow!("invalid number {s:?}"))
}

/// `read`'s ADDR and SIZE, checked against the flash size.
pub fn range(addr: &str, size: &str) -> Result<(u32, u32)> {
    let (addr, size) = (parse_num(addr)?, parse_num(size)?);
    let total = chips::GD25LQ16E.size;
    if size == 0 {
        bail!("the read length is zero: give SIZE of at least 1 byte (e.g. `read {addr:#x} 16`)");
    }
    if addr >= total || size > total - addr {
        bail!("range 0x{addr:X}+0x{size:X} is outside the {total}-byte flash");
    }
    Ok((addr, size))
}

pub fn run(
    board: &mut Board,
    opts: &FlashOptions,
    (addr, size): (u32, u32),
    output: Option<&Path>,
    replace: bool,
) -> Result<()> {
    let req = ReadOptions {
        flash: *opts,
        addr,
        size,
    };
    let mut draw = Draw::new(0);
    let r = flash::read(board, &req, &mut |ev| draw.event(ev))?;
    eprintln!("SPI transactions: {}", r.spi_transactions);
    match output {
        Some(p) => {
            if replace {
                save(p, &r.data)?;
            } else {
                save_new(p, &r.data)?;
            }
            say!(
                "wrote {} byte{} to {}",
                r.data.len(),
                if r.data.len() == 1 { "" } else { "s" },
                p.display()
            );
        }
        None => {
            let mut out = std::io::stdout().lock();
            for (i, line) in r.data.chunks(16).enumerate() {
                let hex: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
                if let Err(e) =
                    writeln!(out, "{:06x}: {}", req.addr as usize + 16 * i, hex.join(" "))
                {
                    stdout_failed(&e);
                }
            }
        }
    }
    say!("sha256 {}", sha256_hex(&r.data));
    Ok(())
}
