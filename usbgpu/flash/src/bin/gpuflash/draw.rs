//! Drawing progress: one progress bar per phase of a long operation, fed by its [`FlashEvent`]s.
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use modelrt_gpuflash::flashtool::{FlashEvent, Unit};
use modelrt_gpuflash::navi31::psp::StreamEvent;
use modelrt_gpuflash::navi31::writer::SectorEvent;

/// Draws [`FlashEvent`]s: one progress bar per phase; note lines go above the bar, or to stdout when
/// there is no terminal to draw on.
pub struct Draw {
    bar: ProgressBar,
    started: Instant,
    sectors: u64,
    verbose: bool,
}

impl Draw {
    pub fn new(sectors: u64) -> Self {
        Draw {
            bar: ProgressBar::hidden(),
            started: Instant::now(),
            sectors,
            verbose: false,
        }
    }

    /// Also print one line per written sector (`write --verbose`); by default the bar alone shows
    /// progress.
    pub fn verbose(mut self, on: bool) -> Self {
        self.verbose = on;
        self
    }

    fn say(&self, line: String) {
        if self.bar.is_hidden() {
            say!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    pub fn event(&mut self, ev: FlashEvent) {
        match ev {
            FlashEvent::Start { what, unit, total } => {
                self.bar = ProgressBar::new(total);
                let template = match unit {
                    Unit::Bytes => {
                        "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}"
                    }
                    Unit::Sectors => "{msg} [{bar:40}] sector {pos}/{len}",
                };
                if let Ok(style) = ProgressStyle::with_template(template) {
                    self.bar.set_style(style);
                }
                self.bar.set_message(what);
            }
            FlashEvent::Position(n) => self.bar.set_position(n),
            FlashEvent::Sector(s) => {
                self.bar.inc(1);
                match s {
                    SectorEvent::Skipped { sector } => {
                        self.bar.set_message(format!("write {sector:3} unchanged"))
                    }
                    SectorEvent::Written { sector, .. } if self.verbose => self.say(format!(
                        "OK sector {sector:03}/{} @0x{:06X} elapsed={:.1?}",
                        self.sectors.saturating_sub(1),
                        sector * 0x1000,
                        self.started.elapsed()
                    )),
                    SectorEvent::Written { sector, .. } => {
                        self.bar.set_message(format!("write {sector:3} written"))
                    }
                }
            }
            FlashEvent::Stream(StreamEvent::Item { item, phase, len }) => {
                self.say(format!(
                    "streaming item 0x{item:02X} (phase {phase}, {len} bytes)"
                ));
                self.bar.set_length(len as u64);
                self.bar.set_position(0);
            }
            FlashEvent::Stream(StreamEvent::Bytes { sent }) => self.bar.set_position(sent as u64),
            FlashEvent::Finish => self.bar.finish_and_clear(),
        }
    }
}
