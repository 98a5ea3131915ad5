//! The test harness: boots the real `guidebook serve` on a temp socket with a temp HOME, talks
//! JSON-RPC to it over a blocking HTTP/1.1 client, runs the real `guidebook-hook` and `guidebook`
//! binaries, and makes real git repositories. Reads: fixtures under `tests/fixtures/`. Writes:
//! temp directories only.
//!
//! This file: the binaries under test, fixtures, and running a process within the watchdog.
//! The rest, one concern a file: [`shim`] (building and running `guidebook-hook`, checking its
//! output against the hosts' schemas), [`sidecar`] (a real `guidebook serve` and talking to
//! it), [`http`] (a minimal client on the socket), [`guidebooks`], [`git`], [`events`] and
//! [`block`] (what the tests serve, edit and send), [`agent_runs`] (the real agents' mock
//! model APIs and launches). Every test module takes it all with `use crate::harness::*`.

mod agent_runs;
mod block;
mod events;
mod git;
mod guidebooks;
mod http;
mod prometheus;
mod rules;
mod shim;
mod sidecar;

pub use agent_runs::*;
pub use block::*;
pub use events::*;
pub use git::*;
pub use guidebooks::*;
pub use http::*;
pub use prometheus::*;
pub use rules::*;
pub use shim::*;
pub use sidecar::*;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

/// Anything that takes longer than this has hung. Generous, because the 2-core test machine
/// runs several sidecars at once; no test asserts speed.
pub const WATCHDOG: Duration = Duration::from_secs(20);

/// The hook budget for runs that expect an answer: long enough that a busy machine never
/// turns a slow answer into a silent one.
pub const PATIENT_HOOK_TIMEOUT_MS: &str = "15000";

/// Environment variables of the test process that would otherwise leak into the binaries and
/// point them at the developer's own sidecar.
const INHERITED_SETTINGS: [&str; 16] = [
    "ADAPTIVE_GUIDEBOOK_NO_AUTOSTART",
    "ADAPTIVE_GUIDEBOOK_BIN",
    // Where `guidebook hooks install` and `doctor` find the agents' settings.
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "GEMINI_CLI_HOME",
    "ADAPTIVE_GUIDEBOOK_HOME",
    "ADAPTIVE_GUIDEBOOK_SOCKET",
    "ADAPTIVE_GUIDEBOOK_DB",
    "ADAPTIVE_GUIDEBOOK_ROOT",
    "ADAPTIVE_GUIDEBOOK_FLAGS",
    "ADAPTIVE_GUIDEBOOK_CONFIG",
    "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
    "ADAPTIVE_GUIDEBOOK_METRICS_DIR",
    "ADAPTIVE_GUIDEBOOK_METRICS_LISTEN",
    "ADAPTIVE_GUIDEBOOK_METRICS_ALLOW_REMOTE",
    "ADAPTIVE_GUIDEBOOK_RECORD_METRICS",
];

/// Set to `1` by `scripts/test` (the README's test command, and CI's) unless `--offline`: the
/// tests that install real agents and tools from npm and PyPI (the `*_real` modules) run.
pub const REAL_TESTS_VARIABLE: &str = "ADAPTIVE_GUIDEBOOK_REAL_TESTS";

/// Whether the real agents' and tools' tests run ([`REAL_TESTS_VARIABLE`]). A plain `cargo
/// test` skips them (fast and offline) and says so in one line, once: written to the process's
/// stderr directly, past the test harness's capture.
pub fn real_tests() -> bool {
    static SAID: std::sync::Once = std::sync::Once::new();
    if std::env::var(REAL_TESTS_VARIABLE).as_deref() == Ok("1") {
        return true;
    }
    SAID.call_once(|| {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "note: the real agents' and tools' tests (tests/it/*_real.rs) are skipped: they install from npm and PyPI; run scripts/test (or set {REAL_TESTS_VARIABLE}=1)"
        );
    });
    false
}

pub fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fixture's path: hook events and checker outputs belong to the shim's crate
/// (`hook-shim/tests/fixtures/`), everything else is under `tests/fixtures/`.
pub fn fixture_path(rel: &str) -> PathBuf {
    if rel.starts_with("hooks/") || rel.starts_with("checks/") {
        manifest_dir().join("hook-shim/tests/fixtures").join(rel)
    } else {
        manifest_dir().join("tests/fixtures").join(rel)
    }
}

/// A JSON fixture (see [`fixture_path`]).
pub fn fixture(rel: &str) -> Value {
    let path = fixture_path(rel);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// The `guidebook` binary under test.
pub fn guidebook_exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_guidebook"))
}

/// A `guidebook` command with none of the test process's own settings variables; the caller
/// gives it everything it needs.
pub fn isolated_guidebook() -> Command {
    let mut cmd = Command::new(guidebook_exe());
    for var in INHERITED_SETTINGS {
        cmd.env_remove(var);
    }
    cmd
}

/// Waits for `child` to exit, killing it and failing the test if it outlives `limit`.
pub fn wait_bounded(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waiting for a child") {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs a command to completion with stdin fed from `stdin`, bounded by [`WATCHDOG`].
pub fn run_bounded(mut cmd: Command, stdin: &[u8], what: &str) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {what}: {e}"));
    let pid = child.id() as libc::pid_t;
    let mut input = child.stdin.take().expect("piped stdin");
    let stdin = stdin.to_vec();
    // Written from a thread: a child that never reads stdin must not block the test.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(WATCHDOG) {
        Ok(out) => out.unwrap_or_else(|e| panic!("waiting for {what}: {e}")),
        Err(_) => {
            // SAFETY: `pid` is our child, which has not been reaped (the waiter is blocked).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what} hung: no exit within {WATCHDOG:?}");
        }
    };
    let _ = writer.join();
    output
}
