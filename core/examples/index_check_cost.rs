//! What the index-input range check (format 2.3, `modelrt_core::index_check`) costs per run: the scan of an int64 index
//! input of 1 000, 100 000 and 1 000 000 elements against one range, every element checked (Gather) and every second
//! one (a GatherND tuple position), all in range so the whole input is read; prints ns per element and per run
//! (docs/bench.md, "Index-input checks"). A bundle without index checks skips the scan (`Executor::run` tests
//! `index_checks().is_empty()` once).
//! `cargo run --release -p modelrt-core --example index_check_cost`
use std::hint::black_box;
use std::time::Instant;

use modelrt_core::bundle::IndexCheck;
use modelrt_core::index_check::first_violation;
use modelrt_hal::target::DType;

fn main() {
    println!("| elements | checked | per run (best of 20) | per checked element |");
    println!("|---:|---|---:|---:|");
    for n in [1_000usize, 100_000, 1_000_000] {
        let data: Vec<u8> = (0..n as i64)
            .flat_map(|i| (i % 50 - 25).to_le_bytes())
            .collect();
        for (period, label) in [(1u32, "every element"), (2, "every 2nd (GatherND)")] {
            let check = IndexCheck {
                input: 0,
                period,
                phase: 0,
                min: -50,
                max: 49,
                what: "",
            };
            let mut best = f64::MAX;
            for _ in 0..20 {
                let t = Instant::now();
                let r = first_violation(black_box(&check), DType::I64, black_box(&data));
                let dt = t.elapsed().as_secs_f64();
                assert!(r.is_none());
                best = best.min(dt);
            }
            let checked = n.div_ceil(period as usize);
            println!(
                "| {n} | {label} | {:.1} µs | {:.2} ns |",
                best * 1e6,
                best * 1e9 / checked as f64
            );
        }
    }
}
