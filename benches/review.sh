#!/usr/bin/env bash
# `guidebook review` over a 1,000-file diff, wall time: builds the release binary, makes a real
# git repository (REVIEW_BENCH_FILES Kotlin files, default 1000, of ~300 lines; a branch that
# edits 10 lines in two hunks of every file; the base moving on after the branch point), then
# times REVIEW_BENCH_RUNS runs (default 10) of each mode (--base, --staged, the working tree)
# with the sample guidebook (12 guidelines) and with 1,000 generated guidelines (50 of them
# block, half `in: changes`), beside `git diff` alone for the same range. Prints a markdown
# table (median and min, ms) for docs/benchmarks.md. Writes only a temp directory (kept, and
# named, with REVIEW_BENCH_KEEP=1).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin guidebook >/dev/null
exec python3 - "$PWD/target/release/guidebook" "$PWD/guidebook" <<'PY'
import json, os, shutil, statistics, subprocess, sys, tempfile, time

exe, sample = sys.argv[1], sys.argv[2]
files = int(os.environ.get("REVIEW_BENCH_FILES", "1000"))
runs = int(os.environ.get("REVIEW_BENCH_RUNS", "10"))
tmp = tempfile.mkdtemp(prefix="review-bench-")
env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null",
           HOME=tmp, ADAPTIVE_GUIDEBOOK_HOME=os.path.join(tmp, "home"),
           GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
           GIT_COMMITTER_EMAIL="b@b")
for k in [k for k in env if k.startswith("ADAPTIVE_GUIDEBOOK_") and k != "ADAPTIVE_GUIDEBOOK_HOME"]:
    del env[k]

def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)

repo = os.path.join(tmp, "orders")
os.makedirs(repo)
git("init", "-q", "-b", "main", cwd=repo)
git("remote", "add", "origin", "git@github.com:acme/backend-orders.git", cwd=repo)

def body(i, edited):
    lines = [f"package acme.orders.p{i % 50}", "", f"class Service{i}(private val repo: Repo) {{"]
    for j in range(290):
        lines.append(f"    fun op{j}(x: Int): Int = repo.load(x + {j}) * {i}")
    if edited:
        # Two hunks of five lines: one with a Thread.sleep (block, in: changes), one a TODO.
        lines[40:40] = [f"    fun slow{k}() {{ Thread.sleep({k}) }}" for k in range(5)]
        lines[200:205] = [f"    // TODO: ticket {k}" for k in range(5)]
    lines.append("}")
    return "\n".join(lines) + "\n"

def write_all(edited):
    for i in range(files):
        d = os.path.join(repo, "src/main/kotlin", f"p{i % 50}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"Service{i}.kt"), "w") as f:
            f.write(body(i, edited))

write_all(False)
git("add", "-A", cwd=repo)
git("commit", "-qm", "base", cwd=repo)
git("checkout", "-qb", "feature", cwd=repo)
write_all(True)
git("add", "-A", cwd=repo)
git("commit", "-qm", "feature", cwd=repo)
git("checkout", "-q", "main", cwd=repo)
with open(os.path.join(repo, "README.md"), "w") as f:
    f.write("main moves on\n")
git("add", "-A", cwd=repo)
git("commit", "-qm", "main moves on", cwd=repo)
git("checkout", "-q", "feature", cwd=repo)
git("tag", "pr-head", cwd=repo)
# The staged and working-tree modes see the same edits: the feature commit undone, kept in
# the index and the working tree.
git("reset", "-q", "--soft", "HEAD~1", cwd=repo)

generated = os.path.join(tmp, "generated")
for n in range(1000):
    d = os.path.join(generated, f"g{n:04}")
    os.makedirs(d)
    block = n < 50
    pattern = r"Thread\.sleep\(" if n == 0 else f"forbiddenCall{n}\\("
    with open(os.path.join(d, "guideline.yaml"), "w") as f:
        f.write(f"id: generated-{n:04}\nseverity: {'block' if block else 'info'}\n"
                f"scope:\n  languages: [kotlin]\nmatch:\n  in: {'changes' if n % 2 == 0 else 'file'}\n"
                f"  any:\n    - regex:\n        pattern: '{pattern}'\ncontent: Generated {n}.\n")

def timed(cmd, expect):
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        p = subprocess.run(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        out.append((time.perf_counter() - start) * 1000)
        if p.returncode not in expect:
            sys.exit(f"{cmd}: exit {p.returncode}: {p.stderr.decode()}")
    return statistics.median(out), min(out)

modes = [("--base main (pull request)", ["--base", "main", "--head", "pr-head"]),
         ("--staged", ["--staged"]),
         ("working tree", [])]
print(f"{files} changed files of ~{len(body(0, True)) // 1024} KB, {runs} runs each, "
      f"{os.cpu_count()} cores\n")
print("| mode | guidebook | findings (block) | median ms | min ms |")
print("| --- | --- | ---: | ---: | ---: |")
for label, args in modes:
    for name, root in [("sample (12)", sample), ("1,000 generated", generated)]:
        cmd = [exe, "--guidebook-root", root, "review", *args]
        report = json.loads(subprocess.run(cmd + ["--format", "json"], cwd=repo, env=env,
                                           capture_output=True).stdout)
        if report["files"] != files:
            sys.exit(f"{cmd}: reviewed {report['files']} files, not {files}")
        found = report["findings"]
        blocks = sum(f["severity"] == "block" for f in found)
        med, low = timed(cmd, (0, 1))
        print(f"| {label} | {name} | {len(found):,} ({blocks:,}) | {med:.0f} | {low:.0f} |")
for label, args in [("git diff -U0 main...pr-head", ["diff", "-U0", "--full-index", "main...pr-head"]),
                    ("git diff -U0 --cached", ["diff", "-U0", "--full-index", "--cached"])]:
    med, low = timed(["git", *args], (0,))
    print(f"| {label} (git alone) | — | — | {med:.0f} | {low:.0f} |")
if os.environ.get("REVIEW_BENCH_KEEP"):
    print(f"\nkept: {tmp}")
else:
    shutil.rmtree(tmp)
PY
