#!/usr/bin/env python3
"""The metrics pipeline on a database filled with history, through the real `guidebook` binary.

`python3 benches/metrics.py demo OUT_DIR`: a temp home whose database gets ten weeks of
synthetic history (a baseline month, eight weekly rollouts with a QC dip in week 5, a haiku A/B
test whose haiku misses more defects); then the real `guidebook metrics baseline`, `metrics
weekly` per week, `ab report` per week and `metrics report`. The picture and the files land in
OUT_DIR (docs/metrics-demo/ holds one such run). The numbers are made up; the pipeline is not.

`python3 benches/metrics.py bench [N]`: N QC results (default 100,000) with assignments and
re-reviews, then `guidebook ab report` and `guidebook metrics weekly` timed (median of 5).

Both insert rows straight into the schema `guidebook` created (its migrations run first) and
use the release binary at target/release/guidebook.
"""

import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDEBOOK = os.path.join(ROOT, "target", "release", "guidebook")
DAY = 86400


def run(home, *args, check=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAPTIVE_GUIDEBOOK_")}
    env.update({"ADAPTIVE_GUIDEBOOK_HOME": home, "RUST_LOG": "error"})
    out = subprocess.run([GUIDEBOOK, *args], env=env, capture_output=True, text=True)
    if check and out.returncode not in (0, 3):
        sys.exit(f"guidebook {' '.join(args)} failed ({out.returncode}): {out.stderr}")
    return out


def fresh_home():
    home = tempfile.mkdtemp(prefix="gb-metrics-")
    # Creates the database and its schema (and an empty baseline we then remove).
    run(home, "metrics", "baseline", "--date", "2000-01-01")
    shutil.rmtree(os.path.join(home, "metrics", "baseline"))
    return home, sqlite3.connect(os.path.join(home, "adaptive-guidebook.db"))


def date(epoch):
    return time.strftime("%Y-%m-%d", time.gmtime(epoch))


def demo(out_dir):
    rnd = random.Random(7)
    home, db = fresh_home()
    today = int(time.time()) // DAY * DAY
    weeks = 8
    start = today - (weeks * 7 + 30) * DAY  # the baseline month begins here
    ab_start = start + 30 * DAY
    task = 0
    for day in range(30 + weeks * 7):
        at0 = start + day * DAY
        week = 0 if day < 30 else (day - 30) // 7 + 1
        # Progressive disclosure rolls out from week 2: fewer full prompts, budgets kept.
        for _ in range(rnd.randint(20, 30)):
            team, level = rnd.choice([("backend", "2"), ("backend", "3"), ("web", "1")])
            phase = "full" if week < 2 else rnd.choice(["summary", "standard", "full"])
            size = {"summary": 0.2, "standard": 0.5, "full": 1.0}[phase]
            tokens = int(rnd.gauss(2200 if team == "backend" else 1800, 60) * size)
            db.execute(
                "INSERT INTO metrics_prompt_build (at, session_id, role, phase, tokens, team, level)"
                " VALUES (?, ?, 'default', ?, ?, ?, ?)",
                (at0 + rnd.randint(0, DAY - 1), f"s{day}-{rnd.randint(0, 9)}", phase, tokens, team, level),
            )
        for s in range(10):
            sid = f"s{day}-{s}"
            for _ in range(rnd.randint(3, 20)):
                db.execute(
                    "INSERT INTO metrics_edit (at, session_id, files) VALUES (?, ?, ?)",
                    (at0 + rnd.randint(0, DAY - 1), sid, rnd.randint(1, 3)),
                )
            db.execute(
                "INSERT INTO metrics_session_tokens (session_id, at, tokens) VALUES (?, ?, ?)",
                (sid, at0 + DAY - 1, int(rnd.lognormvariate(11.6, 0.5))),
            )
        for _ in range(12):
            task += 1
            tid = f"T-{task}"
            at = at0 + rnd.randint(0, DAY - 2)
            group = None
            if at >= ab_start:
                group = "haiku" if rnd.random() < 0.5 else "sonnet"
                db.execute(
                    "INSERT INTO metrics_ab_assignment (task_id, at, grp, model) VALUES (?, ?, ?, ?)",
                    (tid, at, group, group),
                )
            model = group or "sonnet"
            pass_rate = 0.5 if week == 5 else 0.82
            passed = rnd.random() < pass_rate
            issue = None if passed else rnd.choices(
                ["code_defect", "report_format", "task_interpretation", "other"], [5, 2, 2, 1])[0]
            db.execute(
                "INSERT INTO metrics_qc_result (at, task_id, session_id, passed, issue_type, duration_sec, model)"
                " VALUES (?, ?, NULL, ?, ?, ?, ?)",
                (at, tid, passed, issue, max(5.0, rnd.gauss(30 if model == "haiku" else 45, 12)), model),
            )
            if passed and rnd.random() < 0.5:
                miss = 0.14 if model == "haiku" else 0.05
                db.execute(
                    "INSERT INTO metrics_qc_review (task_id, at, defect_found, reviewer) VALUES (?, ?, ?, 'opus')",
                    (tid, at + 1, rnd.random() < miss),
                )
    db.commit()
    run(home, "metrics", "baseline", "--date", date(ab_start - DAY), "--by", "demo")
    alerts = []
    for w in range(1, weeks + 1):
        end = ab_start + (w * 7 - 1) * DAY
        out = run(home, "metrics", "weekly", "--date", date(end), "--by", "demo")
        if out.returncode == 3:
            alerts.append(w)
    # `ab report` counts weeks from the first assignment up to now: ask for each week by number.
    for w in range(1, weeks + 1):
        run(home, "ab", "report", "--week", str(w))
    run(home, "metrics", "report")
    os.makedirs(out_dir, exist_ok=True)
    metrics = os.path.join(home, "metrics")
    for sub in ["baseline", "weekly", "ab_test"]:
        shutil.copytree(os.path.join(metrics, sub), os.path.join(out_dir, sub), dirs_exist_ok=True)
    shutil.copy(os.path.join(metrics, "report.svg"), os.path.join(out_dir, "report.svg"))
    shutil.copy(os.path.join(metrics, "README.md"), os.path.join(out_dir, "README.md"))
    print(run(home, "ab", "report", "--week", str(weeks)).stdout)
    print(f"weeks with an alert (exit 3): {alerts}; files in {out_dir}")
    shutil.rmtree(home)


def bench(n):
    rnd = random.Random(11)
    home, db = fresh_home()
    now = int(time.time())
    rows_a, rows_q, rows_r = [], [], []
    for i in range(n):
        tid = f"T-{i}"
        at = now - rnd.randint(0, 6 * DAY)
        group = "haiku" if rnd.random() < 0.5 else "sonnet"
        passed = rnd.random() < 0.8
        rows_a.append((tid, at, group, group))
        rows_q.append((at, tid, passed, None if passed else "code_defect", rnd.uniform(5, 90), group))
        if passed:
            rows_r.append((tid, at + 1, rnd.random() < (0.12 if group == "haiku" else 0.05)))
    db.executemany("INSERT INTO metrics_ab_assignment (task_id, at, grp, model) VALUES (?, ?, ?, ?)", rows_a)
    db.executemany(
        "INSERT INTO metrics_qc_result (at, task_id, session_id, passed, issue_type, duration_sec, model)"
        " VALUES (?, ?, NULL, ?, ?, ?, ?)", rows_q)
    db.executemany("INSERT INTO metrics_qc_review (task_id, at, defect_found, reviewer) VALUES (?, ?, ?, NULL)", rows_r)
    db.commit()
    run(home, "metrics", "baseline")

    def timed(*args):
        samples = []
        for _ in range(5):
            t = time.perf_counter()
            out = run(home, *args)
            samples.append(time.perf_counter() - t)
        return statistics.median(samples), out

    t_ab, out = timed("ab", "report", "--json")
    report = json.loads(out.stdout)
    t_weekly, _ = timed("metrics", "weekly")
    t_floor, _ = timed("--version")
    print(f"{n} QC results ({len(rows_r)} re-reviewed passes), median of 5 whole commands:")
    print(f"  guidebook ab report --json   {t_ab * 1000:8.1f} ms  (table {report['table']}, p = {report['fisher_exact_p_two_sided']:.3g})")
    print(f"  guidebook metrics weekly     {t_weekly * 1000:8.1f} ms")
    print(f"  guidebook --version (floor)  {t_floor * 1000:8.1f} ms")
    shutil.rmtree(home)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "demo":
        demo(sys.argv[2])
    elif len(sys.argv) >= 2 and sys.argv[1] == "bench":
        bench(int(sys.argv[2]) if len(sys.argv) > 2 else 100_000)
    else:
        sys.exit(__doc__)
