//! Bounded wait for a child process: poll until it exits, or kill and reap it once the time limit
//! has passed. Shared by every place xtask runs a tool it must not hang on (exporter, pip, benchmark
//! workers).
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// How often the child is polled for its exit.
const POLL: Duration = Duration::from_millis(20);

/// Wait for `child` to exit and return its status; after `timeout` kill it, reap it and return
/// `Ok(None)`. Errors are those of polling the child.
pub(crate) fn wait_or_kill(
    child: &mut Child,
    timeout: Duration,
) -> std::io::Result<Option<ExitStatus>> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn returns_the_exit_status_of_a_child_that_finishes() {
        let mut child = Command::new("sh").args(["-c", "exit 7"]).spawn().unwrap();
        let status = wait_or_kill(&mut child, Duration::from_secs(10))
            .unwrap()
            .expect("finished in time");
        assert_eq!(status.code(), Some(7));
    }

    #[test]
    fn kills_and_reaps_a_child_that_overruns() {
        let start = Instant::now();
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let status = wait_or_kill(&mut child, Duration::from_millis(200)).unwrap();
        assert_eq!(status, None);
        assert!(start.elapsed() < Duration::from_secs(10));
        // Reaped: the status is available without waiting and shows a kill, not an exit.
        let reaped = child.try_wait().unwrap().expect("already reaped");
        assert_eq!(reaped.code(), None);
    }
}
