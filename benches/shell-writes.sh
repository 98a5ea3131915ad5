#!/usr/bin/env bash
# What finding a shell command's writes costs per command (issue 38 item 5), end to end: the
# release `guidebook serve` on a temp socket with the sample guidebook, a generated git
# repository of SHELL_BENCH_FILES Kotlin files (default 10,200) in SHELL_BENCH_DIRS directories
# (default 300, under 30 parents), and the release shim run as Claude Code runs it, once for the
# shell tool's PreToolUse and once for its PostToolUse, around the real command. Interleaved,
# SHELL_BENCH_ROUNDS rounds (default 200) of four commands in rotating order:
#   reader  `grep -n … F.kt`            the shim asks nothing (the floor, and what every shell
#                                       command cost before this work)
#   noop    `sed -i 's/NO_SUCH/x/' F.kt` beginShellCommand + endShellCommand, nothing changed
#   writer  `sed -i 's/…/…/' F.kt`       begin + end + the search of the changed file
#   glob    `sed -i '…' dir/*.kt`         every file of one directory, named by a glob: found
#                                       by the watcher, all searched (lines: git's diff)
# and, on fresh daemons (SHELL_BENCH_ARM_RUNS, default 5), the one-time cost of arming the
# repository's watcher (the first begin), plus the daemon's side alone (the two calls over the
# socket, no process spawned). Prints markdown tables (docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bins
BIN="${CARGO_TARGET_DIR:-target}/release"
exec python3 - "$BIN" <<'PY'
import json, os, random, shutil, socket, statistics, subprocess, sys, tempfile, time

BIN = os.path.abspath(sys.argv[1])
FILES = int(os.environ.get("SHELL_BENCH_FILES", "10200"))
DIRS = int(os.environ.get("SHELL_BENCH_DIRS", "300"))
ROUNDS = int(os.environ.get("SHELL_BENCH_ROUNDS", "200"))
ARM_RUNS = int(os.environ.get("SHELL_BENCH_ARM_RUNS", "5"))
tmp = tempfile.mkdtemp(prefix="shell-writes-bench-")
repo = os.path.join(tmp, "orders")
home = os.path.join(tmp, "home")
sock = os.path.join(home, "sidecar.sock")
os.makedirs(home, mode=0o700)


def git(*args):
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@example.invalid", *args],
                   cwd=repo, check=True, stdout=subprocess.DEVNULL)


# The repository: 30 parents of 10 directories, FILES Kotlin files spread over them.
os.makedirs(repo)
git("init", "-q")
git("remote", "add", "origin", "git@github.com:acme/orders.git")
dirs = [f"src/main/kotlin/m{d // 10}/p{d % 10}" for d in range(DIRS)]
for d in dirs:
    os.makedirs(os.path.join(repo, d))
paths = []
for i in range(FILES):
    rel = f"{dirs[i % DIRS]}/F{i}.kt"
    with open(os.path.join(repo, rel), "w") as f:
        f.write(f"package acme.m{i}\n\nclass F{i} {{\n    val a = {i}\n    fun run() = a + 1\n}}\n")
    paths.append(rel)
git("add", "-A")
git("commit", "-q", "-m", "generated")
n_dirs = sum(1 for _, ds, _ in os.walk(repo) if True) - sum(
    1 for r, _, _ in os.walk(os.path.join(repo, ".git")))


def call(method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnection: close\r\n"
              + f"content-length: {len(body)}\r\n\r\n".encode() + body)
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


def start_daemon():
    env = dict(os.environ, ADAPTIVE_GUIDEBOOK_HOME=home,
               RUST_LOG="info,adaptive_guidebook::rpc::end_shell_command=debug")
    log = open(os.path.join(tmp, "serve.log"), "a")
    proc = subprocess.Popen([os.path.join(BIN, "guidebook"), "serve", "--socket", sock],
                            env=env, stdout=log, stderr=log)
    for _ in range(500):
        try:
            if call("status", {})["result"]["guidebook"]["loadedAt"]:
                return proc
        except (OSError, KeyError, ValueError, IndexError):
            pass
        time.sleep(0.02)
    raise SystemExit("the daemon did not start")


def stop_daemon(proc):
    proc.terminate()
    proc.wait(timeout=10)


SHIM_ENV = {"PATH": os.environ["PATH"], "ADAPTIVE_GUIDEBOOK_SOCKET": sock,
            "ADAPTIVE_GUIDEBOOK_NO_AUTOSTART": "1", "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS": "5000",
            "HOME": home}


def hook(name, session, command):
    event = json.dumps({"session_id": session, "hook_event_name": name, "cwd": repo,
                        "tool_name": "Bash", "tool_use_id": "toolu_1",
                        "tool_input": {"command": command, "description": "bench"}})
    started = time.perf_counter()
    out = subprocess.run([os.path.join(BIN, "guidebook-hook")], input=event.encode(),
                         env=SHIM_ENV, capture_output=True)
    took = (time.perf_counter() - started) * 1000
    assert out.returncode == 0, out
    return took, out.stdout.decode()


def shell(command):
    subprocess.run(["bash", "-c", command], cwd=repo, check=True, stdout=subprocess.DEVNULL)


def one(kind, i, session):
    f = paths[(i * 7919) % FILES]
    if kind == "reader":
        command = f"grep -n 'val a' {f}"
    elif kind == "noop":
        command = f"sed -i 's/NO_SUCH_TEXT/x/' {f}"
    elif kind == "glob":
        # A formatter's way: every file of a directory, named by a glob (so by no word the
        # shim can resolve): the watcher finds them.
        command = f"sed -i 's/fun run() = a + [0-9]*$/fun run() = a + {i}/' {dirs[i % DIRS]}/*.kt"
    else:
        command = f"sed -i 's/val a = \\([0-9]*\\)$/val a = \\1 + {i}/' {f}"
    pre, said = hook("PreToolUse", session, command)
    assert said == "", said
    shell(command)
    post, said = hook("PostToolUse", session, command)
    return pre, post


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


# The one-time cost: the first begin on a fresh daemon arms the watcher.
arming, first_pre, later_pre = [], [], []
for run in range(ARM_RUNS):
    proc = start_daemon()
    started = time.perf_counter()
    begun = call("beginShellCommand", {"sessionId": f"arm{run}", "callId": "c", "dir": repo,
                                       "targets": [], "mentioned": []})["result"]
    arming.append((time.perf_counter() - started) * 1000)
    assert begun["watching"], begun
    call("endShellCommand", {"sessionId": f"arm{run}", "callId": "c", "dir": repo, "targets": []})
    stop_daemon(proc)
    # The same through the shim: the first shell command's PreToolUse on a fresh daemon.
    proc = start_daemon()
    first_pre.append(hook("PreToolUse", f"armshim{run}", f"sed -i 's/NO_SUCH/x/' {paths[0]}")[0])
    later_pre.append(hook("PreToolUse", f"armshim{run}", f"sed -i 's/NO_SUCH/y/' {paths[0]}")[0])
    stop_daemon(proc)
armed_log = [l for l in open(os.path.join(tmp, "serve.log")) if "watching a repository" in l]

proc = start_daemon()
kinds = ["reader", "noop", "writer", "glob"]
times = {k: {"pre": [], "post": []} for k in kinds}
for i in range(5):  # warm-up, not counted
    for k in kinds:
        one(k, i, f"warm{i}")
for i in range(ROUNDS):
    order = kinds[i % len(kinds):] + kinds[:i % len(kinds)]
    for k in order:
        pre, post = one(k, i + 100, f"s{i}")
        times[k]["pre"].append(pre)
        times[k]["post"].append(post)

# The daemon's side alone: the two calls over the socket, no process spawned.
rpc = {"begin": [], "end": []}
for i in range(ROUNDS):
    f = paths[(i * 104729) % FILES]
    started = time.perf_counter()
    call("beginShellCommand", {"sessionId": "rpc", "callId": f"c{i}", "dir": repo,
                               "targets": [os.path.join(repo, f)], "mentioned": []})
    rpc["begin"].append((time.perf_counter() - started) * 1000)
    shell(f"sed -i 's/fun run() = a + [0-9]*$/fun run() = a + {i + 100000}/' {f}")
    started = time.perf_counter()
    call("endShellCommand", {"sessionId": "rpc", "callId": f"c{i}", "dir": repo,
                             "targets": [os.path.join(repo, f)]})
    rpc["end"].append((time.perf_counter() - started) * 1000)
stop_daemon(proc)

# The alternative to a watcher: `git status` before and after each command.
status = []
for i in range(20):
    started = time.perf_counter()
    subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo,
                   check=True, stdout=subprocess.DEVNULL)
    status.append((time.perf_counter() - started) * 1000)

print(f"\nRepository: {FILES} files in {n_dirs} directories (git, committed); "
      f"{ROUNDS} interleaved rounds; release build; {os.cpu_count()} cores.\n")
print("| command | PreToolUse hook (median / p90) | PostToolUse hook (median / p90) | both (median) | over the reader |")
print("| --- | --- | --- | --- | --- |")
floor = statistics.median(a + b for a, b in zip(times["reader"]["pre"], times["reader"]["post"]))
for k, label in [("reader", "reader (`grep`): asks nothing"),
                 ("noop", "`sed -i` that changes nothing: begin + end"),
                 ("writer", "`sed -i` that writes a line: begin + end + search"),
                 ("glob", f"`sed -i … dir/*.kt` writing {FILES // DIRS} unnamed files (watcher)")]:
    pre, post = times[k]["pre"], times[k]["post"]
    both = statistics.median(a + b for a, b in zip(pre, post))
    print(f"| {label} | {statistics.median(pre):.2f} / {pct(pre, .9):.2f} ms | "
          f"{statistics.median(post):.2f} / {pct(post, .9):.2f} ms | {both:.2f} ms | "
          f"{both - floor:+.2f} ms |")
print()
print("| the daemon's side alone (socket round trip, no process) | median | p90 |")
print("| --- | --- | --- |")
for k, label in [("begin", "`beginShellCommand` (one target kept)"),
                 ("end", "`endShellCommand` (barrier, diff, search of one file)")]:
    print(f"| {label} | {statistics.median(rpc[k]):.2f} ms | {pct(rpc[k], .9):.2f} ms |")
print()
print(f"Arming (the first `beginShellCommand` on a fresh daemon, {ARM_RUNS} runs): "
      f"median {statistics.median(arming):.1f} ms, max {max(arming):.1f} ms; through the shim, "
      f"the first PreToolUse {statistics.median(first_pre):.1f} ms against "
      f"{statistics.median(later_pre):.1f} ms for the next.")
print(f"The alternative: one `git status --porcelain --untracked-files=all` in this repository "
      f"takes {statistics.median(status):.1f} ms (median of 20), twice per command.")
# What the ends found (the daemon's debug line per end): files per end, how often.
import collections, re
found = collections.Counter(
    int(m.group(1)) for l in open(os.path.join(tmp, "serve.log"))
    if "shell command ended" in l and (m := re.search(r"files=(\d+)", l)))
print("Files found per endShellCommand (count of ends):", dict(sorted(found.items())))
for line in armed_log[:1]:
    print("daemon log:", line.strip()[-200:])
shutil.rmtree(tmp)
PY
