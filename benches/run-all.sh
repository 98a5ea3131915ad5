#!/usr/bin/env bash
# The whole benchmark suite, side by side in one run on this machine: builds the release
# binaries, runs the end-to-end hook latency, the check before an edit, the scaling sweeps, the load run and the ripgrep
# comparison, writes JSON to target/bench-results/, draws docs/bench-latency-vs-guidelines.png
# and prints the markdown tables that docs/benchmarks.md shows. Last, the relevance bench
# (benches/relevance.py, about a minute) replays a real repository's history when one is at hand:
# RELEVANCE_REPO=PATH, else target/relevance/okhttp.git (skipped, with a message, without one).
#
# Env: HOOK_BENCH_RUNS, HOOK_BENCH_COLD_RUNS (hook_latency); CHECK_BENCH_RUNS
# (check_edit_latency); SCALING_RUNS, SCALING_COLD_RUNS
# (scaling); LOAD_CLIENTS, LOAD_SECS (load); SCAN_RUNS, SCAN_REPO (scan). Needs `rg` for the
# scan comparison and Python 3 with matplotlib for the plot (pip install matplotlib).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace --bins
for bench in hook_latency check_edit_latency scaling load scan; do
  echo "== $bench"
  cargo bench --bench "$bench"
done
echo "== relevance"
python3 benches/relevance.py ${RELEVANCE_REPO:+--repo "$RELEVANCE_REPO"}
echo "== report"
python3 benches/report.py
