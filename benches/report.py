#!/usr/bin/env python3
"""Turns target/bench-results/*.json (written by the benches) into the markdown tables of
docs/benchmarks.md (printed to stdout) and the plot docs/bench-latency-vs-guidelines.png.

Usage: python3 benches/report.py   (after benches/run-all.sh; matplotlib for the plot)
"""

import json
import pathlib
import platform
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "target" / "bench-results"
PLOT = ROOT / "docs" / "bench-latency-vs-guidelines.png"


def load(name):
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def fmt(v, digits=2):
    return "–" if v is None else f"{v:.{digits}f}"


def mib(kib):
    return "–" if kib is None else f"{kib / 1024:.1f}"


def machine():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    load_avg = open("/proc/loadavg").read().split()[:3] if pathlib.Path("/proc/loadavg").exists() else []
    return f"{platform.system()} {platform.release()}, {cpu}, {cores} cores; load average at report time {' '.join(load_avg)}"


def main():
    print(f"Machine: {machine()}\n")
    hook = load("hook_latency")
    if hook:
        w = hook["workload"]
        print(f"### End-to-end hook latency ({w['guidelines']} guidelines, {w['files']} files × {w['fileBytes'] // 1000} KB)\n")
        print("| series | median ms | p99 ms |\n| --- | ---: | ---: |")
        for key, name in [
            ("floor", "floor: spawn `/bin/true`"),
            ("rpc", "warm sidecar: `search` round trip from a running process"),
            ("hook", "hook: spawn `guidebook-hook` → printed output (warm sidecar)"),
            ("hookWithoutTokenBudget", "hook without a token budget"),
            ("cold", "no sidecar: cold one-shot `guidebook search`"),
        ]:
            print(f"| {name} | {fmt(hook[key]['medianMs'], 3)} | {fmt(hook[key]['p99Ms'], 3)} |")
        h, f, c = hook["hook"]["medianMs"], hook["floor"]["medianMs"], hook["cold"]["medianMs"]
        print(f"\nRatios of medians: hook / floor **{h / f:.2}×** (hook − floor = {h - f:.3} ms); "
              f"cold one-shot / hook **{c / h:.0f}×**. Sidecar peak RSS {mib(hook.get('sidecarPeakRssKiB'))} MiB.\n")

    scaling = load("scaling")
    if scaling:
        print(f"### How cost grows (one fresh sidecar per row; {scaling['runs']} warm samples, {scaling['coldRuns']} cold)\n")
        print("| guidelines | search median ms | search p99 ms | hook median ms | cold one-shot median ms | startup ms | ready ms | restart ready ms | peak RSS MiB |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for row in scaling["byGuidelines"]:
            p = row["point"]
            print(f"| {row['guidelines']:,} | {fmt(p['rpcMedianMs'], 3)} | {fmt(p['rpcP99Ms'], 3)} | {fmt(p['hookMedianMs'], 3)} | "
                  f"{fmt(p['coldMedianMs'], 1)} | {fmt(p['startupMs'], 0)} | {fmt(p.get('readyMs'), 0)} | "
                  f"{fmt(p.get('restartReadyMs'), 0)} | {mib(p['peakRssKiB'])} |")
        print("\n| one file of (1,000 guidelines) | search median ms | search p99 ms | MB/s | peak RSS MiB |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        for row in scaling["byFileSize"]:
            p = row["point"]
            print(f"| {row['fileBytes'] / 1000:,.0f} KB | {fmt(p['rpcMedianMs'], 3)} | {fmt(p['rpcP99Ms'], 3)} | {fmt(p['rpcMBPerS'], 0)} | {mib(p['peakRssKiB'])} |")
        print("\n| files per search (20 KB each, 1,000 guidelines) | search median ms | search p99 ms | MB/s | peak RSS MiB |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        for row in scaling["byFileCount"]:
            p = row["point"]
            print(f"| {row['files']} | {fmt(p['rpcMedianMs'], 3)} | {fmt(p['rpcP99Ms'], 3)} | {fmt(p['rpcMBPerS'], 0)} | {mib(p['peakRssKiB'])} |")
        print()
        plot(scaling)

    loadr = load("load")
    if loadr:
        print(f"### Load ({loadr['clients']} clients at full rate for {loadr['seconds']:.1f} s)\n")
        print("| requests/s | ok | errors | p50 ms | p99 ms | max ms | peak RSS MiB |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        print(f"| {loadr['requestsPerSecond']:.0f} | {loadr['ok']} | {loadr['errors']} | {fmt(loadr['p50Ms'])} | {fmt(loadr['p99Ms'])} | {fmt(loadr['maxMs'])} | {mib(loadr['peakRssKiB'])} |\n")

    scan = load("scan")
    if scan:
        print(f"### Scan throughput against ripgrep ({scan['patterns']} patterns, median of {scan['runs']} runs)\n")
        print("| corpus | files | MB | RegexSet scan MB/s | `rg -j1` MB/s | `rg` (all cores) MB/s | set / rg -j1 | files matched: set / rg |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for row in scan["corpora"]:
            r = row["result"]
            limit = r.get("rgTimedOutAfterSecs")
            if limit:
                bound = r["bytes"] / 1e6 / limit
                rg1 = rgn = f"< {bound:.2f} (stopped after {limit:.0f} s)"
                ratio = f"> {r['setMBPerS'] / bound:.0f}×"
                matched = f"{r['filesMatchedBySet']} / –"
            else:
                rg1, rgn = f"{r['rgOneThreadMBPerS']:.1f}", f"{r['rgMBPerS']:.1f}"
                ratio = f"{r['setMBPerS'] / r['rgOneThreadMBPerS']:.1f}×"
                matched = f"{r['filesMatchedBySet']} / {r['filesMatchedByRg']}"
            print(f"| {row['corpus']} | {r['files']} | {r['bytes'] / 1e6:.1f} | {r['setMBPerS']:.0f} | {rg1} | {rgn} | {ratio} | {matched} |")
        print()


def plot(scaling):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no plot; pip install matplotlib)", file=sys.stderr)
        return
    rows = scaling["byGuidelines"]
    xs = [r["guidelines"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    series = [
        ("rpcMedianMs", "warm sidecar: search round trip (median)", "o-"),
        ("rpcP99Ms", "warm sidecar: search round trip (p99)", "o--"),
        ("hookMedianMs", "hook end to end, warm sidecar (median)", "s-"),
        ("coldMedianMs", "no sidecar: cold one-shot search (median)", "^-"),
    ]
    for key, label, style in series:
        ys = [r["point"][key] for r in rows]
        if all(y is not None for y in ys):
            ax.plot(xs, ys, style, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{x:,}" for x in xs])
    ax.set_xlabel("guidelines in the guidebook (10 Kotlin files × 20 KB per search)")
    ax.set_ylabel("latency, ms (log scale)")
    ax.set_title("Search latency against guideline count")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    PLOT.parent.mkdir(exist_ok=True)
    fig.savefig(PLOT)
    print(f"(plot written to {PLOT.relative_to(ROOT)})", file=sys.stderr)


if __name__ == "__main__":
    main()
