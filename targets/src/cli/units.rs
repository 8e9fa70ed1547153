//! How `modelrt` prints quantities: sizes and durations in the unit their magnitude calls for
//! (`512 B`, `12.50 KiB`, `3.20 MiB`; `850 ns`, `4.20 µs`, `33.101 ms`, `1.250 s`), counts with the
//! right plural (`plural`, `plural_of` for irregular ones), and f32 tolerances in their shortest exact form (`1e-4`, not `9.999999747378752e-5`).

/// A byte count in B, KiB, MiB or GiB, whichever keeps the number between 1 and 1024.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2} {}", UNITS[unit])
}

/// A duration given in nanoseconds, in ns, µs, ms or s, whichever keeps the number at least 1.
pub fn duration(ns: u64) -> String {
    match ns {
        n if n < 1_000 => format!("{n} ns"),
        n if n < 1_000_000 => format!("{:.2} µs", n as f64 / 1e3),
        n if n < 1_000_000_000 => format!("{:.3} ms", n as f64 / 1e6),
        n => format!("{:.3} s", n as f64 / 1e9),
    }
}

/// `1 thread`, `2 threads`: `n` and `word`, with an `s` unless `n` is 1.
pub fn plural(n: impl Into<u64>, word: &str) -> String {
    let n = n.into();
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// `1 copy`, `2 copies`: `n` with `one` when it is 1, else with `many` (irregular plurals).
pub fn plural_of(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// An f32 tolerance as the shortest decimal that reads back as the same f32, in exponent form
/// (`1e-4`, `1.6756946e-1`; `0` for zero).
pub fn tolerance(v: f32) -> String {
    if v == 0.0 {
        return "0".into();
    }
    format!("{v:e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_pick_the_unit_by_magnitude() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1024), "1.00 KiB");
        assert_eq!(size(12 * 1024 + 512), "12.50 KiB");
        assert_eq!(size(3 << 20), "3.00 MiB");
        assert_eq!(size(5 << 30), "5.00 GiB");
        assert_eq!(size(2048 << 30), "2048.00 GiB");
    }

    #[test]
    fn durations_pick_the_unit_by_magnitude() {
        assert_eq!(duration(850), "850 ns");
        assert_eq!(duration(4_200), "4.20 µs");
        assert_eq!(duration(33_101_000), "33.101 ms");
        assert_eq!(duration(1_250_000_000), "1.250 s");
    }

    #[test]
    fn plurals() {
        assert_eq!(plural(1u32, "thread"), "1 thread");
        assert_eq!(plural(0u32, "iter"), "0 iters");
        assert_eq!(plural(2u64, "iter"), "2 iters");
        assert_eq!(plural_of(1u32, "copy", "copies"), "1 copy");
        assert_eq!(plural_of(3u32, "launch", "launches"), "3 launches");
    }

    #[test]
    fn tolerances_are_the_shortest_f32_form() {
        // 1e-4 as an f32 is 9.999999747378752e-5 when widened to f64.
        assert_eq!(tolerance(1e-4), "1e-4");
        assert_eq!(tolerance(0.05), "5e-2");
        assert_eq!(tolerance(0.0), "0");
    }
}
