//! Signs of life and interrupts for commands that can run for seconds or minutes (`bench`, `run
//! --steps`, `verify` and `demo` on the emulators, `usb copy-bench`): a progress bar on standard
//! error when it is a terminal (nothing otherwise, so pipes and logs stay clean), and Ctrl-C polled
//! at step boundaries (`modelrt_targets::interrupt`). A command stopped that way prints what it
//! measured or computed so far, labelled partial, and returns [`Interrupted`], which `main` turns
//! into one `interrupted:` line and exit status 130.
use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use modelrt_targets::interrupt;

/// A command ended early by Ctrl-C, after printing its partial results; the text says what was
/// done and what was not.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Interrupted(pub String);

/// Start polling Ctrl-C: from now on the first SIGINT only sets the flag [`stop_requested`] reads.
pub fn catch_interrupt() -> anyhow::Result<()> {
    interrupt::install().map_err(|e| anyhow::anyhow!("cannot install the Ctrl-C handler: {e}"))
}

/// Whether Ctrl-C arrived (the command should stop at this step boundary).
pub fn stop_requested() -> bool {
    interrupt::requested()
}

/// A progress bar of `total` steps labelled `what`, drawn on standard error only when that is a
/// terminal.
pub fn bar(total: u64, what: &str) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(total), target);
    if let Ok(style) =
        ProgressStyle::with_template("{msg} [{bar:40}] {human_pos}/{human_len} {elapsed} eta {eta}")
    {
        bar.set_style(style);
    }
    bar.set_message(what.to_string());
    bar
}

/// A progress bar over a byte count (copies).
pub fn byte_bar(total: u64, what: &str) -> ProgressBar {
    let bar = bar(total, what);
    if let Ok(style) = ProgressStyle::with_template(
        "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style);
    }
    bar
}
