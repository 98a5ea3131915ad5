#!/usr/bin/env bash
# End-to-end hook latency benchmark: builds the release binaries, then runs the
# side-by-side measurement in benches/hook_latency.rs. Env: HOOK_BENCH_RUNS (default 300),
# HOOK_BENCH_COLD_RUNS (default 30), HOOK_BENCH_BASELINE (a directory with another build's
# guidebook and guidebook-hook, measured interleaved with this one).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace --bins
cargo bench --bench hook_latency
