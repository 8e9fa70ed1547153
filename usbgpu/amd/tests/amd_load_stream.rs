//! The load stream (docs/hw/amd-driver.md §6.1): load-time uploads packed into the copy-in pipeline.
//! Without faults, a mix of odd-sized buffers at unaligned arena offsets — small ones packed several
//! to a 256 KiB chunk, one larger than a group sent from the caller's bytes — lands byte for byte
//! (checked through the GPU model's own VRAM view, not the driver's read path), with fewer
//! transfers per MiB than tinygrad's protocol replayed on the same link, and the progress callback
//! sees every byte. With a fault injected into the link (a bulk OUT timeout, a disconnect in the
//! middle of the stream) or into the GPU model (an SDMA engine that never drains), the load fails
//! with one error naming the copy-in, in bounded time, and nothing panics.
mod amd_driver_support;
use amd_driver_support::*;
use modelrt_amd::device::{CopyPath, LOAD_GROUP};
use modelrt_amd::emu::navi31_gpu::Engine;
use modelrt_hal::device::Device;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// (arena offset, bytes): odd sizes at unaligned offsets, one over [`LOAD_GROUP`].
fn buffers() -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 3u64;
    for (i, n) in [
        7usize,
        1000,
        65_537,
        300_001,
        13,
        LOAD_GROUP + 4099,
        5,
        262_140,
    ]
    .into_iter()
    .enumerate()
    {
        out.push((at, pattern(n, 11 + i as u64)));
        at += n as u64 + 61;
    }
    out
}

#[test]
fn packed_weights_land_byte_exact_with_progress() {
    let Some(dir) = firmware_dir("packed_weights_land_byte_exact_with_progress") else {
        return;
    };
    let bufs = buffers();
    let total: u64 = bufs.iter().map(|(_, b)| b.len() as u64).sum();
    let run = |tinygrad: bool| {
        let (gpu, mut dev, _h) = device(&dir);
        dev.alloc_arena(16 << 20).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let before = dev.am.bus.bridge().transport().counts();
        if tinygrad {
            dev.copy_engine().set_tinygrad_replay(true);
            for (off, b) in &bufs {
                dev.upload_via(CopyPath::Pipeline, *off, b).unwrap();
            }
        } else {
            dev.stream_loads(Some(Box::new(move |n| s.lock().unwrap().push(n))));
            for (off, b) in &bufs {
                dev.upload(*off, b).unwrap();
            }
            // Any other operation drains the stream first.
            let mut probe = [0u8; 4];
            dev.download(0, &mut probe).unwrap();
        }
        let counts = dev.am.bus.bridge().transport().counts().since(&before);
        let pa = dev.arena_va().unwrap() - modelrt_amd::mem::VA_BASE;
        for (off, b) in &bufs {
            let mut got = vec![0u8; b.len()];
            gpu.vram_read(pa + off, &mut got);
            assert!(
                got == *b,
                "buffer at arena offset {off} differs (tinygrad replay: {tinygrad})"
            );
        }
        assert!(gpu.take_errors().is_empty());
        let seen = seen.lock().unwrap().clone();
        (counts, seen)
    };
    let (ours, progress) = run(false);
    let (tg, _) = run(true);
    // Progress: cumulative, every chunk, ending at the total.
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    assert_eq!(progress.last().copied(), Some(total));
    // At least one report per 256 KiB chunk (groups end in partial chunks, so a few more).
    let chunks = total.div_ceil(modelrt_amd::transfer::CHUNK as u64);
    assert!(
        (chunks..chunks + 4).contains(&(progress.len() as u64)),
        "{} reports for {chunks} chunks",
        progress.len()
    );
    let mib = total as f64 / (1 << 20) as f64;
    eprintln!(
        "packed: {} control + {} bulk ({:.2} per MiB); tinygrad replay: {} + {} ({:.2} per MiB)",
        ours.control(),
        ours.bulk(),
        ours.transfers() as f64 / mib,
        tg.control(),
        tg.bulk(),
        tg.transfers() as f64 / mib
    );
    assert!(ours.transfers() < tg.transfers(), "{ours:?} vs {tg:?}");
    // Bulk: one OUT per 256 KiB chunk packed; tinygrad's per-buffer chunks are more (a partial chunk
    // per buffer).
    assert!(ours.bulk_out < tg.bulk_out, "{ours:?} vs {tg:?}");
}

/// Stream the buffers with `fault` armed after the first chunk; the load must fail naming the copy.
fn faulted(dir: &std::path::Path, what: &str, fault: impl FnOnce(&Navi31Fault)) {
    let bufs = buffers();
    let (gpu, mut dev, handle) = device(dir);
    dev.alloc_arena(16 << 20).unwrap();
    dev.stream_loads(None);
    // One small load first, so the copy engine's one-time set-up is done before the fault.
    dev.upload(0, &[1; 8]).unwrap();
    let mut probe = [0u8; 8];
    dev.download(0, &mut probe).unwrap();
    assert_eq!(probe, [1; 8]);
    fault(&Navi31Fault {
        gpu: &gpu,
        handle: &handle,
    });
    let t = Instant::now();
    let mut err = None;
    for (off, b) in &bufs {
        if let Err(e) = dev.upload(*off, b) {
            err = Some(e.to_string());
            break;
        }
    }
    let e = err.unwrap_or_else(|| {
        let mut probe = [0u8; 4];
        dev.download(0, &mut probe)
            .expect_err(&format!("{what}: the load succeeded despite the fault"))
            .to_string()
    });
    eprintln!("{what}: {e}");
    assert!(e.contains("copy-in"), "{what}: {e}");
    assert!(
        t.elapsed().as_secs() < 120,
        "{what}: took {:?}",
        t.elapsed()
    );
}

/// The two places a fault can be armed.
struct Navi31Fault<'a> {
    gpu: &'a modelrt_amd::emu::navi31_gpu::Navi31Model,
    handle: &'a modelrt_asm24::emu::bridge::EmuHandle,
}

#[test]
fn a_faulted_load_stream_fails_with_one_error_naming_the_copy() {
    let Some(dir) = firmware_dir("a_faulted_load_stream_fails") else {
        return;
    };
    faulted(&dir, "bulk OUT timeout", |f| {
        f.handle.faults(|x| x.bulk_out_timeouts = 1)
    });
    faulted(&dir, "disconnect mid-stream", |f| {
        f.handle
            .faults(|x| x.disconnect_after_bulk_bytes = Some(3 << 20))
    });
    faulted(&dir, "SDMA never drains", |f| {
        f.gpu.faults(|x| x.hang_queue = Some(Engine::Sdma))
    });
}
