//! A client of the daemon's own user cannot starve it: idle connections are capped and timed
//! out, batches and their paths are capped, the descriptor limit is raised at start, and what
//! the daemon creates is private to its user. (`explain`'s deadline is tested in
//! `rpc::explain`, where the time a call arrived is a parameter.)

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::*;

/// The daemon's cap on open connections (`server::MAX_CONNECTIONS`), which a descriptor limit
/// of 1,024 or more allows in full.
const CAP: usize = 256;

/// Raises this test process's soft descriptor limit to its hard limit, so that it can hold
/// more connections than the daemon's cap; returns the limit.
fn raise_own_descriptor_limit() -> u64 {
    // SAFETY: getrlimit and setrlimit read and write only the struct they are given.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max.min(65_536);
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur
    }
}

/// One request on a connection that stays open: the answer is read by its `Content-Length`,
/// not to end of file.
fn keep_alive_call(stream: &mut UnixStream, method: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}).to_string();
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    stream.set_read_timeout(Some(WATCHDOG)).unwrap();
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream
            .read(&mut chunk)
            .expect("an answer within the watchdog");
        assert!(n > 0, "closed before answering");
        raw.extend_from_slice(&chunk[..n]);
        let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&raw[..split]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .expect("a Content-Length")
            .trim()
            .parse()
            .unwrap();
        if raw.len() >= split + 4 + length {
            return serde_json::from_slice(&raw[split + 4..split + 4 + length]).unwrap();
        }
    }
}

/// Whether the daemon has closed `stream` (end of file, or a reset), without waiting.
fn closed_by_server(stream: &UnixStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let closed = match (&*stream).read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    stream.set_nonblocking(false).unwrap();
    closed
}

/// Polls until `done` holds, failing after the watchdog.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < WATCHDOG,
            "{what}: not within {WATCHDOG:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A config file for the sidecar, in a directory of its own; the sidecar gets its path.
fn with_config(yaml: &str) -> (tempfile::TempDir, SidecarOptions) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, yaml).unwrap();
    let options = SidecarOptions {
        env: vec![(
            "ADAPTIVE_GUIDEBOOK_CONFIG".into(),
            path.display().to_string(),
        )],
        ..SidecarOptions::default()
    };
    (dir, options)
}

#[test]
fn hundreds_of_idle_connections_do_not_keep_a_new_call_out() {
    let held_count = CAP + 64;
    assert!(
        raise_own_descriptor_limit() > held_count as u64 + 64,
        "this test needs more descriptors than the daemon's cap"
    );
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    // Every other one has made a call and stays open (a kept-alive client); the rest never
    // sent anything.
    let mut held = Vec::with_capacity(held_count);
    for i in 0..held_count {
        let mut stream = UnixStream::connect(&sidecar.socket).unwrap();
        if i % 2 == 0 {
            let answer = keep_alive_call(&mut stream, "status");
            assert!(answer.get("result").is_some(), "{answer}");
        }
        held.push(stream);
    }
    // A normal call gets in, and is answered, while all of them are held.
    let status = sidecar.result("status", json!({}));
    assert!(status["version"].is_string(), "{status}");
    let file = write_file(sidecar.dir.path(), "a.py", "x: int = 1  # TODO: later\n");
    let shown = sidecar.search_ids("s", &[&file]);
    assert!(!shown.is_empty(), "the search matched");
    // The daemon closed enough of the held ones to stay within its cap, the oldest first.
    let closed = || held.iter().filter(|s| closed_by_server(s)).count();
    eventually("the connections past the cap are closed", || {
        closed() > held_count - CAP
    });
    assert!(
        closed_by_server(&held[0]),
        "the connection idle the longest went first"
    );
    let newest = held.last_mut().unwrap();
    assert!(!closed_by_server(newest), "the newest is still open");
    let answer = keep_alive_call(newest, "status");
    assert!(answer.get("result").is_some(), "{answer}");
}

#[test]
fn an_idle_connection_is_closed_after_the_idle_timeout() {
    let (_config, options) = with_config("idleTimeoutMs: 200\n");
    let sidecar = Sidecar::start_with(options);
    let mut kept = UnixStream::connect(&sidecar.socket).unwrap();
    let silent = UnixStream::connect(&sidecar.socket).unwrap();
    let answer = keep_alive_call(&mut kept, "status");
    assert!(answer.get("result").is_some(), "{answer}");
    eventually("an idle kept-alive connection is closed", || {
        closed_by_server(&kept)
    });
    eventually("a connection that never sent a request is closed", || {
        closed_by_server(&silent)
    });
    // A connection in use is not idle: several calls in a row on one connection are answered.
    let mut busy = UnixStream::connect(&sidecar.socket).unwrap();
    for _ in 0..3 {
        let answer = keep_alive_call(&mut busy, "status");
        assert!(answer.get("result").is_some(), "{answer}");
    }
}

/// A request whose body stops arriving half-way counts as in flight while it is read, so the
/// body gets the idle timeout to arrive, not forever.
#[test]
fn a_request_body_that_stops_arriving_is_not_waited_on_forever() {
    let (_config, options) = with_config("idleTimeoutMs: 200\n");
    let sidecar = Sidecar::start_with(options);
    let mut stalled = UnixStream::connect(&sidecar.socket).unwrap();
    write!(
        stalled,
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"jsonrpc\":"
    )
    .unwrap();
    let (status, _) = read_response(&mut stalled);
    assert_eq!(status, 408);
    sidecar.result("status", json!({}));
}

/// Waits for the daemon to end a connection that sent a head and no body, past the body's
/// deadline: either it answered HTTP 408, or it closed the connection (pushed out to make room)
/// without an answer. Fails if the connection is still open after the watchdog.
fn ended_without_its_body(stream: &mut UnixStream) {
    let (raw, _) = read_to_end_bounded(
        stream,
        &format!("a request without its body held its connection past {WATCHDOG:?}"),
    );
    let text = String::from_utf8_lossy(&raw);
    let rest = text
        .strip_prefix("HTTP/1.1 100 Continue\r\n\r\n")
        .unwrap_or(&text);
    assert!(
        rest.is_empty() || rest.starts_with("HTTP/1.1 408 "),
        "neither closed nor 408: {text:?}"
    );
}

/// A client that sends request heads declaring a body and never sends the body, on as many
/// connections as the cap and more, does not keep a new call out: a connection whose request
/// waits for its body is pushed out to make room, and the body has a short deadline of its own.
#[test]
fn connections_waiting_for_a_body_do_not_keep_a_new_call_out() {
    let held_count = CAP + 44;
    assert!(
        raise_own_descriptor_limit() > held_count as u64 + 64,
        "this test needs more descriptors than the daemon's cap"
    );
    // An idle timeout far longer than the watchdog: that timeout does not let the calls below
    // in, and the body's deadline is the short one.
    let (_config, options) = with_config("idleTimeoutMs: 600000\n");
    let sidecar = Sidecar::start_with(options);
    let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
                Content-Length: 100000\r\n";
    let mut held = Vec::with_capacity(held_count);
    // The cap's worth, each waiting until the daemon reads its body: `Expect: 100-continue`
    // has the daemon say so when it starts to (the wait for one would end at its deadline).
    for _ in 0..CAP {
        let mut stream = UnixStream::connect(&sidecar.socket).unwrap();
        write!(stream, "{head}Expect: 100-continue\r\n\r\n").unwrap();
        stream.set_read_timeout(Some(WATCHDOG)).unwrap();
        let mut continued = [0u8; 25];
        stream
            .read_exact(&mut continued)
            .expect("the daemon reads the body, within the watchdog");
        assert_eq!(&continued, b"HTTP/1.1 100 Continue\r\n\r\n");
        held.push(stream);
    }
    // And more, as a client that does not wait.
    for _ in CAP..held_count {
        let mut stream = UnixStream::connect(&sidecar.socket).unwrap();
        write!(stream, "{head}\r\n").unwrap();
        held.push(stream);
    }
    // A normal call gets in and is answered while they are held: the harness's and the CLI's.
    let status = sidecar.result("status", json!({}));
    assert!(status["version"].is_string(), "{status}");
    let out = sidecar.cli(&["status"]);
    assert!(
        out.status.success(),
        "guidebook status: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // None of them is held open for the idle timeout.
    for stream in &mut held {
        ended_without_its_body(stream);
    }
    sidecar.result("status", json!({}));
}

/// `guidebook mcp` keeps its connections open between an agent's calls; when the sidecar has
/// closed one for being idle, the next call goes out on a new one, unnoticed by the agent.
#[test]
fn guidebook_mcp_reconnects_after_the_sidecar_closed_its_idle_connection() {
    let (_config, options) = with_config("idleTimeoutMs: 100\n");
    let sidecar = Sidecar::start_with(options);
    let file = write_file(sidecar.dir.path(), "a.py", "x = 1  # TODO: later\n");
    let mut cmd = sidecar.guidebook(&["mcp"]);
    cmd.env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1").env(
        "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
        PATIENT_HOOK_TIMEOUT_MS,
    );
    let mut mcp = crate::mcp::McpClient::start(cmd, "2025-06-18");
    let arguments = json!({"filepaths": [file.display().to_string()]});
    for _ in 0..3 {
        let result = mcp.call_tool("explain_guidelines", arguments.clone());
        assert_eq!(result["isError"], false, "{result}");
        // Several idle timeouts: the connection the last call left open is closed meanwhile.
        std::thread::sleep(Duration::from_millis(400));
    }
}

fn batch(calls: usize, paths_each: usize) -> Vec<u8> {
    let paths: Vec<String> = (0..paths_each)
        .map(|i| format!("/nowhere/{i}.py"))
        .collect();
    let calls: Vec<Value> = (0..calls)
        .map(|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "explain",
                "params": {"filepaths": paths}})
        })
        .collect();
    serde_json::to_vec(&calls).unwrap()
}

#[test]
fn a_batch_over_its_caps_is_refused_whole_with_an_error_naming_the_cap() {
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let answer = |body: Vec<u8>| -> Value {
        let (status, body) = sidecar.raw(&body);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap()
    };
    // At the caps: every call answered.
    let within = answer(batch(64, 1));
    assert_eq!(within.as_array().map(Vec::len), Some(64), "{within}");
    let within = answer(batch(2, 500));
    assert_eq!(within.as_array().map(Vec::len), Some(2));
    assert!(within[0].get("result").is_some(), "{}", within[0]);
    // One call more, or one path more: one error for the whole request, nothing run.
    for (body, mentions) in [
        (batch(65, 0), "at most 64 calls per batch"),
        (batch(2, 501), "at most 1000 per request"),
        (batch(40, 30), "1200 file paths"),
    ] {
        let refused = answer(body);
        let (code, message) = rpc_error(&refused);
        assert_eq!(code, -32030, "{refused}");
        assert!(refused["id"].is_null(), "{refused}");
        assert!(message.contains(mentions), "{message}");
    }
    // The daemon goes on serving.
    sidecar.result("status", json!({}));
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn what_the_daemon_creates_is_its_users_alone() {
    let (_dir, root) = test_guidebook_dir();
    let mut sidecar = Sidecar::start(&root);
    let file = write_file(sidecar.dir.path(), "a.py", "x = 1  # TODO: later\n");
    assert_eq!(sidecar.search_ids("s", &[&file]), ["todo-needs-ticket"]);
    sidecar.result("setFlag", json!({"flag": "hooks_enabled", "enabled": true}));
    let wal = sidecar.db.with_extension("db-wal");
    let shm = sidecar.db.with_extension("db-shm");
    let flags = sidecar.home.join("feature_flags.json");
    for path in [&sidecar.db, &wal, &shm, &flags] {
        assert_eq!(mode(path), 0o600, "{}", path.display());
    }
    // The parse cache is written by the first check for changes, or on exit.
    let status = sidecar.stop();
    assert!(status.success());
    let cache = sidecar.home.join("guidebook-cache.json");
    assert_eq!(mode(&cache), 0o600, "{}", cache.display());
}

/// The daemon raises its soft descriptor limit to the hard one, and says so.
#[cfg(target_os = "linux")]
#[test]
fn the_descriptor_limit_is_raised_to_its_hard_limit() {
    use std::os::unix::process::CommandExt;
    // A sidecar stopped at once: its home, settings and socket path, for a daemon started here
    // with a low soft limit.
    let mut sidecar = Sidecar::start_default();
    assert!(sidecar.stop().success());
    let mut serve = sidecar.guidebook(&["serve"]);
    serve
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null());
    let stderr_path = sidecar.dir.path().join("low-limit.stderr");
    serve.stderr(std::fs::File::create(&stderr_path).unwrap());
    // SAFETY: only setrlimit runs between fork and exec, which is async-signal-safe.
    unsafe {
        serve.pre_exec(|| {
            let mut limit: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            limit.rlim_cur = 256.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            Ok(())
        });
    }
    struct Reaped(std::process::Child);
    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let daemon = Reaped(serve.spawn().unwrap());
    eventually("the daemon listens", || {
        UnixStream::connect(&sidecar.socket).is_ok()
    });
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", daemon.0.id())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a descriptor limit line");
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(numbers.len(), 2, "{line}");
    assert_eq!(numbers[0], numbers[1], "soft = hard: {line}");
    let hard_is_low = numbers[1] == "256";
    let log = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(
        hard_is_low || log.contains("raised the descriptor limit"),
        "{log}"
    );
}
