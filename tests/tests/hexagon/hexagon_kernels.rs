//! Hexagon DSP kernels under qemu-hexagon, run by modelrt's harness (qcom/hexagon/dsp/qemu_harness.c), checked
//! against independent references:
//! - the helper library (qcom/hexagon/dsp/dsp_helpers.c) against the host's own integer division and `f32::trunc`,
//!   and binary16 conversion against an exact-arithmetic decoding of all 65,536 halves (`half_value` below is this
//!   test's own reference, independent of the code under test);
//! - the false vector alignment of tinygrad 0.14's DSP codegen: a kernel with tinygrad's over-aligned 128-byte
//!   vector loads computes wrong bytes, the exporter's lowered alignment computes the right ones;
//! - the harness refuses malformed kernel libraries with distinct errors.
//!
//! Needs the exporter's Python, clang-19 and qemu-hexagon-static >= 8 (`cargo xtask setup`); a missing one is a
//! visible skip, and a failure under CI. Shared helpers: `modelrt_tests::hexagon`.
use std::process::Command;

use modelrt_hexagon::emu::harness::{self, BufArg, Helper, Schedule, Step};
use modelrt_tests::hexagon::{dir, tools};

#[test]
fn helper_library_matches_host_arithmetic() {
    if tools().is_none() {
        return;
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let pairs: Vec<(u64, u64)> = (0..20_000)
        .map(|i| {
            let (a, mut b) = (rnd(), rnd());
            // small and extreme divisors too
            b = match i % 4 {
                0 => b % 64,
                1 => b >> (b % 64),
                _ => b,
            };
            (a, if b == 0 { 1 } else { b })
        })
        .collect();
    let run = |f| harness::run_helper(f, &pairs).unwrap();
    for (f, want) in [
        (
            Helper::UDivSi3,
            &(|a: u32, b: u32| u64::from(a / b)) as &dyn Fn(u32, u32) -> u64,
        ),
        (Helper::UModSi3, &|a, b| u64::from(a % b)),
        (Helper::DivSi3, &|a, b| {
            u64::from((a as i32).wrapping_div(b as i32) as u32)
        }),
        (Helper::ModSi3, &|a, b| {
            u64::from((a as i32).wrapping_rem(b as i32) as u32)
        }),
    ] {
        for (p, g) in pairs.iter().zip(&run(f)) {
            let (a, b) = (p.0 as u32, p.1 as u32);
            if b != 0 {
                assert_eq!(*g, want(a, b), "{f:?}({a}, {b})");
            }
        }
    }
    for (f, want) in [
        (
            Helper::UDivDi3,
            &(|a: u64, b: u64| a / b) as &dyn Fn(u64, u64) -> u64,
        ),
        (Helper::UModDi3, &|a, b| a % b),
        (Helper::DivDi3, &|a, b| {
            (a as i64).wrapping_div(b as i64) as u64
        }),
        (Helper::ModDi3, &|a, b| {
            (a as i64).wrapping_rem(b as i64) as u64
        }),
    ] {
        for (p, g) in pairs.iter().zip(&run(f)) {
            assert_eq!(*g, want(p.0, p.1), "{f:?}({}, {})", p.0, p.1);
        }
    }
    // truncf: random bit patterns (NaN, inf, subnormals included) against f32::trunc
    let floats: Vec<(u64, u64)> = pairs.iter().map(|p| (p.0 & 0xffff_ffff, 0)).collect();
    for (p, g) in floats
        .iter()
        .zip(&harness::run_helper(Helper::TruncF, &floats).unwrap())
    {
        let (x, want) = (
            f32::from_bits(p.0 as u32),
            f32::from_bits(p.0 as u32).trunc(),
        );
        let got = f32::from_bits(*g as u32);
        assert!(
            got.to_bits() == want.to_bits() || (x.is_nan() && got.is_nan()),
            "truncf({x:e}) = {got:e}"
        );
    }
}

/// The value of binary16 bits `h`, decoded from the format's definition with exact f64 arithmetic.
fn half_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (i32::from((h >> 10) & 0x1f), f64::from(h & 0x3ff));
    match e {
        0 => sign * m * 2f64.powi(-24),
        31 if m == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

#[test]
fn half_conversions_match_the_binary16_definition() {
    if tools().is_none() {
        return;
    }
    let all: Vec<(u64, u64)> = (0..=0xffffu64).map(|h| (h, 0)).collect();
    let ext = harness::run_helper(Helper::ExtendHfSf2, &all).unwrap();
    for (h, g) in (0..=0xffffu16).zip(&ext) {
        let (got, want) = (f64::from(f32::from_bits(*g as u32)), half_value(h));
        assert!(
            got == want || (want.is_nan() && got.is_nan()),
            "half {h:#06x}: {got} != {want}"
        );
    }
    // float -> half, round to nearest even: nearest finite half by exhaustive search over the sorted positives
    let mut pos: Vec<(f64, u16)> = (0..0x7c00u16).map(|h| (half_value(h), h)).collect();
    pos.sort_by(|a, b| a.0.total_cmp(&b.0));
    let nearest = |x: f32| -> u16 {
        let (s, a) = (
            if x.is_sign_negative() { 0x8000 } else { 0 },
            f64::from(x.abs()),
        );
        if x.is_nan() {
            return 0x7e00;
        }
        // the halfway point above the largest finite half (65504 + 16) rounds to infinity
        if a >= 65520.0 {
            return s | 0x7c00;
        }
        let i = pos.partition_point(|p| p.0 < a);
        let hi = pos[i.min(pos.len() - 1)];
        let lo = pos[i.saturating_sub(1)];
        let (dl, dh) = (a - lo.0, hi.0 - a);
        s | if dl < dh || (dl == dh && lo.1.is_multiple_of(2)) {
            lo.1
        } else {
            hi.1
        }
    };
    let mut x: u32 = 0x1234_5678;
    let mut floats: Vec<(u64, u64)> = (0..40_000)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (u64::from(x), 0)
        })
        .collect();
    // exact ties and values around the half range
    floats.extend((0..20_000u32).map(|i| (u64::from(0x3300_0000 + i * 0x1000), 0)));
    let got = harness::run_helper(Helper::TruncSfHf2, &floats).unwrap();
    for (p, g) in floats.iter().zip(&got) {
        let f = f32::from_bits(p.0 as u32);
        let want = nearest(f);
        if f.is_nan() {
            assert_eq!(*g as u16 & 0x7c00, 0x7c00, "NaN {:#x}", p.0);
            assert_ne!(*g as u16 & 0x3ff, 0, "NaN {:#x}", p.0);
        } else {
            assert_eq!(*g as u16, want, "{f:e} ({:#010x})", p.0);
        }
    }
}

/// tinygrad 0.14's DSP pattern: 128-byte vector loads at offsets `stride·i` (196 here, not known to the compiler),
/// through a vector type declared `aligned(128)`.
const ALIGN_KERNEL: &str = r#"
typedef unsigned char uchar128 __attribute__((aligned(128),ext_vector_type(128)));
typedef union { struct { void *pv; unsigned int len; } buf; struct { int fd; unsigned int offset; } dma; } remote_arg;
void *HAP_mmap(void *addr, int len, int prot, int flags, int fd, long offset);
int HAP_munmap(void *addr, int len);
int HAP_power_set(void *, void *);
unsigned long long HAP_perf_get_time_us(void);
__attribute__((noinline)) void k(unsigned char *restrict __attribute__((align_value(128))) out,
                                 unsigned char *restrict __attribute__((align_value(128))) in, int stride) {
  for (int i = 0; i < 8; i++) {
    uchar128 v = *((uchar128 *)(in + i * stride));
    *((uchar128 *)(out + i * 128)) = v + (uchar128)1;
  }
}
int entry(unsigned long long h, unsigned int sc, remote_arg *pra) {
  if ((sc >> 24) != 2) return 0;
  int *sz = (int *)pra[0].buf.pv, *off = (int *)pra[1].buf.pv;
  unsigned char *o = (unsigned char *)HAP_mmap(0, sz[0], 3, 0, pra[3].dma.fd, 0) + off[0];
  unsigned char *i = (unsigned char *)HAP_mmap(0, sz[2], 3, 0, pra[4].dma.fd, 0) + off[1];
  unsigned long long t = HAP_perf_get_time_us();
  k(o, i, *(int *)((char *)pra[0].buf.pv + 16));
  *(unsigned long long *)pra[2].buf.pv = HAP_perf_get_time_us() - t;
  return 0;
}
"#;

#[test]
fn false_vector_alignment_is_lowered_by_the_exporter() {
    let Some(py) = tools() else { return };
    let d = dir().join("align");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("k.c"), ALIGN_KERNEL).unwrap();
    // compile the kernel as tinygrad renders it and after the exporter's fix, with the exporter's own compile path
    let script = "import sys, os\nfrom mrt import dsp as mrt_dsp\nmrt_dsp.prepare(sys.argv[1])\n\
                  src = open(os.path.join(sys.argv[1], 'k.c')).read()\n\
                  open(os.path.join(sys.argv[1], 'raw.so'), 'wb').write(mrt_dsp.compile_device(src, 'raw'))\n\
                  fixed = mrt_dsp.lower_vector_alignment(src, 1)\nassert 'aligned(1),ext_vector_type(128)' in fixed\n\
                  open(os.path.join(sys.argv[1], 'fixed.so'), 'wb').write(mrt_dsp.compile_device(fixed, 'fixed'))\n";
    let st = xtask::exporter_python::command(&py)
        .args(["-c", script])
        .arg(&d)
        .status()
        .unwrap();
    assert!(st.success());
    let input: Vec<u8> = (0..8 * 196 + 128)
        .map(|i| (i * 7 + i / 256) as u8)
        .collect();
    let want: Vec<u8> = (0..1024)
        .map(|j| input[(j / 128) * 196 + j % 128].wrapping_add(1))
        .collect();
    let compute = |lib: &[u8]| -> Vec<u8> {
        let s = Schedule {
            libs: vec![lib],
            buffers: vec![vec![0; 1024], input.clone()],
            steps: vec![Step::Launch {
                lib: 0,
                bufs: vec![
                    BufArg {
                        buffer: 0,
                        offset: 0,
                        size: 1024,
                    },
                    BufArg {
                        buffer: 1,
                        offset: 0,
                        size: input.len() as u32,
                    },
                ],
                vals: vec![196],
            }],
            outputs: vec![0],
        };
        harness::run(&s).unwrap().outputs.remove(0)
    };
    let raw = compute(&std::fs::read(d.join("raw.so")).unwrap());
    let fixed = compute(&std::fs::read(d.join("fixed.so")).unwrap());
    assert_eq!(fixed, want, "lowered alignment computes the right bytes");
    let wrong = raw.iter().zip(&want).filter(|(a, b)| a != b).count();
    assert!(
        wrong > 0,
        "tinygrad's over-aligned typedef was expected to read wrong bytes"
    );
}

#[test]
fn harness_refuses_bad_libraries_with_distinct_errors() {
    if tools().is_none() {
        return;
    }
    let launch = |lib: &[u8]| {
        let s = Schedule {
            libs: vec![lib],
            buffers: vec![vec![0; 128]],
            steps: vec![Step::Launch {
                lib: 0,
                bufs: vec![BufArg {
                    buffer: 0,
                    offset: 0,
                    size: 128,
                }],
                vals: vec![],
            }],
            outputs: vec![],
        };
        harness::run(&s).unwrap_err().to_string()
    };
    let e = launch(b"\x7fELF not really a shared object, just some bytes........................");
    assert!(e.contains("exit 3"), "{e}");
    // a library importing something the DSP does not provide: only the HAP_* calls are bound
    let d = dir().join("imports");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("x.c"),
        "float sqrtf(float);\nint entry(unsigned long long h, unsigned sc, void *pra) { return (int)sqrtf((float)sc); }\n",
    )
    .unwrap();
    let ok = Command::new(harness::qemu::CLANG)
        .args([
            "--target=hexagon",
            "-mcpu=hexagonv65",
            "-shared",
            "-fPIC",
            "-nostdlib",
            "-fuse-ld=lld",
            "-O2",
            "x.c",
            "-o",
            "x.so",
        ])
        .current_dir(&d)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let so = std::fs::read(d.join("x.so")).unwrap();
    let offline = modelrt_hexagon::bundle::inspect::check_hexagon(&so, "x").unwrap_err();
    assert!(offline.contains("sqrtf"), "{offline}");
    let e = launch(&so);
    assert!(
        e.contains("exit 4") && e.contains("unresolved import: sqrtf"),
        "{e}"
    );
}
