#!/usr/bin/env bash
# What recording adherence costs, and how fast `guidebook report` is (docs/guide/adherence.md):
#  1. the hook end to end (benches/hook_latency.rs) with adherence recording and without it
#     (ADAPTIVE_GUIDEBOOK_RECORD_ADHERENCE=0), side by side in one run: the "baseline build" is
#     this same build started without the recording, interleaved hook by hook; then again with
#     /metrics served by both sidecars, so that the live per-guideline counters are kept too;
#  2. `guidebook report` (the HTML page, and --json) over ADHERENCE_BENCH_SESSIONS (default
#     100,000) made-up sessions written into a fresh database through the store.
# Env: HOOK_BENCH_RUNS (default 300), ADHERENCE_BENCH_SESSIONS, ADHERENCE_BENCH_REPORT_RUNS (5).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace --bins
bin="$PWD/target/release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== 1. the hook with and without adherence recording"
mkdir -p "$work/without"
cat >"$work/without/guidebook" <<SH
#!/bin/sh
ADAPTIVE_GUIDEBOOK_RECORD_ADHERENCE=0 exec "$bin/guidebook" "\$@"
SH
chmod +x "$work/without/guidebook"
ln -s "$bin/guidebook-hook" "$work/without/guidebook-hook"
HOOK_BENCH_BASELINE="$work/without" cargo bench --bench hook_latency 2>&1 |
  sed 's/baseline build/without adherence recording/g'

echo "== 1b. the same with /metrics served by both sidecars (the live per-guideline counters on)"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
mkdir -p "$work/without-served"
cat >"$work/without-served/guidebook" <<SH
#!/bin/sh
ADAPTIVE_GUIDEBOOK_RECORD_ADHERENCE=0 ADAPTIVE_GUIDEBOOK_METRICS_LISTEN=127.0.0.1:$(port) exec "$bin/guidebook" "\$@"
SH
chmod +x "$work/without-served/guidebook"
ln -s "$bin/guidebook-hook" "$work/without-served/guidebook-hook"
ADAPTIVE_GUIDEBOOK_METRICS_LISTEN="127.0.0.1:$(port)" HOOK_BENCH_BASELINE="$work/without-served" \
  cargo bench --bench hook_latency 2>&1 | sed 's/baseline build/without adherence recording/g'

sessions=${ADHERENCE_BENCH_SESSIONS:-100000}
echo "== 2. guidebook report over $sessions sessions"
ADHERENCE_BENCH_DB="$work/report.db" ADHERENCE_BENCH_SESSIONS="$sessions" \
  cargo test --release --test it -- --ignored --exact adherence::generate_sessions_for_the_report_bench \
  >"$work/generate.log" 2>&1 || { cat "$work/generate.log"; exit 1; }
rows=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from adherence_event').fetchone()[0])" "$work/report.db")
echo "database: $(du -h "$work/report.db" | cut -f1), $rows adherence rows (one per search or refusal)"
runs=${ADHERENCE_BENCH_REPORT_RUNS:-5}
for mode in html json; do
  times=()
  for _ in $(seq "$runs"); do
    start=$(date +%s.%N)
    if [ "$mode" = html ]; then
      "$bin/guidebook" --db "$work/report.db" report --out "$work/report.html" >/dev/null
    else
      "$bin/guidebook" --db "$work/report.db" report --json >"$work/report.json"
    fi
    end=$(date +%s.%N)
    times+=("$(python3 -c "print(f'{$end - $start:.3f}')")")
  done
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  median=$(echo "$sorted" | sed -n "$(((runs + 1) / 2))p")
  echo "guidebook report ($mode) over $sessions sessions: median ${median} s of $runs runs (${times[*]})"
done
echo "page: $(du -h "$work/report.html" | cut -f1)"
