//! The one way `modelrt` writes to standard output: [`outln!`] (a `println!` that never panics).
//! Rust ignores SIGPIPE, so a write to a closed pipe (`modelrt info X.mrt | head -1`) fails with
//! `BrokenPipe`, on which `println!` panics. Here a broken pipe ends the program quietly with the
//! conventional exit status 141 (128 + SIGPIPE) — the reader is gone, nothing more can be shown —
//! and any other write error is one `error:` line and exit 1. This keeps the binary free of unsafe
//! code (restoring the default SIGPIPE action would need a libc call).
use std::io::Write;

/// Exit status after a closed stdout: what a shell reports for a process killed by SIGPIPE.
pub const BROKEN_PIPE_EXIT: i32 = 141;

/// Write `args` and a newline to stdout; see the module doc for what happens when that fails.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    if let Err(e) = written {
        quit(&e);
    }
}

/// End the program after a failed write to stdout.
fn quit(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(BROKEN_PIPE_EXIT);
    }
    eprintln!("error: cannot write to standard output: {e}");
    std::process::exit(1);
}

/// `println!` for `modelrt`'s output: a closed stdout ends the program quietly (see [`line`]).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::out::line(format_args!($($arg)*))
    };
}
