#!/usr/bin/env bash
# What the team push costs (docs/guide/team.md):
#  1. the hook end to end (benches/hook_latency.rs) with teamMetrics on and off, interleaved hook
#     by hook in one run: the "baseline build" is this same build started without teamMetrics;
#     the other pushes every second to a real Prometheus and settles its sessions after 1 s, so
#     the push thread works all through the run (wall and CPU time, shim and sidecar); the run
#     must outlast the settling (HOOK_BENCH_RUNS defaults to 1000 here: ~20 s), and the script
#     fails if Prometheus got no series from it;
#  2. benches/team.rs: one push of 2,000 series (CPU, bytes), 1,000 simulated sidecars of 200
#     guidelines into one real Prometheus (its CPU and memory), and `report --team` over them.
# Env: HOOK_BENCH_RUNS (default 1000), TEAM_BENCH_SIDECARS, TEAM_BENCH_GUIDELINES,
# TEAM_BENCH_ROUNDS, TEAM_BENCH_REPORT_RUNS (benches/team.rs); TEAM_BENCH_SKIP_SCALE=1 runs part 1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace --bins
bin="$PWD/target/release"
work=$(mktemp -d)
prom=
trap '[ -n "$prom" ] && kill "$prom" 2>/dev/null; rm -rf "$work"' EXIT

echo "== 1. the hook with teamMetrics on and off"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'global:\n  scrape_interval: 1m\n' >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$port" --web.enable-remote-write-receiver 2>"$work/prometheus.log" &
prom=$!
until curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null; do sleep 0.2; done
cat >"$work/config.yaml" <<YAML
teamMetrics:
  remoteWriteUrl: http://127.0.0.1:$port/api/v1/write
  intervalSeconds: 1
  settleSeconds: 1
  labels: {team: bench}
YAML
mkdir -p "$work/off"
cat >"$work/off/guidebook" <<SH
#!/bin/sh
unset ADAPTIVE_GUIDEBOOK_CONFIG
exec "$bin/guidebook" "\$@"
SH
chmod +x "$work/off/guidebook"
ln -s "$bin/guidebook-hook" "$work/off/guidebook-hook"
ADAPTIVE_GUIDEBOOK_CONFIG="$work/config.yaml" HOOK_BENCH_BASELINE="$work/off" HOOK_BENCH_RUNS="${HOOK_BENCH_RUNS:-1000}" \
  cargo bench --bench hook_latency 2>&1 | sed 's/baseline build/teamMetrics off/g'
series=$(curl -s "http://127.0.0.1:$port/api/v1/query" --data-urlencode 'query=count({__name__=~"guidebook_team_.*"})' |
  python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
echo "series the 'on' sidecar pushed during the run: $series"
[ "$series" != 0 ] || { echo "the push never engaged: the run was shorter than the settling" >&2; exit 1; }
kill "$prom"; prom=

echo "== 2. one push of 2,000 series; 1,000 simulated sidecars into one Prometheus; report --team"
[ "${TEAM_BENCH_SKIP_SCALE:-0}" = 1 ] || cargo bench --bench team
