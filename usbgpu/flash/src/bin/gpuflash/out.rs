//! Writing results to stdout: [`say!`] is `println!` that ends the program quietly when stdout is
//! closed (`gpuflash … | head -1`).
use std::io::Write as _;

/// `println!` that ends the program quietly when stdout is closed (`gpuflash … | head -1`).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::out::say_line(format_args!($($arg)*))
    };
}

/// One line to stdout; a closed stdout ends the program with exit 0, any other write error with
/// an error line.
pub fn say_line(line: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(line).and_then(|()| out.write_all(b"\n")) {
        stdout_failed(&e);
    }
}

/// A failed write to stdout: quiet exit 0 for a closed pipe, else an error line and exit 1.
pub fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("error: writing to stdout: {e}");
    std::process::exit(1);
}
