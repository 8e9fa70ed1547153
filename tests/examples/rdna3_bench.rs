//! Throughput of the RDNA3 interpreter on a real amd-gfx1100 bundle: runs the bundle's schedule
//! ITERS times over a flat GPU memory and reports instructions and lane-operations per second of
//! the process's CPU time summed over its threads (`/proc/self/stat`, so a busy shared machine
//! does not skew the per-core rate) and per second of wall time (what parallel workgroups speed
//! up). Workgroups run on `$MODELRT_RDNA3_THREADS` threads (default: every core; 1 = serial).
//! The figures in docs/hw/rdna3-isa.md come from:
//!
//! ```sh
//! cargo xtask compile xtask/models/vision.onnx --target amd-gfx1100 -o target/vision-gfx1100.mrt
//! MODELRT_RDNA3_THREADS=1 cargo run --release -p modelrt-tests --example rdna3_bench -- target/vision-gfx1100.mrt 5
//! MODELRT_RDNA3_THREADS=2 cargo run --release -p modelrt-tests --example rdna3_bench -- target/vision-gfx1100.mrt 5
//! ```
#[path = "../tests/amd/rdna3_support/mod.rs"]
mod rdna3_support;

use std::time::Instant;

use modelrt_core::Bundle;
use rdna3_support::runner::Loaded;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("error: usage: rdna3_bench BUNDLE.mrt [ITERS]");
        std::process::exit(1);
    };
    let iters: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {path}: {e}");
            std::process::exit(1);
        }
    };
    let bundle = match Bundle::parse(&bytes) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {path}: {e}");
            std::process::exit(1);
        }
    };
    let inputs: Vec<Vec<u8>> = bundle
        .body()
        .inputs
        .iter()
        .map(|t| vec![0u8; t.map(|t| t.byte_len() as usize).unwrap_or(0)])
        .collect();
    let mut l = Loaded::new(bundle);
    if let Err(e) = l.init() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    let before = l.exec.stats();
    let cpu0 = cpu_ns();
    let t = Instant::now();
    let mut best = f64::MAX;
    for _ in 0..iters {
        let s = Instant::now();
        if let Err(e) = l.run(&inputs) {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
        best = best.min(s.elapsed().as_secs_f64());
    }
    let wall = t.elapsed().as_secs_f64();
    let secs = cpu_ns()
        .zip(cpu0)
        .map_or(wall, |(b, a)| (b - a) as f64 / 1e9);
    let s = l.exec.stats();
    let (insts, lanes) = (
        (s.instructions - before.instructions) as f64,
        (s.lane_ops - before.lane_ops) as f64,
    );
    println!(
        "{path}: {} thread(s), {iters} steps, best {:.1} ms/step wall (emulated); {:.2} s CPU, {wall:.2} s wall: \
         {:.1} M instructions/s and {:.1} M lane-ops/s per CPU second, {:.1} M lane-ops/s wall",
        l.exec.threads(),
        best * 1e3,
        secs,
        insts / secs / 1e6,
        lanes / secs / 1e6,
        lanes / wall / 1e6
    );
}

/// This process's CPU time (user + system, all threads) in ns, from `/proc/self/stat` (fields
/// 14 and 15, in clock ticks of 1/100 s on Linux), if readable.
fn cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name (which may hold spaces): state is field 3.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10_000_000)
}
