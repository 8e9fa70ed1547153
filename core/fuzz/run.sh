#!/usr/bin/env bash
# Build and run the libFuzzer targets of core/fuzz on stable Rust (no cargo-fuzz, no nightly).
#
#   core/fuzz/run.sh [--seconds N] [--runs N] [--jobs N] [TARGET...]
#
# TARGET defaults to every target (bundle_parse load_run_cpu capi_load_run). Each runs for --seconds (default 25)
# or --runs executions, whichever the caller gives (--runs wins), on the seed corpus written by the
# `fuzz-seeds` binary plus whatever corpus/ already holds. Exits non-zero on any crash; the crashing
# input is left in artifacts/TARGET/. The executions of each target are printed as
# `fuzz: TARGET executions=N` (libFuzzer's own final `stat::number_of_executed_units`).
# See docs/fuzzing.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

seconds=25
runs=""
jobs=1
targets=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        -h|--help) sed -n '2,11p' "$here/run.sh"; exit 0 ;;
        -*) echo "error: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
if [[ ${#targets[@]} -eq 0 ]]; then
    targets=(bundle_parse load_run_cpu capi_load_run)
fi

host="$(rustc -vV | sed -n 's/^host: //p')"
# This crate is its own workspace with its own target directory (the paths below rely on it).
export CARGO_TARGET_DIR="$here/target"
cargo="${CARGO:-cargo}"

# Seeds and their tests: a plain (uninstrumented, unoptimised: it only writes a few files) host build.
"$cargo" test --lib --tests
"$cargo" build --bin fuzz-seeds
for t in "${targets[@]}"; do
    ./target/debug/fuzz-seeds "corpus/$t" "$t"
done

# The fuzz targets: SanitizerCoverage instrumentation through stable codegen flags, the same passes
# cargo-fuzz enables. `--target` keeps these RUSTFLAGS off build scripts and proc macros.
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
-Cdebug-assertions -Coverflow-checks"
bins=()
for t in "${targets[@]}"; do bins+=(--bin "$t"); done
"$cargo" build --release --target "$host" "${bins[@]}"
unset RUSTFLAGS

status=0
for t in "${targets[@]}"; do
    mkdir -p "artifacts/$t"
    limit=(-max_total_time="$seconds")
    if [[ -n "$runs" ]]; then limit=(-runs="$runs"); fi
    log="artifacts/$t/last-run.log"
    budget="$seconds s"
    if [[ -n "$runs" ]]; then budget="$runs runs"; fi
    echo "==> fuzz $t ($budget, $jobs job(s))"
    parallel=()
    logs=("$log")
    if [[ $jobs -gt 1 ]]; then
        # Each job logs to fuzz-N.log in the current directory; count from those only.
        parallel=(-jobs="$jobs" -workers="$jobs")
        rm -f fuzz-*.log
        logs=(fuzz-*.log)
    fi
    set +e
    "./target/$host/release/$t" "corpus/$t" \
        -artifact_prefix="artifacts/$t/" -max_len=65536 -print_final_stats=1 \
        "${parallel[@]}" "${limit[@]}" >"$log" 2>&1
    rc=$?
    set -e
    if [[ $jobs -gt 1 ]]; then logs=(fuzz-*.log); fi
    execs=$(cat "${logs[@]}" 2>/dev/null | sed -n 's/^stat::number_of_executed_units: *//p' |
        awk '{s+=$1} END {print s+0}')
    if [[ $jobs -gt 1 ]]; then cat fuzz-*.log >>"$log"; rm -f fuzz-*.log; fi
    echo "fuzz: $t executions=$execs exit=$rc"
    if [[ $rc -ne 0 ]]; then
        tail -n 40 "$log" >&2
        echo "error: fuzz target $t failed (exit $rc); inputs in core/fuzz/artifacts/$t/" >&2
        status=1
    fi
done
exit $status
