//! A closed stdout or stderr ends `cargo xtask` quietly. Rust ignores SIGPIPE, so a write to a pipe whose
//! reader has gone (`cargo xtask zoo | head -1`) fails with `BrokenPipe`, and `println!` turns that into a
//! panic ("failed printing to stdout: Broken pipe"), exit 101. This panic hook recognises exactly that panic
//! and exits with status 141 (128 + SIGPIPE, what a shell reports for a program ended by the signal)
//! without a message — there is nowhere left to print one. Every other panic keeps the default hook.

/// The exit status for a closed output stream: 128 + SIGPIPE (13).
pub const CLOSED_PIPE_EXIT: i32 = 141;

/// Whether a panic message is std's report of a print to a closed pipe.
pub fn is_closed_pipe(message: &str) -> bool {
    (message.starts_with("failed printing to stdout")
        || message.starts_with("failed printing to stderr"))
        && message.contains("Broken pipe")
}

/// Install the hook (once, first thing in `main`).
pub fn install() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload_as_str()
            .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
            .unwrap_or("");
        if is_closed_pipe(message) {
            std::process::exit(CLOSED_PIPE_EXIT);
        }
        default(info)
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message std panics with, produced by std itself: a print to a writer whose reader is gone.
    #[test]
    fn recognises_std_broken_pipe_panics_only() {
        let e = std::io::Error::from_raw_os_error(32); // EPIPE on Linux
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        // std's wording (library/std/src/io/stdio.rs, `print_to`): "failed printing to {label}: {error}"
        assert!(
            is_closed_pipe(&format!("failed printing to stdout: {e}")),
            "{e}"
        );
        assert!(is_closed_pipe(&format!("failed printing to stderr: {e}")));
        assert!(!is_closed_pipe(
            "failed printing to stdout: No space left on device"
        ));
        assert!(!is_closed_pipe("index out of bounds: Broken pipe"));
    }
}
