//! `modelrt usb …` subcommands: list bridges, show the PCIe topology behind one, benchmark copies,
//! boot the AMD GPU (the AMD parts are drawn by `usb_amd`).
//! Protocol logic lives in `modelrt-asm24` (session, bring-up, bench); this module only draws.
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use modelrt_amd::platform::resolve_firmware_dir;
use modelrt_asm24::bench::{self, PhaseReport};
use modelrt_asm24::host::Selector;
use modelrt_asm24::pcie::topology;
use modelrt_asm24::pcie::PciDevice;
use modelrt_asm24::session::{self, Session, TransportKind};

use super::progress::{self, Interrupted};

#[derive(Subcommand)]
pub enum UsbCmd {
    /// List ASM24 bridges (USB ids, product string, firmware version).
    List(Common),
    /// Bring up PCIe behind a bridge and show the topology (ids, bus numbers, windows, BARs).
    Lspci(Common),
    /// Host→VRAM and VRAM→host copies over SDMA (the GPU is booted first): MB/s and USB round
    /// trips per MiB. `--bridge-only` measures the bridge SRAM alone, without a GPU.
    CopyBench {
        #[command(flatten)]
        common: Common,
        /// Bytes copied in each direction.
        #[arg(long, default_value_t = 64_000_000)]
        size: usize,
        /// Sizes from 4 KiB to 1 GiB (4K, 64K, 1M, 4M, 16M, 256M, 1G) instead of `--size`: MB/s in
        /// and out for each, through both paths (BAR0 streams up to 4 MiB, and the SDMA pipeline).
        #[arg(long, conflicts_with_all = ["size", "bridge_only"])]
        sweep: bool,
        /// Seed of the test pattern.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Only the bridge's SRAM round trip (no GPU boot, no SDMA).
        #[arg(long)]
        bridge_only: bool,
        /// Directory with the amdgpu firmware, for the GPU boot [default: $MODELRT_AMD_FIRMWARE_DIR,
        /// else /lib/firmware/amdgpu].
        #[arg(long, value_name = "DIR")]
        firmware_dir: Option<std::path::PathBuf>,
    },
    /// Load a bundle's weights onto the AMD GPU (booted first) and report load time, peak RSS, USB
    /// bytes and transfers per MiB: `--protocol modelrt` is the whole load as `modelrt run` does it,
    /// `--protocol tinygrad` replays tinygrad 0.14's per-buffer copy-in on the same link.
    LoadBench {
        #[command(flatten)]
        common: Common,
        /// The bundle (amd-gfx1100).
        bundle: std::path::PathBuf,
        /// modelrt (the executor's load) or tinygrad (its copy-in protocol, weights only).
        #[arg(long, default_value = "modelrt", value_parser = ["modelrt", "tinygrad"])]
        protocol: String,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Directory with the amdgpu firmware.
        #[arg(long, value_name = "DIR")]
        firmware_dir: Option<std::path::PathBuf>,
    },
    /// Boot the AMD GPU behind the bridge with the AM driver: IP versions, firmware versions, boot
    /// time and USB transfers per step. `--transport emu` boots the Navi31 GPU model.
    Boot {
        #[command(flatten)]
        common: Common,
        /// Directory with the amdgpu firmware blobs (psp_13_0_0_sos.bin, …) [default:
        /// $MODELRT_AMD_FIRMWARE_DIR, else /lib/firmware/amdgpu].
        #[arg(long, value_name = "DIR")]
        firmware_dir: Option<std::path::PathBuf>,
    },
}

#[derive(Args)]
pub struct Common {
    /// auto (hardware only, never falls back), usb, or emu (bridge emulator with a Navi31-like GPU).
    #[arg(long, default_value = "auto", value_parser = parse_transport)]
    transport: TransportKind,
    /// Which bridge: an index (0 = first) or BUS-ADDRESS as in `usb:3-7`.
    #[arg(long, default_value = "0")]
    device: String,
}

fn parse_transport(s: &str) -> Result<TransportKind, String> {
    s.parse()
}

fn parse_selector(s: &str) -> anyhow::Result<Selector> {
    let s = s.strip_prefix("usb:").unwrap_or(s);
    if let Some((bus, addr)) = s.split_once('-') {
        return Ok(Selector::BusAddress(
            bus.parse().context("bus number")?,
            addr.parse().context("device address")?,
        ));
    }
    Ok(Selector::Index(
        s.parse()
            .context("--device must be an index or BUS-ADDRESS")?,
    ))
}

fn open(c: &Common) -> anyhow::Result<Session> {
    Ok(Session::open(c.transport, parse_selector(&c.device)?)?)
}

pub fn run(cmd: UsbCmd) -> anyhow::Result<()> {
    match cmd {
        UsbCmd::List(c) => list(&c),
        UsbCmd::Lspci(c) => lspci(&c),
        UsbCmd::CopyBench {
            common,
            size,
            seed,
            sweep,
            bridge_only,
            firmware_dir,
        } => {
            if sweep {
                super::usb_amd::sdma_copy_sweep(
                    common.transport,
                    parse_selector(&common.device)?,
                    &resolve_firmware_dir(firmware_dir.as_deref())?,
                    seed,
                )
            } else if bridge_only {
                copy_bench(&common, size, seed)
            } else {
                require_bridge(common.transport)?;
                super::usb_amd::sdma_copy_bench(
                    common.transport,
                    parse_selector(&common.device)?,
                    &resolve_firmware_dir(firmware_dir.as_deref())?,
                    size,
                    seed,
                )
            }
        }
        UsbCmd::LoadBench {
            common,
            bundle,
            protocol,
            json,
            firmware_dir,
        } => super::usb_amd::load_bench(
            common.transport,
            parse_selector(&common.device)?,
            &resolve_firmware_dir(firmware_dir.as_deref())?,
            &bundle,
            protocol == "tinygrad",
            json,
        ),
        UsbCmd::Boot {
            common,
            firmware_dir,
        } => {
            require_bridge(common.transport)?;
            super::usb_amd::boot(
                common.transport,
                parse_selector(&common.device)?,
                &resolve_firmware_dir(firmware_dir.as_deref())?,
            )
        }
    }
}

/// Why no ASM24 bridge could be used, and what runs without one.
const NO_BRIDGE: &str =
    "no ASM24 bridge found (looked for add1:0001 and 3801:0001); use --transport emu for the emulator";

/// Refuse a hardware transport with no bridge attached before anything else is looked for (the
/// firmware, for one): the missing bridge is what the user needs to hear first.
fn require_bridge(kind: TransportKind) -> anyhow::Result<()> {
    if kind != TransportKind::Emu && session::list(kind)?.is_empty() {
        bail!(NO_BRIDGE);
    }
    Ok(())
}

fn list(c: &Common) -> anyhow::Result<()> {
    let found = session::list(c.transport)?;
    if found.is_empty() {
        bail!(NO_BRIDGE);
    }
    for (i, b) in found.iter().enumerate() {
        let fw = if b.custom_firmware {
            "custom firmware"
        } else {
            "NOT the custom firmware"
        };
        outln!(
            "{i}: {} {:04x}:{:04x} {:?} bcdDevice {:x}.{:02x} ({fw}){}",
            b.name,
            b.vendor_id,
            b.product_id,
            b.product.as_deref().unwrap_or("?"),
            b.bcd_device >> 8,
            b.bcd_device & 0xFF,
            if b.emulated { " [emulated]" } else { "" }
        );
    }
    outln!("protocol version: the custom firmware has no version request (it has only the E4/E5/F0/F2/F3 requests)");
    Ok(())
}

fn size_str(n: u64) -> String {
    match n {
        n if n >= 1 << 30 && n.is_multiple_of(1 << 30) => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n.is_multiple_of(1 << 20) => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n.is_multiple_of(1 << 10) => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

fn lspci(c: &Common) -> anyhow::Result<()> {
    let s = open(c)?;
    let name = s.name();
    let emulated = s.is_emulated();
    let mut dev = PciDevice::open(s.bridge).with_context(|| format!("{name}: PCIe bring-up"))?;
    let functions = topology::scan(&mut dev)?;
    outln!(
        "{name}{}",
        if emulated {
            " [emulated bridge and GPU]"
        } else {
            ""
        }
    );
    for f in &functions {
        let b = f.bdf;
        outln!(
            "{:02x}:{:02x}.{} [{:06x}] {:04x}:{:04x}",
            b.bus,
            b.dev,
            b.func,
            f.class,
            f.vendor,
            f.device
        );
        if let Some(w) = &f.bridge {
            outln!(
                "    bus: primary {} secondary {} subordinate {}",
                w.primary,
                w.secondary,
                w.subordinate
            );
            if let Some((lo, hi)) = w.memory {
                outln!("    memory window {lo:#x}-{hi:#x}");
            }
            if let Some((lo, hi)) = w.prefetchable {
                outln!("    prefetchable window {lo:#x}-{hi:#x}");
            }
        }
        for (i, bar) in &f.bars {
            outln!(
                "    BAR{i}: {:#x} size {} ({}-bit{})",
                bar.address,
                size_str(bar.size),
                if bar.is_64bit { 64 } else { 32 },
                if bar.prefetchable {
                    ", prefetchable"
                } else {
                    ""
                }
            );
        }
    }
    let counts = dev.bridge().transport().counts();
    outln!(
        "USB transfers: {} control, {} bulk",
        counts.control(),
        counts.bulk()
    );
    Ok(())
}

fn print_phase(label: &str, p: &PhaseReport, emulated: bool) {
    if p.bytes == 0 {
        // Stopped before the first chunk: no rate to report.
        outln!("{label}: nothing copied");
        return;
    }
    let tag = if emulated {
        " (emulated time — not a hardware measurement)"
    } else {
        ""
    };
    outln!(
        "{label}: {} in {}, {}, {:.1} MB/s{tag}",
        super::units::plural(p.bytes, "byte"),
        super::units::plural(p.chunks as u64, "chunk"),
        super::units::duration(p.ns),
        p.mb_per_s()
    );
    outln!(
        "    USB: {} control + {} bulk transfers = {:.2} round trips/MiB ({:.2} control/MiB), {:.2}% of payload on bulk",
        p.counts.control(),
        p.counts.bulk(),
        p.transfers_per_mib(),
        p.control_per_mib(),
        100.0 * p.bulk_fraction()
    );
}

fn copy_bench(c: &Common, size: usize, seed: u64) -> anyhow::Result<()> {
    let mut s = open(c)?;
    progress::catch_interrupt()?;
    // One bar over both directions; Ctrl-C stops at the next chunk boundary (the bridge crate's copy hooks).
    let bar = progress::byte_bar(2 * size as u64, "copy-bench");
    let r = bench::copy_bench_with(&mut s, size, seed, |dir, done| {
        let base = match dir {
            bench::Direction::Upload => 0,
            bench::Direction::Download => size as u64,
        };
        bar.set_position(base + done);
        !progress::stop_requested()
    })
    .with_context(|| format!("{}: copy-bench", s.name()))?;
    bar.finish_and_clear();
    outln!(
        "{}{}",
        s.name(),
        if r.emulated {
            " [emulated bridge: MB/s below is emulated]"
        } else {
            ""
        }
    );
    let of = |p: &PhaseReport| {
        if p.bytes < size as u64 {
            format!(" (partial: of {size})")
        } else {
            String::new()
        }
    };
    print_phase(
        &format!("host→device{}", of(&r.upload)),
        &r.upload,
        r.emulated,
    );
    match (&r.download, r.download_skipped) {
        (Some(d), _) => print_phase(&format!("device→host{}", of(d)), d, r.emulated),
        (None, Some(why)) => outln!("device→host: skipped: {why}"),
        (None, None) => {}
    }
    outln!("verification: {}", r.verification);
    if r.stopped {
        let down = r.download.map_or(0, |d| d.bytes);
        return Err(Interrupted(format!(
            "after {} of {size} bytes host→device and {} device→host; the rates above are partial",
            r.upload.bytes, down
        ))
        .into());
    }
    Ok(())
}
