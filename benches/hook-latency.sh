#!/usr/bin/env bash
# End-to-end hook latency benchmark: builds the release binaries, then runs the
# side-by-side measurement in benches/hook_latency.rs. Env: HOOK_BENCH_RUNS (default 300),
# HOOK_BENCH_COLD_RUNS (default 30), HOOK_BENCH_BASELINE (a directory with another build's
# guidebook and guidebook-hook, measured interleaved with this one), HOOK_BENCH_PAUSE_MS (a
# pause before each search round trip). On Linux with glibc it
# also builds the shim linked statically (README's install line) and measures it alongside.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace --bins
if [ "$(uname -s)" = Linux ] && ldd --version 2>&1 | grep -qi 'glibc\|gnu libc'; then
    RUSTFLAGS="-C target-feature=+crt-static" \
        cargo build --release --locked -p guidebook-hook --target-dir target/static-shim
    export HOOK_BENCH_STATIC_SHIM="$PWD/target/static-shim/release/guidebook-hook"
fi
cargo bench --bench hook_latency
