//! `modelrt usb boot` and the SDMA `usb copy-bench`: boot the AMD GPU behind the bridge (or the
//! Navi31 GPU model behind the emulator) and report versions, boot time, USB transfers and copy
//! rates. Everything measured on the emulator is labelled as emulated.
use anyhow::{bail, Context};
use modelrt_amd::assembly::{self, OpenedGpu};
use modelrt_amd::device::CopyPath;
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

/// `modelrt usb copy-bench --sweep`: the sizes of [`modelrt_amd::bench::SWEEP_SIZES`], both directions,
/// both paths (the stream only up to its 4 MiB limit).
pub fn sdma_copy_sweep(
    kind: TransportKind,
    sel: Selector,
    dir: &Path,
    seed: u64,
) -> anyhow::Result<()> {
    let g = boot_gpu(kind, sel, dir)?;
    let emulated = g.model.is_some();
    let mut dev = g.device;
    let counts = |d: &mut modelrt_amd::device::AmdDevice<assembly::Transport>| {
        d.am.bus.bridge().transport().counts()
    };
    let max = *modelrt_amd::bench::SWEEP_SIZES.last().unwrap_or(&(1 << 30));
    let rows = modelrt_amd::bench::sweep_up_to(&mut dev, &counts, max, seed, |r| {
        outln!("{}", sweep_line(r, emulated));
    })
    .context("copy sweep")?;
    let unit = if emulated {
        "MB/s are emulated (the bridge emulator's transfer costs), not a hardware measurement; transfer counts and bytes are what the driver puts on the link and hold on hardware"
    } else {
        "measured on this host and bridge (untested path)"
    };
    outln!(
        "{} rows; every copy read back identical; {unit}",
        rows.len()
    );
    dev.fini().context("fini")?;
    Ok(())
}

fn sweep_line(r: &modelrt_amd::bench::SweepRow, emulated: bool) -> String {
    let tag = if emulated { " (emulated)" } else { "" };
    let path = match r.path {
        CopyPath::Stream => "BAR0 stream",
        CopyPath::Pipeline => "SDMA pipeline",
    };
    format!(
        "{:>10}  {path:<13}  in {:>8.1} MB/s{tag} {:>7.2} ctl/MiB {:>7.2} bulk/MiB   out {:>8.1} MB/s{tag} {:>7.2} ctl/MiB {:>7.2} bulk/MiB",
        super::units::size(r.bytes),
        r.upload.mb_per_s(),
        r.upload.control_per_mib(),
        r.upload.bulk_per_mib(),
        r.download.mb_per_s(),
        r.download.control_per_mib(),
        r.download.bulk_per_mib(),
    )
}

/// The process's peak resident set (`VmHWM`, KiB; 0 where /proc is absent).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// `modelrt usb load-bench`.
pub fn load_bench(
    kind: TransportKind,
    sel: Selector,
    dir: &Path,
    path: &Path,
    tinygrad: bool,
    json: bool,
) -> anyhow::Result<()> {
    use modelrt_amd::load_bench::{self, Protocol};
    let wall = std::time::Instant::now();
    let file = super::model::open_bundle_file(path, true)?;
    let bundle = modelrt_core::bundle::Bundle::parse(file.bytes())
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let parse_ms = wall.elapsed().as_secs_f64() * 1e3;
    let g = assembly::open(kind, sel, dir, None)?;
    let emulated = g.model.is_some();
    let boot_ms = wall.elapsed().as_secs_f64() * 1e3 - parse_ms;
    let counts = |d: &mut modelrt_amd::device::AmdDevice<assembly::Transport>| {
        d.am.bus.bridge().transport().counts()
    };
    let protocol = if tinygrad {
        Protocol::Tinygrad
    } else {
        Protocol::Modelrt
    };
    let t = std::time::Instant::now();
    let r = load_bench::load(bundle, g.device, &counts, protocol, None)
        .map_err(|e| anyhow::anyhow!("{}: load: {e}", path.display()))?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let c = &r.counts;
    let rss = peak_rss_kib();
    let name = if tinygrad {
        "tinygrad 0.14 copy-in (replayed)"
    } else {
        "modelrt"
    };
    if json {
        let doc = serde_json::json!({
            "protocol": if tinygrad { "tinygrad" } else { "modelrt" },
            "emulated": emulated,
            "weight_bytes": r.weight_bytes,
            "buffers": r.buffers,
            "device_ms": r.device_ns as f64 / 1e6,
            "wall_load_ms": load_ms,
            "wall_parse_ms": parse_ms,
            "wall_boot_ms": boot_ms,
            "control": c.control(),
            "bulk": c.bulk(),
            "bytes_out": c.control_bytes_out + c.bulk_bytes_out,
            "bytes_in": c.control_bytes_in + c.bulk_bytes_in,
            "control_per_mib": r.per_mib(c.control()),
            "transfers_per_mib": r.per_mib(c.transfers()),
            "peak_rss_kib": rss,
        });
        outln!("{doc}");
        return Ok(());
    }
    let tag = if emulated { " emulated" } else { "" };
    outln!(
        "{name}: {} of weights in {} buffers; load {}{tag} ({:.0} ms wall, parse {:.0} ms), {} ({:.2} control and {:.2} transfers per MiB), {} out, peak RSS {} MiB",
        super::units::size(r.weight_bytes),
        r.buffers,
        super::units::duration(r.device_ns),
        load_ms,
        parse_ms,
        transfers(c),
        r.per_mib(c.control()),
        r.per_mib(c.transfers()),
        super::units::size(c.control_bytes_out + c.bulk_bytes_out),
        rss / 1024
    );
    Ok(())
}
