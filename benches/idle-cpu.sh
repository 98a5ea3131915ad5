#!/usr/bin/env bash
# What an idle sidecar costs: starts `guidebook serve` on a guidebook, waits for it to settle
# (first load, first checks for changes), then reads the process's CPU time (user + system,
# /proc/PID/stat) over a window in which nobody calls it. Linux only.
#
#   benches/idle-cpu.sh ROOT [SECS] [BIN]
#
# ROOT: a guidebook root, e.g. one the scaling bench left behind with SCALING_KEEP=1
# (BENCH_CORPUS=near-miss). SECS: the idle window (default 10). BIN: the `guidebook` binary
# (default target/release/guidebook). Prints the share of one core the daemon used; with
# RUST_LOG=adaptive_guidebook::server::start=debug its log (beside the temporary home, path
# printed) also shows what each check for changes took.
set -euo pipefail
root=${1:?usage: benches/idle-cpu.sh ROOT [SECS] [BIN]}
secs=${2:-10}
bin=${3:-"$(dirname "$0")/../target/release/guidebook"}
[ -d "$root" ] || { echo "idle-cpu: $root is not a directory" >&2; exit 2; }
[ -x "$bin" ] || { echo "idle-cpu: no binary at $bin (cargo build --release first)" >&2; exit 2; }
home=$(mktemp -d)
# The daemon's `guidebook ready` line (info) tells when the first load is over.
RUST_LOG=${RUST_LOG:-info} ADAPTIVE_GUIDEBOOK_HOME="$home" ADAPTIVE_GUIDEBOOK_ROOT="$root" \
    "$bin" serve >"$home/serve.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 1200); do
    grep -q "guidebook ready" "$home/serve.log" && break
    kill -0 "$pid" 2>/dev/null || { echo "idle-cpu: the sidecar exited; log: $home/serve.log" >&2; exit 1; }
    sleep 0.1
done
grep -q "guidebook ready" "$home/serve.log" ||
    { echo "idle-cpu: no guidebook loaded within 120 s (RUST_LOG must show info from server::start); log: $home/serve.log" >&2; exit 1; }
# Settled: a few reload intervals past the first load (its first check writes the parse cache).
sleep 5
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks)
sleep "$secs"
t1=$(ticks)
awk -v t="$((t1 - t0))" -v hz="$hz" -v s="$secs" -v r="$root" -v logf="$home/serve.log" \
    'BEGIN { printf "idle %s s on %s: %.2f s of CPU = %.1f %% of one core (log: %s)\n", s, r, t / hz, t / hz / s * 100, logf }'
