//! Stopping the copy benchmark between chunks (`bench::copy_bench_with`, the hook behind Ctrl-C in `modelrt usb
//! copy-bench --bridge-only`): the progress callback sees each chunk boundary in order, and when it says stop the
//! report holds exactly the whole chunks copied before that boundary — each of them checked by the emulated GPU —
//! with the rest not run.
use modelrt_asm24::bench::{copy_bench_with, Direction};
use modelrt_asm24::emu::bridge::BridgeEmulator;
use modelrt_asm24::session::Session;

/// host→device chunks are the 256 KiB copy-in windows, device→host chunks the 512 KiB SRAM (docs/hw/asm24-bridge.md §5).
const UP: u64 = 256 << 10;
const DOWN: u64 = 512 << 10;
const SIZE: usize = 4 << 20;

#[test]
fn a_stop_during_the_upload_reports_the_windows_sent_and_skips_the_download() {
    let mut s = Session::from_emulator(BridgeEmulator::new());
    let mut seen = Vec::new();
    let r = copy_bench_with(&mut s, SIZE, 3, |d, done| {
        seen.push((d, done));
        done < 5 * UP
    })
    .unwrap();
    assert!(r.stopped);
    assert_eq!((r.upload.bytes, r.upload.chunks), (5 * UP, 5));
    assert_eq!(
        seen,
        (0..=5)
            .map(|i| (Direction::Upload, i * UP))
            .collect::<Vec<_>>()
    );
    assert!(r.download.is_none());
    assert_eq!(r.download_skipped, Some("interrupted during host→device"));
    // 5 windows: 5 arms + 5 bulk OUTs, nothing queued for the stopped one.
    assert_eq!((r.upload.counts.control(), r.upload.counts.bulk()), (5, 5));
}

#[test]
fn a_stop_during_the_download_reports_the_chunks_received() {
    let mut s = Session::from_emulator(BridgeEmulator::new());
    let r = copy_bench_with(&mut s, SIZE, 3, |d, done| {
        d == Direction::Upload || done < 3 * DOWN
    })
    .unwrap();
    assert!(r.stopped);
    assert_eq!(r.upload.bytes, SIZE as u64);
    let down = r.download.expect("the download ran");
    assert_eq!((down.bytes, down.chunks), (3 * DOWN, 3));
    assert_eq!((down.counts.control(), down.counts.bulk()), (3, 3));
}

#[test]
fn a_run_that_is_never_stopped_is_whole() {
    let mut s = Session::from_emulator(BridgeEmulator::new());
    let r = copy_bench_with(&mut s, SIZE, 3, |_, _| true).unwrap();
    assert!(!r.stopped);
    assert_eq!(r.download.unwrap().bytes, SIZE as u64);
    assert_eq!(
        r.verification,
        "every byte checked by the emulated GPU in both directions"
    );
}
