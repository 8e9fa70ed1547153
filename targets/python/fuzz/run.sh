#!/usr/bin/env bash
# Build the modelrt wheel and fuzz its Python API with atheris (fuzz_api.py beside this script).
#
#   targets/python/fuzz/run.sh [--seconds N] [--runs N] [--release]
#
# Runs for --seconds (default 25) or --runs executions (--runs wins) on the corpus in
# target/python-fuzz/corpus (kept between runs). --release builds the extension optimised (more
# executions per second; the default dev build is the one the Python suite tests). Python: the
# exporter venv's ($MODELRT_PYTHON, else target/modelrt-venv/bin/python; atheris is pinned in
# xtask/exporter/requirements.txt, which `cargo xtask compile`/`setup` install). Prints
# `fuzz: python_api executions=N corpus=M exit=RC` (libFuzzer's final statistics); exits non-zero on any
# finding, the input left in target/python-fuzz/artifacts/. See docs/fuzzing.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cd "$root"

seconds=25
runs=""
wheel_args=(--debug --arch x86_64)
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --release) wheel_args=(--arch x86_64); shift ;;
        -h|--help) sed -n '2,12p' "$here/run.sh"; exit 0 ;;
        *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

py="${MODELRT_PYTHON:-$root/target/modelrt-venv/bin/python}"
if ! "$py" -c 'import atheris, numpy' 2>/dev/null; then
    echo "error: $py has no atheris or numpy: install the pinned venv (xtask/exporter/requirements.txt) with \`cargo xtask compile\` or pip install -r it" >&2
    exit 1
fi
cargo="${CARGO:-cargo}"
work="$root/target/python-fuzz"
mkdir -p "$work/corpus" "$work/artifacts" "$work/scratch"

# The wheel, installed into a private directory.
MODELRT_PYTHON="$py" "$cargo" xtask wheel "${wheel_args[@]}"
rm -rf "$work/site"
# Only this architecture's wheel: a release build for another (`cargo xtask wheel --arm64-root`) may sit beside it.
"$py" -m pip install --no-deps --no-index --quiet --target "$work/site" "$root"/target/wheels/modelrt-*_x86_64.whl

# The bundle: on x86_64 the small seed bundle of core/fuzz (tinygrad's E_1024_4 kernel on 4096 floats,
# a copy step and reference data: ~50 us a run, so the fuzzer spends its time at the boundary), else
# the demo bundle (a conv net, ~5 ms a run). Signed by a fresh key; and another key.
arch="$(uname -m)"
if [[ "$arch" == x86_64 ]]; then
    CARGO_TARGET_DIR="$root/core/fuzz/target" "$cargo" build --quiet \
        --manifest-path "$root/core/fuzz/Cargo.toml" --bin fuzz-seeds
    "$root/core/fuzz/target/debug/fuzz-seeds" "$work/seeds" load_run_cpu
    bundle="$work/seeds/cpu_e1024_copy_ref.mrt"
else
    bundle="$root/targets/assets/demo-$arch.mrt"
fi
"$cargo" xtask keygen "$work/keys" --yes >/dev/null
"$cargo" xtask keygen "$work/other-key" --yes >/dev/null
cp "$bundle" "$work/signed.mrt"
"$cargo" xtask sign "$work/signed.mrt" --key "$work/keys/modelrt-signing.key" >/dev/null

limit=(-max_total_time="$seconds")
budget="$seconds s"
if [[ -n "$runs" ]]; then limit=(-runs="$runs"); budget="$runs runs"; fi
log="$work/artifacts/last-run.log"
echo "==> fuzz python_api ($budget)"
set +e
env -u MODELRT_TRUSTED_KEYS \
    PYTHONPATH="$work/site" PYTHONDONTWRITEBYTECODE=1 \
    MRT_FUZZ_BUNDLE="$bundle" MRT_FUZZ_SIGNED="$work/signed.mrt" \
    MRT_FUZZ_KEY="$work/keys/modelrt-signing.pub" MRT_FUZZ_OTHER_KEY="$work/other-key/modelrt-signing.pub" \
    MRT_FUZZ_SCRATCH="$work/scratch" \
    "$py" "$here/fuzz_api.py" "$work/corpus" -artifact_prefix="$work/artifacts/" -max_len=4096 \
    -print_final_stats=1 "${limit[@]}" >"$log" 2>&1
rc=$?
set -e
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | awk '{s+=$1} END {print s+0}')
corpus=$(find "$work/corpus" -type f | wc -l)
echo "fuzz: python_api executions=$execs corpus=$corpus exit=$rc"
if [[ $rc -ne 0 || $execs -eq 0 ]]; then
    tail -n 40 "$log" >&2
    echo "error: the Python API fuzzer failed (exit $rc, $execs executions); inputs in $work/artifacts/" >&2
    exit 1
fi
