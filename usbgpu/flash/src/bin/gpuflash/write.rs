//! `gpuflash write FILE --yes`: a verified, resumable image write with a backup first.
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use modelrt_gpuflash::flashtool::flash::{
    self, check_image, load_image, BackupOutcome, FlashOptions, WriteRequest,
};
use modelrt_gpuflash::flashtool::{sha256_hex, Board};
use modelrt_gpuflash::navi31::chips;
use modelrt_gpuflash::navi31::writer::{sector_range, WriteOptions};
use modelrt_platform::interrupt;

use crate::cli::WriteArgs;
use crate::draw::Draw;
use crate::Interrupted;

/// The checks of `write` before the device is touched (and before any backup): `--yes`, the sector
/// range, the image (its size, and its Navi31 layout unless `--force-image`); then the backup directory (created now), or `None` with `--no-backup`.
pub fn prepare(a: &WriteArgs) -> Result<Option<PathBuf>> {
    if !a.yes {
        bail!("refusing to write without --yes");
    }
    let sectors = chips::GD25LQ16E.size / chips::GD25LQ16E.sector_size;
    if a.sector_count == Some(0) {
        bail!("--sector-count 0: a sector range holds at least 1 sector (leave --sector-count out to write to the end of the flash)");
    }
    let range = WriteOptions {
        start_sector: a.start_sector,
        sector_count: a.sector_count,
        clear_cmp: a.clear_cmp,
    };
    sector_range::<std::convert::Infallible>(&range, sectors).map_err(|e| anyhow!("{e}"))?;
    let img = load_image(&a.file, chips::GD25LQ16E.size)?;
    if !a.force_image {
        check_image(&a.file, &img)?;
    }
    backup_dir(a)
}

/// The per-user backup directory: `$XDG_DATA_HOME/modelrt/gpuflash-backups`, else
/// `$HOME/.local/share/modelrt/gpuflash-backups` (XDG base directory rules: a relative
/// `XDG_DATA_HOME` is ignored).
fn default_backup_dir() -> Result<PathBuf> {
    let set = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = match set("XDG_DATA_HOME").filter(|p| p.is_absolute()) {
        Some(x) => x,
        None => match set("HOME") {
            Some(h) => h.join(".local/share"),
            None => bail!(
                "no per-user data directory for the backup (neither XDG_DATA_HOME nor HOME is set); \
                 pass --backup-dir DIR (outside the repository)"
            ),
        },
    };
    Ok(base.join("modelrt").join("gpuflash-backups"))
}

/// The directory the write's backup goes to (created now), or `None` with `--no-backup`.
fn backup_dir(a: &WriteArgs) -> Result<Option<PathBuf>> {
    if a.no_backup {
        return Ok(None);
    }
    let dir = match &a.backup_dir {
        Some(d) => d.clone(),
        None => default_backup_dir()?,
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow!("cannot create the backup directory {}: {e}", dir.display()))?;
    Ok(Some(dir))
}

pub fn run(
    board: &mut Board,
    opts: &FlashOptions,
    a: &WriteArgs,
    backup_dir: Option<&Path>,
) -> Result<()> {
    let img = load_image(&a.file, chips::GD25LQ16E.size)?;
    match backup_dir {
        None => say!("no backup taken (--no-backup)"),
        Some(d) => say!("backup directory: {}", d.display()),
    }
    let req = WriteRequest {
        flash: *opts,
        range: WriteOptions {
            start_sector: a.start_sector,
            sector_count: a.sector_count,
            clear_cmp: a.clear_cmp,
        },
        backup_dir: backup_dir.map(Path::to_path_buf),
    };
    let t = Instant::now();
    let sectors = (chips::GD25LQ16E.size / chips::GD25LQ16E.sector_size) as u64;
    let mut draw = Draw::new(sectors).verbose(a.verbose);
    // Ctrl-C from here on ends the write between two sectors, never inside one.
    interrupt::install().map_err(|e| anyhow!("cannot install the Ctrl-C handler: {e}"))?;
    let report = flash::write_until(
        board,
        &req,
        &img,
        |b| match b {
            BackupOutcome::NotTaken => {}
            BackupOutcome::AlreadyPresent { path, sha256 } => say!(
                "backup already present: {} (sha256 {sha256})",
                path.display()
            ),
            BackupOutcome::Saved { path, sha256 } => {
                say!("backup: {} (sha256 {sha256})", path.display())
            }
        },
        &mut |ev| draw.event(ev),
        &mut interrupt::requested,
    )?;
    eprintln!("SPI transactions: {}", report.spi_transactions);
    let s = report.summary;
    // After Ctrl-C the counts are those of the sectors processed before the stop.
    let checked = s.stopped_at.map_or(s.sectors, |n| n - a.start_sector);
    say!(
        "write {}: {checked} sector{} checked, {} written, {} unchanged, {} page{} programmed{}; image sha256 {}; {:.1?}",
        if s.stopped_at.is_some() {
            "interrupted (partial)"
        } else {
            "done"
        },
        if checked == 1 { "" } else { "s" },
        s.written,
        s.skipped,
        s.pages,
        if s.pages == 1 { "" } else { "s" },
        if s.cleared_cmp { ", CMP cleared" } else { "" },
        sha256_hex(&img),
        t.elapsed()
    );
    if let Some(next) = s.stopped_at {
        return Err(stopped(a, next, s.sectors, &img).into());
    }
    let end = a.start_sector as u64 + s.sectors as u64;
    let rest = if s.sectors as u64 == sectors {
        String::new()
    } else if backup_dir.is_some() {
        ", the other sectors equal the backup".to_string()
    } else {
        ", the other sectors were not compared (no backup)".to_string()
    };
    say!(
        "read back after the write: sectors {}..{end} equal the image{rest}",
        a.start_sector
    );
    Ok(())
}

/// What a write stopped by Ctrl-C reports: where it stopped and the command that resumes it.
fn stopped(a: &WriteArgs, next: u32, count: u32, img: &[u8]) -> Interrupted {
    let (start, end) = (a.start_sector, a.start_sector + count);
    let done = if next == start {
        "no sector was written".to_string()
    } else {
        format!("sectors {start}..{next} are written and verified")
    };
    Interrupted(format!(
        "stopped between sectors, before sector {next} (0x{:06X}): {done}, sectors {next}..{end} are not yet written; \
         resume with the same command plus `--start-sector {next} --sector-count {}` \
         (re-running the whole write also resumes: sectors that already equal the image are skipped; image {}, sha256 {})",
        next as u64 * 0x1000,
        end - next,
        a.file.display(),
        sha256_hex(img)
    ))
}
