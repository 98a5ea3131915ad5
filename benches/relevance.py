#!/usr/bin/env python3
"""Relevance on real history: which guidelines an agent is shown, `in: file` against `in: changes`.

Replays the last N commits of a real repository that touch `.kt` files, oldest first, each as one
Codex session: a scratch clone is checked out at the commit's parent, then every `.kt` file the
commit adds, changes or renames is written to disk as the commit left it and the real hook shim
(`guidebook-hook`) is run with a Codex `PostToolUse` `apply_patch` event whose patch is the
commit's own diff of that file (`*** Update File:` with `@@` hunks of ' ', '-', '+' lines, three
lines of context; `*** Add File:`; `*** Move to:` for a rename). Each edit goes to two real
sidecars (`guidebook serve`, each on its own temporary socket and home), one whose guidebook has
the 15 guidelines below with `match.in: file`, the other the same 15 with `match.in: changes`;
the two hooks of an edit run back to back, in alternating order, so their latencies share the
machine's state. A spawn of `/bin/true` in the same way gives the floor.

Per session the bench records the guidelines each sidecar presented (the `[id]` blocks of the
shim's `additionalContext`), and computes on its own, from the diff, which guidelines concern the
lines the commit wrote (one of the guideline's regex matches in the new file overlaps a `+` line;
Python's `re`, whose meaning equals the regex crate's for these patterns) and which match the
file anywhere. It reports, side by side: guidelines presented per session, how many of them
concern written lines, the share, the recall of the written-line concerns, the whole-file matches
that lie on lines the commit did not change, and the hook latency of both.

A second pass (skipped with --no-check-written) replays the `in: changes` hooks once more through
a relay that keeps each request, and compares the `written` lines the shim sent with the diff's
`+` lines: equal, different, or not sent (the shim could not place the patch for sure, and the
sidecar falls back to `git diff HEAD`, which here is the parent, so the answer is the same). The
first pass's latencies are then split by that outcome; the second pass's are not reported.

Usage:
  benches/relevance.py [--repo PATH] [--commits N] [--rev REV] [--modes file,changes]
                       [--bin DIR] [--out FILE] [--keep] [--no-check-written] [--at-commit]

--repo is any local clone (bare or not) of a repository with history, e.g.
  git clone --bare https://github.com/square/okhttp target/relevance/okhttp.git
  benches/relevance.py --repo target/relevance/okhttp.git
Without --repo it uses target/relevance/okhttp.git, else the mirror this project's machines keep
(/work/.mirror/square+okhttp/repo). The repository itself is never written: the bench works in a
`git clone --shared` under a temporary directory. --rev (default HEAD of the repository) fixes the
newest commit, so that a rerun replays the same range. --modes names one sidecar per entry (`file`,
`changes`, or `default`: no `in:` key, for a build that predates it; `file,file` is an A/A control
of the latency). --at-commit checks out the commit itself instead of its parent, so that the
sidecar's fallback sees nothing written: `in: changes` then shows only what the shim's lines carry. Needs the release binaries
(`cargo build --release --workspace --bins`), git and Python 3 (stdlib only). Writes JSON to
target/bench-results/relevance.json and prints markdown tables.
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The 15 team guidelines: (id, regex, content). Kotlin only; the same set in both sidecars, only
# `match.in` differs. Patterns stay within the syntax Python's `re` and the regex crate read alike.
GUIDELINES = [
    ("no-not-null-assertion", r"!!", "Avoid `!!`: handle null with `?.`, `?:`, `requireNotNull(x) { \"why\" }` or a smart cast."),
    ("no-thread-sleep", r"Thread\.sleep\(", "Use delay() in coroutines or wait for the condition, not Thread.sleep()."),
    ("suppress-needs-reason", r"@Suppress\(", "A `@Suppress` needs a comment saying why the warning is wrong here; prefer fixing the cause."),
    ("avoid-lateinit", r"\blateinit\s+var\b", "Prefer constructor injection or `by lazy` to `lateinit var`; an uninitialized access throws at run time."),
    ("no-generic-catch", r"catch\s*\(\s*\w+\s*:\s*(Exception|Throwable)\s*\)", "Catch the exceptions you can handle, not `Exception` or `Throwable`; never swallow `CancellationException`."),
    ("inject-the-clock", r"System\.currentTimeMillis\(\)|System\.nanoTime\(\)", "Read time from an injected clock, not `System.currentTimeMillis()`/`nanoTime()`, so tests can control it."),
    ("no-println", r"\bprintln\(", "Log through the logger, not `println`."),
    ("no-print-stack-trace", r"\.printStackTrace\(\)", "Log the exception with the logger instead of `printStackTrace()`."),
    ("no-global-scope", r"\bGlobalScope\b", "Do not launch in `GlobalScope`: use a scope tied to a lifecycle."),
    ("no-run-blocking", r"\brunBlocking\b", "`runBlocking` blocks the thread: use it only in `main` and tests."),
    ("todo-needs-issue", r"//\s*(TODO|FIXME)\b", "A TODO or FIXME names its issue: `// TODO(#123): ...`."),
    ("inject-dispatchers", r"\bDispatchers\.(IO|Default|Main|Unconfined)\b", "Inject dispatchers instead of naming `Dispatchers.IO`/`Default`/`Main`, so tests can replace them."),
    ("no-synchronized", r"\bsynchronized\s*\(|@Synchronized\b", "Prefer `java.util.concurrent` locks or a `Mutex` to `synchronized`; it pins virtual threads and blocks coroutines."),
    ("no-ignored-tests", r"@(Ignore|Disabled)\b", "An ignored test names its issue and is fixed or deleted, not left disabled."),
    ("no-java-util-date", r"\bjava\.util\.Date\b|\bSimpleDateFormat\b", "Use `java.time` (`Instant`, `DateTimeFormatter`), not `Date`/`SimpleDateFormat`."),
]

MIRROR = Path("/work/.mirror/square+okhttp/repo")
DEFAULT_REPO = ROOT / "target" / "relevance" / "okhttp.git"
ID_RE = re.compile(r"\n\n\[([^\]\n]+)\]\n")
HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def git(repo, *args, check=True):
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "core.quotePath=false", *args],
        check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ).stdout


class Blobs:
    """`git cat-file --batch`: the content of `REV:path`, one process for the whole run."""

    def __init__(self, repo):
        self.proc = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def get(self, rev, path):
        self.proc.stdin.write(f"{rev}:{path}\n".encode())
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            return None
        data = self.proc.stdout.read(int(header[2]))
        self.proc.stdout.read(1)
        return data

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def parse_diff(text):
    """The file edits of a `git diff -M -U3` text: dicts with status (A, M, R), old and new path,
    and hunks (lists of patch lines, ' ', '-' or '+' first) with the new file's `+` line numbers."""
    edits, cur, hunk, new_line = [], None, None, 0
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            cur = {"status": "M", "old": None, "new": None, "hunks": [], "written": []}
            edits.append(cur)
            hunk = None
        elif cur is None:
            continue
        elif hunk is None and line.startswith("new file mode"):
            cur["status"] = "A"
        elif hunk is None and line.startswith("deleted file mode"):
            cur["status"] = "D"
        elif hunk is None and line.startswith("rename from "):
            cur["status"], cur["old"] = "R", line[len("rename from "):]
        elif hunk is None and line.startswith("rename to "):
            cur["new"] = line[len("rename to "):]
        elif hunk is None and line.startswith("--- "):
            if line != "--- /dev/null":
                cur["old"] = line[len("--- a/"):].rstrip("\t")
        elif hunk is None and line.startswith("+++ "):
            if line != "+++ /dev/null":
                cur["new"] = line[len("+++ b/"):].rstrip("\t")
        elif line.startswith("@@"):
            m = HUNK_RE.match(line)
            new_line = int(m.group(3)) if m else 0
            hunk = []
            cur["hunks"].append(hunk)
        elif hunk is not None and line[:1] in (" ", "-", "+"):
            hunk.append(line)
            if line[0] == "+":
                cur["written"].append(new_line)
            if line[0] != "-":
                new_line += 1
        elif hunk is not None and line == "":
            pass  # the text's last newline
    for e in edits:
        if e["old"] is None:
            e["old"] = e["new"]
    return [e for e in edits if e["status"] != "D" and e["new"] and e["new"].endswith(".kt")]


def codex_patch(edit):
    """The `apply_patch` text Codex would have sent for this edit."""
    out = ["*** Begin Patch"]
    if edit["status"] == "A":
        out.append(f"*** Add File: {edit['new']}")
        for hunk in edit["hunks"]:
            out.extend(line for line in hunk if line.startswith("+"))
    else:
        out.append(f"*** Update File: {edit['old']}")
        if edit["status"] == "R":
            out.append(f"*** Move to: {edit['new']}")
        for hunk in edit["hunks"]:
            out.append("@@")
            out.extend(hunk)
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


def line_starts(text):
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def ground_truth(text, written, compiled):
    """Per guideline id: (matches anywhere, matches overlapping a written line, occurrences,
    occurrences on written lines)."""
    import bisect
    starts = line_starts(text)
    written = set(written)
    out = {}
    for gid, rx in compiled:
        total = on_written = 0
        for m in rx.finditer(text):
            first = bisect.bisect_right(starts, m.start())
            last = bisect.bisect_right(starts, max(m.end() - 1, m.start()))
            total += 1
            if any(n in written for n in range(first, last + 1)):
                on_written += 1
        if total:
            out[gid] = (True, on_written > 0, total, on_written)
    return out


def write_guidebook(root, mode):
    for gid, pattern, content in GUIDELINES:
        d = root / gid
        d.mkdir(parents=True)
        quoted = pattern.replace("'", "''")
        in_line = f"  in: {mode}\n" if mode != "default" else ""
        (d / "guideline.yaml").write_text(
            f"id: {gid}\nscope:\n  languages: [kotlin]\nmatch:\n{in_line}  any:\n"
            f"    - regex:\n        pattern: '{quoted}'\ncontent: {json.dumps(content)}\n")


def http_search(sock_path, session, path):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "search",
                       "params": {"sessionId": session, "filepaths": [path]}})
    req = (f"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}").encode()
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(sock_path))
    s.sendall(req)
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    return data


class Sidecar:
    def __init__(self, guidebook, home, root):
        self.socket = home / "sidecar.sock"
        home.mkdir(parents=True)
        env = dict(os.environ, ADAPTIVE_GUIDEBOOK_HOME=str(home), ADAPTIVE_GUIDEBOOK_ROOT=str(root),
                   RUST_LOG="warn")
        for key in ("ADAPTIVE_GUIDEBOOK_SOCKET", "ADAPTIVE_GUIDEBOOK_DB", "ADAPTIVE_GUIDEBOOK_CONFIG",
                    "ADAPTIVE_GUIDEBOOK_FLAGS", "ADAPTIVE_GUIDEBOOK_METRICS_DIR"):
            env.pop(key, None)
        self.proc = subprocess.Popen([str(guidebook), "serve"], env=env, stdin=subprocess.DEVNULL,
                                     stderr=open(home / "serve.log", "wb"))
        deadline = time.time() + 120
        while True:
            try:
                answer = http_search(self.socket, "relevance-ready", "/nonexistent/ready.kt")
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    sys.exit(f"the sidecar in {home} did not start; see {home / 'serve.log'}")
                time.sleep(0.01)
        if not answer.startswith(b"HTTP/1.1 200"):
            sys.exit(f"the sidecar's first search failed: {answer[:300]!r}")

    def peak_rss_mib(self):
        try:
            for line in open(f"/proc/{self.proc.pid}/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def read_http_message(conn, buf):
    """One HTTP/1.1 message from `conn` (Content-Length or chunked framing; else up to EOF):
    (head, body, rest of the buffer), or None at EOF."""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, buf = buf.split(b"\r\n\r\n", 1)
    fields = {l.split(b":", 1)[0].strip().lower(): l.split(b":", 1)[1].strip()
              for l in head.split(b"\r\n")[1:] if b":" in l}
    if b"content-length" in fields:
        n = int(fields[b"content-length"])
        while len(buf) < n:
            chunk = conn.recv(65536)
            if not chunk:
                break
            buf += chunk
        return head, buf[:n], buf[n:]
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        while b"\r\n0\r\n\r\n" not in b"\r\n" + buf:
            chunk = conn.recv(65536)
            if not chunk:
                break
            buf += chunk
        end = (b"\r\n" + buf).index(b"\r\n0\r\n\r\n") + 3
        return head, buf[:end], buf[end:]
    while chunk := conn.recv(65536):
        buf += chunk
    return head, buf, b""


class Recorder:
    """A Unix-socket relay between the shim and a sidecar that keeps each request body
    (--check-written): what the shim sent, to compare with the diff."""

    def __init__(self, listen, upstream):
        import threading
        self.upstream, self.bodies, self.lock = upstream, [], threading.Lock()
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(listen))
        self.server.listen(16)
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        import threading
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.relay, args=(conn,), daemon=True).start()

    def relay(self, conn):
        up = socket.socket(socket.AF_UNIX)
        up.connect(str(self.upstream))
        buf, ubuf = b"", b""
        try:
            while (msg := read_http_message(conn, buf)) is not None:
                head, body, buf = msg
                with self.lock:
                    self.bodies.append(body)
                up.sendall(head + b"\r\n\r\n" + body)
                answer = read_http_message(up, ubuf)
                if answer is None:
                    break
                ahead, abody, ubuf = answer
                conn.sendall(ahead + b"\r\n\r\n" + abody)
                if b"connection: close" in ahead.lower():
                    break
        finally:
            up.close()
            conn.close()

    def take(self):
        with self.lock:
            bodies, self.bodies = self.bodies, []
        return bodies


def written_sent(bodies, path):
    """The line numbers the shim's `search` said were written in `path`, or None if it sent none."""
    for body in bodies:
        try:
            calls = json.loads(body)
        except ValueError:
            continue
        for call in calls if isinstance(calls, list) else [calls]:
            if call.get("method") != "search":
                continue
            ranges = (call.get("params", {}).get("written") or {}).get(path)
            if ranges is not None:
                return {n for first, last in ranges for n in range(first, last + 1)}
    return None


def run_timed(argv, env, stdin, cwd):
    start = time.perf_counter()
    p = subprocess.run(argv, input=stdin, env=env, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    return time.perf_counter() - start, p.stdout, p.stderr


def presented_ids(stdout):
    text = stdout.decode("utf-8", "replace").strip()
    if not text:
        return []
    try:
        ctx = json.loads(text)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        return ["<unparsed output>"]
    return ID_RE.findall(ctx + "\n")


def pct(samples, q):
    s = sorted(samples)
    return s[min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))] if s else None


def origin_of(repo):
    url = git(repo, "config", "--get", "remote.origin.url", check=False).decode().strip()
    if url:
        return url
    name = Path(repo).resolve()
    if name.name == "repo" and "+" in name.parent.name:  # this project's mirror layout
        return "https://github.com/" + name.parent.name.replace("+", "/", 1) + ".git"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo")
    ap.add_argument("--commits", type=int, default=300)
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--modes", default="file,changes")
    ap.add_argument("--bin", default=str(ROOT / "target" / "release"))
    ap.add_argument("--out", default=str(ROOT / "target" / "bench-results" / "relevance.json"))
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--no-check-written", dest="check_written", action="store_false",
                    help="skip pass 2, which replays the `in: changes` hooks through a relay that "
                         "compares the `written` lines the shim sends with the diff's")
    ap.add_argument("--at-commit", action="store_true",
                    help="check out each commit itself, not its parent: the sidecar's git-diff "
                         "fallback then sees nothing written, so `in: changes` presents only what "
                         "the shim's own written lines carry (a check of the shim)")
    args = ap.parse_args()

    repo = Path(args.repo) if args.repo else (DEFAULT_REPO if DEFAULT_REPO.exists() else MIRROR)
    if not repo.exists():
        hint = (f"clone one (git clone --bare https://github.com/square/okhttp {DEFAULT_REPO}) "
                f"or pass --repo PATH")
        if args.repo:
            sys.exit(f"no repository at {repo}: {hint}")
        # run-all.sh calls the bench unconditionally; without a repository it is skipped.
        print(f"relevance: skipped, no repository: {hint}")
        return
    guidebook, shim = Path(args.bin) / "guidebook", Path(args.bin) / "guidebook-hook"
    for b in (guidebook, shim):
        if not b.exists():
            sys.exit(f"{b} is missing: cargo build --release --workspace --bins")
    modes = args.modes.split(",")
    compiled = [(gid, re.compile(p)) for gid, p, _ in GUIDELINES]

    tmp = Path(tempfile.mkdtemp(prefix="relevance-"))
    sidecars = []
    try:
        work = tmp / "work"
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(repo), str(work)],
                       check=True)
        origin = origin_of(repo)
        if origin:
            git(work, "remote", "set-url", "origin", origin)
        newest = git(repo, "rev-parse", "--verify", args.rev + "^{commit}").decode().strip()
        commits = git(work, "rev-list", "--no-merges", f"-n{args.commits}", newest, "--",
                      "*.kt").decode().split()[::-1]
        roots = []
        for i, mode in enumerate(modes):
            root = tmp / f"guidebook-{i}-{mode}"
            write_guidebook(root, mode)
            check = subprocess.run([str(guidebook), "check", str(root)], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
            if check.returncode != 0:
                sys.exit(f"`guidebook check` rejects the `in: {mode}` guidebook:\n"
                         f"{check.stdout.decode()[:2000]}")
            roots.append(root)
        for i, root in enumerate(roots):
            sidecars.append(Sidecar(guidebook, tmp / f"home-{i}", root))
        env_base = dict(os.environ, ADAPTIVE_GUIDEBOOK_NO_AUTOSTART="1")
        for key in ("ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS", "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
                    "ADAPTIVE_GUIDEBOOK_HOME"):
            env_base.pop(key, None)
        envs = [dict(env_base, ADAPTIVE_GUIDEBOOK_SOCKET=str(s.socket)) for s in sidecars]
        blobs = Blobs(work)
        run_id = f"{os.getpid()}-{int(time.time())}"
        replay = Replay(work, blobs, compiled, shim, env_base, modes, args.at_commit, run_id)
        # Pass 1, measured: every sidecar directly.
        sessions = replay.run(commits, envs, "measure")
        # Pass 2 (--check-written): the `in: changes` hooks again, each through a relay that
        # keeps what the shim sent; its latency is not reported.
        written_check = None
        checked = [m for m, mode in enumerate(modes) if mode == "changes"]
        if args.check_written and checked:
            m = checked[0]
            relay = Recorder(tmp / "relay.sock", sidecars[m].socket)
            relay_envs = [dict(env_base, ADAPTIVE_GUIDEBOOK_SOCKET=str(tmp / "relay.sock"))]
            second = Replay(work, blobs, compiled, shim, env_base, ["changes"], args.at_commit,
                            run_id + "-check", recorder=relay)
            checks = second.run(commits, relay_envs, "check")
            written_check = {"sent_equal": 0, "sent_different": 0, "not_sent": 0, "edits": []}
            for s, c in zip(sessions, checks):
                assert s["commit"] == c["commit"] and s["paths"] == c["paths"]
                s["written_outcome"] = [o["outcome"] for o in c["written"]]
                for o in c["written"]:
                    written_check[o["outcome"]] += 1
                    if o["outcome"] != "sent_equal":
                        written_check["edits"].append(o)
        blobs.close()
        rss = [s.peak_rss_mib() for s in sidecars]
    finally:
        for s in sidecars:
            s.stop()
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    report = summarize(repo, origin, commits, newest, modes, sessions, replay.hook_ms,
                       replay.floor, rss, replay.stderr_lines)
    report["checked_out"] = "the commit (--at-commit)" if args.at_commit else "the parent"
    if written_check is not None:
        report["written_check"] = {k: v for k, v in written_check.items() if k != "edits"}
        report["written_check"]["latency_by_outcome"] = latency_by_outcome(sessions, modes)
    report["build"] = build_info(guidebook, shim)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"summary": report, "guidelines": GUIDELINES, "sessions": sessions,
                               "written_not_as_diffed": (written_check or {}).get("edits")},
                              indent=1))
    print_markdown(report)
    b = report["build"]
    print(f"\nMeasured at {b['commit']}"
          + (f" with uncommitted changes older than the binaries in {', '.join(b['changed_sources'])}"
             if b["changed_sources"] else "")
          + f"; binaries built {b['guidebook_built']} / {b['shim_built']}; worktree at "
          f"{report['checked_out']}. (JSON: {out})")


class Replay:
    """One replay of the commits: per session, per edit, the post-image written to disk and one
    hook per sidecar (in alternating order), with the ground truth computed from the diff."""

    def __init__(self, work, blobs, compiled, shim, env_base, modes, at_commit, run_id,
                 recorder=None):
        self.work, self.blobs, self.compiled, self.shim = work, blobs, compiled, shim
        self.env_base, self.modes, self.at_commit, self.run_id = env_base, modes, at_commit, run_id
        self.recorder = recorder
        self.floor, self.hook_ms = [], [[] for _ in modes]
        self.stderr_lines = [0 for _ in modes]

    def run(self, commits, envs, label):
        work, modes = self.work, self.modes
        sessions, hook_index, started = [], 0, time.time()
        for n, sha in enumerate(commits):
            parents = git(work, "rev-list", "--parents", "-n1", sha).decode().split()[1:]
            if not parents:
                continue
            parent = parents[0]
            diff = git(work, "diff", "-M", "-U3", "--no-color", "--no-ext-diff", parent, sha,
                       "--", "*.kt").decode("utf-8", "replace")
            edits = [e for e in parse_diff(diff) if e["hunks"] or e["status"] == "A"]
            if not edits:
                continue
            git(work, "checkout", "-q", "-f", "--detach", sha if self.at_commit else parent)
            session = {"commit": sha, "edits": 0, "written_lines": 0,
                       "truth_file": [], "truth_written": [], "matches": 0,
                       "matches_written": 0, "pairs": 0, "pairs_written": 0,
                       "presented": [[] for _ in modes], "hook_ms": [[] for _ in modes],
                       "paths": [], "written": []}
            created = []
            for e in edits:
                data = self.blobs.get(sha, e["new"])
                if data is None:
                    continue
                dest = work / e["new"]
                dest.parent.mkdir(parents=True, exist_ok=True)
                if e["status"] == "R":
                    (work / e["old"]).unlink(missing_ok=True)
                if e["status"] in ("A", "R"):
                    created.append(dest)
                dest.write_bytes(data)
                session["edits"] += 1
                session["paths"].append(e["new"])
                text = data.decode("utf-8", "replace")
                if e["status"] == "A":
                    written = list(range(1, text.count("\n") + (0 if text.endswith("\n") else 1) + 1))
                else:
                    written = e["written"]
                session["written_lines"] += len(written)
                for gid, (_, on_w, total, total_w) in ground_truth(text, written,
                                                                   self.compiled).items():
                    session["pairs"] += 1
                    session["matches"] += total
                    session["matches_written"] += total_w
                    if gid not in session["truth_file"]:
                        session["truth_file"].append(gid)
                    if on_w:
                        session["pairs_written"] += 1
                        if gid not in session["truth_written"]:
                            session["truth_written"].append(gid)
                event = {
                    "session_id": None, "turn_id": f"turn-{n}", "transcript_path": None,
                    "cwd": str(work), "hook_event_name": "PostToolUse", "model": "gpt-5.1-codex",
                    "permission_mode": "default", "tool_name": "apply_patch",
                    "tool_input": {"command": codex_patch(e)},
                    "tool_response": "Exit code: 0\nWall time: 0 seconds\nOutput:\n"
                                     "Success. Updated the following files:\n"
                                     f"{'A' if e['status'] == 'A' else 'M'} {e['new']}\n",
                    "tool_use_id": f"call_{n}_{hook_index}"}
                order = list(range(len(modes)))
                if hook_index % 2:
                    order.reverse()
                hook_index += 1
                dt, _, _ = run_timed(["/bin/true"], self.env_base, b"", work)
                self.floor.append(dt * 1000)
                for m in order:
                    session_id = f"rel-{self.run_id}-{m}-{sha[:12]}"
                    stdin = json.dumps(dict(event, session_id=session_id)).encode()
                    dt, out, err = run_timed([str(self.shim)], envs[m], stdin, work)
                    self.hook_ms[m].append(dt * 1000)
                    session["hook_ms"][m].append(round(dt * 1000, 3))
                    if err.strip():
                        self.stderr_lines[m] += 1
                        if self.stderr_lines[m] <= 3:
                            print(f"  shim stderr ({modes[m]}): {err.decode()[:300].strip()}",
                                  file=sys.stderr)
                    for gid in presented_ids(out):
                        if gid not in session["presented"][m]:
                            session["presented"][m].append(gid)
                if self.recorder is not None:
                    sent = written_sent(self.recorder.take(), str(dest))
                    outcome = ("not_sent" if sent is None else
                               "sent_equal" if sent == set(written) else "sent_different")
                    session["written"].append(
                        {"commit": sha, "path": e["new"], "status": e["status"],
                         "outcome": outcome, "diff_lines": len(written),
                         "sent_lines": None if sent is None else len(sent),
                         "missing": sorted(set(written) - (sent or set()))[:20],
                         "extra": sorted((sent or set()) - set(written))[:20],
                         "file_ends_with_blank_line": data.endswith(b"\n\n")})
            sessions.append(session)
            for dest in created:
                dest.unlink(missing_ok=True)
            if (n + 1) % 50 == 0:
                print(f"  {label}: {n + 1}/{len(commits)} commits, {hook_index} edits, "
                      f"{time.time() - started:.0f} s", file=sys.stderr)
        if not self.recorder:
            for s in sessions:
                del s["written"]
        return sessions


def latency_by_outcome(sessions, modes):
    """Hook latency per sidecar, split by what the shim sent for the edit (from pass 2)."""
    out = {}
    for outcome in ("sent_equal", "sent_different", "not_sent"):
        rows = [(s["hook_ms"], i) for s in sessions for i, o in enumerate(s["written_outcome"])
                if o == outcome]
        if not rows:
            continue
        per_mode = [[h[m][i] for h, i in rows] for m in range(len(modes))]
        out[outcome] = {
            "edits": len(rows),
            "median_ms": [statistics.median(v) for v in per_mode],
            "mean_ms": [statistics.mean(v) for v in per_mode],
            "paired_diff_median_ms": [statistics.median(b - a for a, b in zip(per_mode[0], v))
                                      for v in per_mode],
        }
    return out


def build_info(guidebook, shim):
    """This tree's commit, its changed source files, and the binaries' times: what was measured."""
    head = git(ROOT, "rev-parse", "--short", "HEAD", check=False).decode().strip()
    dirty = git(ROOT, "status", "--porcelain", "--", "src", "hook-shim", "Cargo.toml", "Cargo.lock",
                check=False).decode().split("\n")
    built = max(guidebook.stat().st_mtime, shim.stat().st_mtime)
    # Only a change older than the binaries can be in them.
    changed = [l[3:] for l in dirty if l.strip() and (ROOT / l[3:]).exists()
               and (ROOT / l[3:]).stat().st_mtime < built]
    stamp = lambda p: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(p.stat().st_mtime))
    return {"commit": head, "changed_sources": changed,
            "guidebook_built": stamp(guidebook), "shim_built": stamp(shim)}


def summarize(repo, origin, commits, newest, modes, sessions, hook_ms, floor, rss, stderr_lines):
    n = len(sessions)
    edits = sum(s["edits"] for s in sessions)
    per_mode = []
    for m, mode in enumerate(modes):
        presented = [len(s["presented"][m]) for s in sessions]
        concern = [len(set(s["presented"][m]) & set(s["truth_written"])) for s in sessions]
        expected = [s["truth_file"] if mode in ("file", "default") else s["truth_written"]
                    for s in sessions]
        agree = sum(1 for s, e in zip(sessions, expected) if set(s["presented"][m]) == set(e))
        shares = [c / p for c, p in zip(concern, presented) if p]
        per_mode.append({
            "mode": mode,
            "presented_per_session_mean": statistics.mean(presented) if n else None,
            "presented_per_session_median": statistics.median(presented) if n else None,
            "concern_written_per_session_mean": statistics.mean(concern) if n else None,
            "share_concern_pooled": sum(concern) / sum(presented) if sum(presented) else None,
            "share_concern_mean_of_sessions": statistics.mean(shares) if shares else None,
            "sessions_with_any": sum(1 for p in presented if p),
            "recall_of_written_concerns": (sum(concern) / sum(len(s["truth_written"]) for s in sessions)
                                           if any(s["truth_written"] for s in sessions) else None),
            "sessions_as_expected": agree,
            "hook_ms_median": statistics.median(hook_ms[m]) if hook_ms[m] else None,
            "hook_ms_mean": statistics.mean(hook_ms[m]) if hook_ms[m] else None,
            "hook_ms_p90": pct(hook_ms[m], 0.90),
            "hook_ms_p99": pct(hook_ms[m], 0.99),
            # The same edit's two hooks ran back to back: their difference cancels the machine's
            # state at that moment (against the first sidecar; 0 for the first itself).
            "paired_diff_ms_median": (statistics.median(b - a for a, b in zip(hook_ms[0], hook_ms[m]))
                                      if hook_ms[m] else None),
            "hooks": len(hook_ms[m]),
            "hooks_with_stderr": stderr_lines[m],
            "sidecar_peak_rss_mib": rss[m],
        })
    pairs = sum(s["pairs"] for s in sessions)
    pairs_w = sum(s["pairs_written"] for s in sessions)
    matches = sum(s["matches"] for s in sessions)
    matches_w = sum(s["matches_written"] for s in sessions)
    by_guideline = {gid: {"truth_file": sum(gid in s["truth_file"] for s in sessions),
                          "truth_written": sum(gid in s["truth_written"] for s in sessions),
                          "presented": [sum(gid in s["presented"][m] for s in sessions)
                                        for m in range(len(modes))]}
                    for gid, _, _ in GUIDELINES}
    return {
        "by_guideline": by_guideline,
        "repository": origin or str(repo),
        "newest": newest,
        "oldest": sessions[0]["commit"] if sessions else None,
        "commits_asked": len(commits),
        "sessions": n,
        "file_edits": edits,
        "written_lines": sum(s["written_lines"] for s in sessions),
        "guidelines": len(GUIDELINES),
        "truth_whole_file_per_session_mean": statistics.mean(len(s["truth_file"]) for s in sessions) if n else None,
        "truth_written_per_session_mean": statistics.mean(len(s["truth_written"]) for s in sessions) if n else None,
        "file_guideline_pairs_matching": pairs,
        "pairs_matching_only_unchanged_lines_share": 1 - pairs_w / pairs if pairs else None,
        "match_occurrences": matches,
        "occurrences_on_unchanged_lines_share": 1 - matches_w / matches if matches else None,
        "floor_ms_median": statistics.median(floor) if floor else None,
        "modes": per_mode,
        "machine": f"{os.uname().sysname} {os.uname().release}, {os.cpu_count()} cores, "
                   f"load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}",
    }


def fmt(v, digits=2, percent=False):
    if v is None:
        return "–"
    if percent:
        return f"{100 * v:.0f} %"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def print_markdown(r):
    print(f"Repository {r['repository']}, {r['sessions']} sessions (the last {r['commits_asked']} "
          f"non-merge commits touching `.kt` up to {r['newest'][:10]}, oldest {(r['oldest'] or '')[:10]}), "
          f"{r['file_edits']} file edits, {r['written_lines']} written lines, "
          f"{r['guidelines']} guidelines. {r['machine']}.\n")
    print(f"Ground truth (from the diffs): per session {fmt(r['truth_whole_file_per_session_mean'])} "
          f"guidelines match the edited files, {fmt(r['truth_written_per_session_mean'])} match a "
          f"written line; of {r['file_guideline_pairs_matching']} (file edit, guideline) matches, "
          f"{fmt(r['pairs_matching_only_unchanged_lines_share'], percent=True)} lie only on lines "
          f"the commit did not change ({fmt(r['occurrences_on_unchanged_lines_share'], percent=True)} "
          f"of {r['match_occurrences']} match occurrences).\n")
    modes = r["modes"]
    print("| per session | " + " | ".join(f"`in: {m['mode']}`" for m in modes) + " |")
    print("| --- |" + " ---: |" * len(modes))
    rows = [
        ("guidelines presented (mean)", lambda m: fmt(m["presented_per_session_mean"])),
        ("guidelines presented (median)", lambda m: fmt(m["presented_per_session_median"], 1)),
        ("of which concern written lines (mean)", lambda m: fmt(m["concern_written_per_session_mean"])),
        ("share concerning written lines (pooled)", lambda m: fmt(m["share_concern_pooled"], percent=True)),
        ("share, mean over sessions with any", lambda m: fmt(m["share_concern_mean_of_sessions"], percent=True)),
        ("sessions shown any guideline", lambda m: str(m["sessions_with_any"])),
        ("written-line concerns presented (recall)", lambda m: fmt(m["recall_of_written_concerns"], percent=True)),
        ("sessions exactly as the ground truth", lambda m: f"{m['sessions_as_expected']} / {r['sessions']}"),
    ]
    for label, f in rows:
        print(f"| {label} | " + " | ".join(f(m) for m in modes) + " |")
    print()
    print("| per hook (spawn → output), ms | " + " | ".join(f"`in: {m['mode']}`" for m in modes) + " |")
    print("| --- |" + " ---: |" * len(modes))
    for label, key in (("median", "hook_ms_median"), ("mean", "hook_ms_mean"),
                       ("p90", "hook_ms_p90"), ("p99", "hook_ms_p99")):
        print(f"| {label} | " + " | ".join(fmt(m[key], 3) for m in modes) + " |")
    print(f"| paired difference against `in: {modes[0]['mode']}`, median | "
          + " | ".join(fmt(m["paired_diff_ms_median"], 3) for m in modes) + " |")
    print(f"| hooks (with stderr) | " + " | ".join(f"{m['hooks']} ({m['hooks_with_stderr']})" for m in modes) + " |")
    print(f"| sidecar peak RSS MiB | " + " | ".join(fmt(m['sidecar_peak_rss_mib'], 1) for m in modes) + " |")
    print(f"\nFloor (spawn `/bin/true` the same way), median {fmt(r['floor_ms_median'], 3)} ms.\n")
    if "written_check" in r:
        w = r["written_check"]
        total = w["sent_equal"] + w["sent_different"] + w["not_sent"]
        print(f"The shim's `written` (pass 2, through a relay) against the diff's `+` lines, of "
              f"{total} edits: equal {w['sent_equal']}, different {w['sent_different']}, not sent "
              f"{w['not_sent']} (the sidecar then diffs against the last commit).\n")
        print("| pass 1 hook latency by what the shim sent | edits | "
              + " | ".join(f"`in: {m['mode']}` median / mean ms" for m in modes)
              + " | paired difference, median ms |")
        print("| --- | ---: |" + " ---: |" * len(modes) + " ---: |")
        for outcome, v in w["latency_by_outcome"].items():
            print(f"| {outcome.replace('_', ' ')} | {v['edits']} | "
                  + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in zip(v["median_ms"], v["mean_ms"]))
                  + f" | {v['paired_diff_median_ms'][-1]:.3f} |")
        print()
    print("| sessions presenting, by guideline | match the files | match written lines | "
          + " | ".join(f"`in: {m['mode']}`" for m in modes) + " |")
    print("| --- | ---: | ---: |" + " ---: |" * len(modes))
    for gid, g in sorted(r["by_guideline"].items(), key=lambda kv: -kv[1]["truth_file"]):
        print(f"| {gid} | {g['truth_file']} | {g['truth_written']} | "
              + " | ".join(str(p) for p in g["presented"]) + " |")


if __name__ == "__main__":
    main()
