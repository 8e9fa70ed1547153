//! Ctrl-C (SIGINT) as a flag that long-running commands poll at their step boundaries, so an
//! interrupt ends a benchmark, a multi-step run or a flash write between two steps — with what was
//! measured or written so far reported as partial — instead of killing the process mid-step.
//!
//! [`install`] sets a handler that only stores to an atomic (async-signal-safe) and is installed
//! with `SA_RESETHAND`: the first Ctrl-C asks the command to stop at its next step boundary, a
//! second one ends the process at once the default way. Commands that never poll the flag never
//! install the handler, so Ctrl-C still ends them immediately.
use std::sync::atomic::{AtomicBool, Ordering};

/// Exit status of a command stopped by SIGINT: what a shell reports for a process the signal
/// ended (128 + 2).
pub const EXIT_STATUS: i32 = 130;

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_signal: libc::c_int) {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Route the next SIGINT to the flag [`requested`] reads (a second one ends the process). Returns
/// an error only if the handler could not be installed.
pub fn install() -> std::io::Result<()> {
    // SAFETY: `sigaction` is given a zero-initialised struct (valid for the C type) whose handler is
    // an `extern "C"` function that only stores to an atomic, which is async-signal-safe; the mask is
    // emptied with `sigemptyset` on a pointer to that struct's own field.
    let rc = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut())
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether SIGINT arrived since [`install`] (stays set).
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}
