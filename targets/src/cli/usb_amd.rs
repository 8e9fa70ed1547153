//! `modelrt usb boot` and the SDMA `usb copy-bench`: boot the AMD GPU behind the bridge (or the
//! Navi31 GPU model behind the emulator) and report versions, boot time, USB transfers and copy
//! rates. Everything measured on the emulator is labelled as emulated.
use anyhow::{bail, Context};
use modelrt_amd::assembly::{self, OpenedGpu};
use modelrt_amd::ip::ALL_IPS;
use modelrt_asm24::counting::TransferCounts;
use modelrt_asm24::host::Selector;
use modelrt_asm24::session::TransportKind;
use modelrt_hal::device::Device;
use std::path::Path;

use super::progress::{self, Interrupted};

fn boot_gpu(kind: TransportKind, sel: Selector, dir: &Path) -> anyhow::Result<OpenedGpu> {
    let g = assembly::open(kind, sel, dir, None)?;
    let tag = if g.model.is_some() {
        " [emulated bridge + Navi31 GPU model: firmware is parsed and checked, not executed; times are emulated]"
    } else {
        " [real hardware: this path is untested here]"
    };
    outln!("{}{tag}", g.name);
    Ok(g)
}

fn transfers(c: &TransferCounts) -> String {
    format!(
        "{} ({} control, {} bulk)",
        super::units::plural(c.transfers(), "transfer"),
        c.control(),
        c.bulk()
    )
}

/// `modelrt usb boot`.
pub fn boot(kind: TransportKind, sel: Selector, dir: &Path) -> anyhow::Result<()> {
    let g = boot_gpu(kind, sel, dir)?;
    let am = &g.device.am;
    outln!("IP versions (from the device's discovery table):");
    for ip in ALL_IPS {
        let v = am
            .bus
            .ips()
            .version(ip)
            .map(|v| v.to_string())
            .unwrap_or("-".into());
        outln!("  {:<7} {v}", ip.name());
    }
    outln!("firmware ({}):", dir.display());
    for f in &am.fw.files {
        outln!("  {:<22} ucode version {:#x}", f.file, f.version);
    }
    let levels: Vec<String> = am
        .report
        .dpm_levels
        .iter()
        .map(|(c, n)| format!("{c} {n}"))
        .collect();
    outln!("DPM levels (pinned to the highest): {}", levels.join(", "));
    outln!(
        "VRAM {} MiB, {} PSP ring commands, TMR {:#x} bytes, {}",
        am.vram_size >> 20,
        am.psp.commands,
        am.psp.tmr_size,
        if am.report.partial {
            "partial boot"
        } else {
            "full boot"
        }
    );
    outln!(
        "boot: {}{}, {} (PCIe bring-up and discovery included)",
        super::units::duration(g.boot_ns),
        if g.model.is_some() { " emulated" } else { "" },
        transfers(&g.boot_transfers)
    );
    for (step, c) in &am.report.steps {
        outln!("  {step:<24} {}", transfers(c));
    }
    let mut d = g.device;
    d.fini().context("fini")?;
    outln!("fini: queues stopped, clocks back to level 0");
    Ok(())
}

/// `modelrt usb copy-bench` over SDMA.
pub fn sdma_copy_bench(
    kind: TransportKind,
    sel: Selector,
    dir: &Path,
    size: usize,
    seed: u64,
) -> anyhow::Result<()> {
    if size == 0 {
        bail!("--size must be positive");
    }
    let g = boot_gpu(kind, sel, dir)?;
    let emulated = g.model.is_some();
    let mut dev = g.device;
    dev.alloc_arena(size as u64).context("arena")?;
    let mut x = seed | 1;
    let data: Vec<u8> = (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let unit = if emulated { " (emulated)" } else { "" };
    let counts = |d: &mut modelrt_amd::device::AmdDevice<assembly::Transport>| {
        d.am.bus.bridge().transport().counts()
    };
    progress::catch_interrupt()?;
    // Copied in pieces so Ctrl-C stops between two of them and the bar moves.
    let bar = progress::byte_bar(2 * size as u64, "copy-bench");
    let (c0, t0) = (counts(&mut dev), dev.now_ns());
    let up_len = copy_in_pieces(size, &bar, |at, n| {
        dev.upload(at as u64, &data[at..at + n])
            .context("host→VRAM over SDMA")
    })?;
    let (up, up_ns) = (counts(&mut dev).since(&c0), dev.now_ns() - t0);
    let mut back = vec![0u8; up_len];
    let (c0, t0) = (counts(&mut dev), dev.now_ns());
    let down_len = copy_in_pieces(up_len, &bar, |at, n| {
        dev.download(at as u64, &mut back[at..at + n])
            .context("VRAM→host over SDMA")
    })?;
    let (down, down_ns) = (counts(&mut dev).since(&c0), dev.now_ns() - t0);
    bar.finish_and_clear();
    let partial = down_len < size;
    for (label, len, c, ns) in [
        ("host→VRAM", up_len, up, up_ns),
        ("VRAM→host", down_len, down, down_ns),
    ] {
        let of = if partial {
            format!(" (partial: of {size})")
        } else {
            String::new()
        };
        outln!(
            "{label}: {}{of} in {}{unit}, {:.1} MB/s{unit}, {}, {:.2} per MiB",
            super::units::plural(len as u64, "byte"),
            super::units::duration(ns),
            len as f64 / ns.max(1) as f64 * 1e3,
            transfers(&c),
            c.transfers() as f64 / (len.max(1) as f64 / (1 << 20) as f64)
        );
    }
    if back[..down_len] != data[..down_len] {
        bail!("verification failed: the bytes read back differ from those written");
    }
    outln!(
        "verification: {} read back identical{}",
        super::units::plural(down_len as u64, "byte"),
        if partial { " (partial)" } else { "" }
    );
    dev.fini().context("fini")?;
    if partial {
        return Err(Interrupted(format!(
            "after {} of {size} bytes each way; the rates above are partial",
            down_len.min(up_len)
        ))
        .into());
    }
    Ok(())
}

/// Bytes per piece of an interruptible copy.
const PIECE: usize = 4 << 20;

/// Copy `len` bytes as `copy(offset, n)` pieces of at most [`PIECE`], stopping early at Ctrl-C;
/// returns how many bytes were copied.
fn copy_in_pieces(
    len: usize,
    bar: &indicatif::ProgressBar,
    mut copy: impl FnMut(usize, usize) -> anyhow::Result<()>,
) -> anyhow::Result<usize> {
    let mut at = 0;
    while at < len && !progress::stop_requested() {
        let n = PIECE.min(len - at);
        copy(at, n)?;
        at += n;
        bar.inc(n as u64);
    }
    Ok(at)
}
