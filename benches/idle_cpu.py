#!/usr/bin/env python3
"""What an idle sidecar costs, before and after the sources were watched rather than polled.

Generates guidebooks of 1,000 and 10,000 guidelines (the shape of benches/common's
`write_guidebook`: `guidelines/gNNNNN/guideline.yaml`, one to three regexes each), then for each
size starts `guidebook serve` of each binary in turn (interleaved: BEFORE, AFTER, AFTER, BEFORE,
...) on a temporary home and socket, waits for the first load (`guidebook ready` in its log)
and a settle time, and reads the process's CPU time (utime + stime, /proc/PID/stat) over an
idle window in which nobody calls it. Prints the share of one core each used. Linux only.

    benches/idle_cpu.py [--before BIN] [--after BIN] [--sizes 1000,10000] [--secs 60]
                        [--settle 5] [--rounds 1]

BEFORE defaults to /work/target-base/release/guidebook (the worktree at /work/wt-base, built
with `CARGO_TARGET_DIR=/work/target-base cargo build --release -p adaptive-guidebook`: the
400 ms poll), AFTER to target/release/guidebook of this tree (`cargo build --release`).
Not a test: a measurement, whose figures go to docs/benchmarks.md.
"""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORDS = ["order", "billing", "ledger", "catalog", "session", "invoice", "payment", "search"]


def write_guidebook(root: Path, count: int, seed: int = 7) -> None:
    """`count` guidelines under root/guidelines/gNNNNN/guideline.yaml, 1-3 regexes each."""
    rng = random.Random(seed)
    for i in range(count):
        d = root / "guidelines" / f"g{i:05}"
        d.mkdir(parents=True, exist_ok=True)
        langs = rng.choice(["[kotlin]", "[kotlin]", "[java]", "[yaml]", None, None])
        lines = [f"id: g{i:05}"]
        if langs:
            lines += ["scope:", f"  languages: {langs}"]
        lines += ["match:", "  any:"]
        for _ in range(1 + rng.randrange(3)):
            word = rng.choice(WORDS).capitalize()
            lines += ["    - regex:", f"        pattern: 'legacy{word}Call{i}\\('"]
        lines.append(
            f"content: |\n  Guideline {i}: keep the {WORDS[i % len(WORDS)]} module's calls "
            "behind its port and document why."
        )
        (d / "guideline.yaml").write_text("\n".join(lines) + "\n")


def ticks(pid: int) -> int:
    """utime + stime of `pid`, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        # The command name (field 2) may hold spaces: split after its closing parenthesis.
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def measure(binary: Path, root: Path, secs: float, settle: float) -> tuple[float, str]:
    """Starts `binary serve` on `root`, waits for its first load and `settle` seconds, and
    returns the share of one core (in %) it used over `secs` idle seconds, and its log path."""
    home = Path(tempfile.mkdtemp(prefix="idle-cpu-"))
    log = home / "serve.log"
    env = dict(os.environ)
    for var in [v for v in env if v.startswith("ADAPTIVE_GUIDEBOOK_")]:
        del env[var]
    env.update(
        {
            "ADAPTIVE_GUIDEBOOK_HOME": str(home / "home"),
            "ADAPTIVE_GUIDEBOOK_ROOT": str(root),
            "RUST_LOG": "info",
        }
    )
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(binary), "serve"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 300
        while b"guidebook ready" not in log.read_bytes():
            if proc.poll() is not None:
                sys.exit(f"idle_cpu: {binary} exited; log: {log}")
            if time.monotonic() > deadline:
                sys.exit(f"idle_cpu: no `guidebook ready` within 300 s; log: {log}")
            time.sleep(0.1)
        time.sleep(settle)
        hz = os.sysconf("SC_CLK_TCK")
        t0, w0 = ticks(proc.pid), time.monotonic()
        time.sleep(secs)
        t1, w1 = ticks(proc.pid), time.monotonic()
        return (t1 - t0) / hz / (w1 - w0) * 100, str(log)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", type=Path, default=Path("/work/target-base/release/guidebook"))
    p.add_argument("--after", type=Path, default=HERE.parent / "target/release/guidebook")
    p.add_argument("--sizes", default="1000,10000")
    p.add_argument("--secs", type=float, default=60)
    p.add_argument("--settle", type=float, default=5)
    p.add_argument("--rounds", type=int, default=1)
    a = p.parse_args()
    for b in (a.before, a.after):
        if not os.access(b, os.X_OK):
            sys.exit(f"idle_cpu: no binary at {b}")
    work = Path(tempfile.mkdtemp(prefix="idle-cpu-guidebooks-"))
    results: dict[tuple[int, str], list[float]] = {}
    try:
        for size in [int(s) for s in a.sizes.split(",")]:
            root = work / f"g{size}"
            write_guidebook(root, size)
            for r in range(a.rounds):
                order = [("before", a.before), ("after", a.after)]
                if r % 2:
                    order.reverse()
                for name, binary in order:
                    share, log = measure(binary, root, a.secs, a.settle)
                    results.setdefault((size, name), []).append(share)
                    print(
                        f"{size:>6} guidelines, {name:<6}: {share:6.3f} % of a core "
                        f"over {a.secs:.0f} s idle (log: {log})",
                        flush=True,
                    )
        print("\nguidelines  before (% core)  after (% core)")
        for size in sorted({s for s, _ in results}):
            mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
            print(
                f"{size:>10}  {mean(results[(size, 'before')]):>14.3f}"
                f"  {mean(results[(size, 'after')]):>14.3f}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
