//! Runs the real `guidebook-hook` binary against a fake sidecar on a temp Unix socket.
//!
//! Reads: fixtures under `hook-shim/tests/fixtures/hooks/`. Writes: temp sockets and
//! directories.

use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const APPLY_PATCH_ADD: &str = include_str!("fixtures/hooks/post_tool_use_apply_patch_add.json");
const SESSION_START_COMPACT: &str =
    include_str!("fixtures/hooks/claude_session_start_compact.json");
const CLAUDE_READ: &str = include_str!("fixtures/hooks/claude_post_tool_use_read.json");

const CODEX_SESSION: &str = "019a3c2e-5b7d-7f21-9c4e-2f1d8a6b0c11";
const FOO_KT: &str = "/home/dev/proj/src/main/kotlin/com/acme/Foo.kt";
/// Generous, because the test machine may be busy; the timeout tests set their own.
const TIMEOUT_MS: &str = "5000";
/// A run that takes this long has hung.
const HANG_LIMIT: Duration = Duration::from_secs(10);

const SEARCH_RESULT: &str = r#"{"jsonrpc":"2.0","id":1,"result":[{"id":"kotlin-naming","content":"Use PascalCase for classes.\n"},{"id":"no-println","content":"Log with `logger`, not \"println\".  \n\n"}]}"#;
const EXPECTED_OUTPUT: &str = r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"Adaptive Guidebook guidelines relevant to the latest changes:\n\n[kotlin-naming]\nUse PascalCase for classes.\n\n[no-println]\nLog with `logger`, not \"println\"."}}"#;

/// A directory under the system temp dir, removed on drop. Kept short because a socket path
/// may not exceed about 100 bytes.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("gbh-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How the fake sidecar answers.
enum Reply {
    /// Writes these bytes, then closes.
    Raw(String),
    /// Reads the request and never answers, until the client goes away.
    Silent,
}

/// A one-connection fake sidecar. `join` returns the raw HTTP request it received.
struct FakeSidecar {
    socket: PathBuf,
    handle: JoinHandle<String>,
}

impl FakeSidecar {
    fn start(dir: &Path, reply: Reply) -> FakeSidecar {
        let socket = dir.join("sidecar.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let handle = thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let request = read_request(&mut stream);
            match reply {
                Reply::Raw(bytes) => {
                    let _ = stream.write_all(bytes.as_bytes());
                }
                Reply::Silent => {
                    // Returns once the shim has given up and closed its end.
                    let _ = stream.read_to_end(&mut Vec::new());
                }
            }
            request
        });
        FakeSidecar { socket, handle }
    }

    fn join(self) -> String {
        self.handle.join().unwrap()
    }
}

/// Reads one HTTP request: headers, then a body of `Content-Length` bytes.
fn read_request(stream: &mut UnixStream) -> String {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&buffer).into_owned();
        if let Some(head_end) = text.find("\r\n\r\n") {
            let length: usize = text[..head_end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().unwrap())
                })
                .expect("request has a Content-Length");
            if buffer.len() >= head_end + 4 + length {
                return text;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&buffer).into_owned(),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

fn http_200(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// The JSON body of a raw HTTP request.
fn request_json(request: &str) -> Value {
    let (_, body) = request.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap()
}

struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

/// Runs the shim with only the given environment (plus a `HOME` with no sidecar in it), feeds
/// it `stdin`, and fails the test if it runs for [`HANG_LIMIT`]. Autostart is off unless `env`
/// turns it on: these tests talk to fake sidecars, and a real `guidebook` sits next to the shim.
fn run_shim(args: &[&str], env: &[(&str, &str)], stdin: &[u8]) -> Run {
    let home = TempDir::new();
    let mut command = Command::new(env!("CARGO_BIN_EXE_guidebook-hook"));
    command
        .args(args)
        .env_clear()
        .env("HOME", &home.0)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    let mut child_stdin = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    // A shim that stops reading early closes the pipe; that error is expected and ignored.
    let writer = thread::spawn(move || {
        let _ = child_stdin.write_all(&stdin);
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_reader = thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err_reader = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > HANG_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("guidebook-hook still running after {HANG_LIMIT:?}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    let elapsed = started.elapsed();
    writer.join().unwrap();
    Run {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
        elapsed,
    }
}

fn run_with_socket(socket: &Path, stdin: &str) -> Run {
    run_shim(
        &["--socket", socket.to_str().unwrap()],
        &[("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", TIMEOUT_MS)],
        stdin.as_bytes(),
    )
}

/// Checks `line` against the keys that Codex's `post-tool-use.command.output` schema allows
/// (`additionalProperties: false` at both levels); the workspace's integration tests run the
/// full schema.
fn assert_valid_post_tool_use_output(line: &str) {
    let output: Value = serde_json::from_str(line).unwrap();
    let top = output.as_object().expect("output is an object");
    let allowed_top = [
        "continue",
        "decision",
        "hookSpecificOutput",
        "reason",
        "stopReason",
        "suppressOutput",
        "systemMessage",
    ];
    for key in top.keys() {
        assert!(allowed_top.contains(&key.as_str()), "unknown key {key}");
    }
    let specific = top["hookSpecificOutput"].as_object().unwrap();
    let allowed_specific = [
        "additionalContext",
        "hookEventName",
        "updatedMCPToolOutput",
        "updatedToolOutput",
    ];
    for key in specific.keys() {
        assert!(
            allowed_specific.contains(&key.as_str()),
            "unknown key {key}"
        );
    }
    assert_eq!(specific["hookEventName"], "PostToolUse");
    assert!(specific["additionalContext"].is_string());
}

fn assert_silent_success(run: &Run) {
    assert!(run.status.success(), "exit status {:?}", run.status);
    assert_eq!(run.stdout, "", "stderr: {}", run.stderr);
}

#[test]
fn search_result_is_printed_and_request_is_well_formed() {
    let dir = TempDir::new();
    let sidecar = FakeSidecar::start(&dir.0, Reply::Raw(http_200(SEARCH_RESULT)));
    let run = run_with_socket(&sidecar.socket, APPLY_PATCH_ADD);
    assert!(run.status.success());
    assert_eq!(
        run.stdout,
        format!("{EXPECTED_OUTPUT}\n"),
        "stderr: {}",
        run.stderr
    );
    assert_valid_post_tool_use_output(run.stdout.trim_end());

    let request = sidecar.join();
    assert!(request.starts_with("POST / HTTP/1.1\r\n"), "{request}");
    let body = request_json(&request);
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["method"], "search");
    assert!(body["id"].is_u64());
    let params = &body["params"];
    assert_eq!(params["sessionId"], CODEX_SESSION);
    assert_eq!(params["filepaths"], json!([FOO_KT]));
    // The default token budget for the injected text.
    assert_eq!(params["maxTokens"], 2000, "{params}");
    let deadline_ms = params["deadlineMs"].as_u64().expect("deadlineMs is sent");
    assert!(deadline_ms <= 5000, "deadlineMs {deadline_ms}");
}

#[test]
fn chunked_response_is_decoded() {
    let body = SEARCH_RESULT;
    let (first, second) = body.split_at(40);
    let response = format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n{:x}\r\n{second}\r\n0\r\n\r\n",
        first.len(),
        second.len()
    );
    let dir = TempDir::new();
    let sidecar = FakeSidecar::start(&dir.0, Reply::Raw(response));
    let run = run_with_socket(&sidecar.socket, APPLY_PATCH_ADD);
    assert_eq!(
        run.stdout,
        format!("{EXPECTED_OUTPUT}\n"),
        "stderr: {}",
        run.stderr
    );
    sidecar.join();
}

#[test]
fn silent_sidecar_times_out_quietly() {
    let dir = TempDir::new();
    let sidecar = FakeSidecar::start(&dir.0, Reply::Silent);
    let run = run_shim(
        &[&format!("--socket={}", sidecar.socket.display())],
        &[("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", "300")],
        APPLY_PATCH_ADD.as_bytes(),
    );
    assert_silent_success(&run);
    assert!(run.elapsed < HANG_LIMIT);
    let request = sidecar.join();
    let deadline_ms = request_json(&request)["params"]["deadlineMs"]
        .as_u64()
        .unwrap();
    assert!(deadline_ms < 300, "deadlineMs {deadline_ms}");
}

#[test]
fn missing_socket_prints_nothing() {
    let dir = TempDir::new();
    let run = run_with_socket(&dir.0.join("nobody-listens.sock"), APPLY_PATCH_ADD);
    assert_silent_success(&run);
    assert!(run.stderr.starts_with("guidebook-hook: "), "{}", run.stderr);
}

#[test]
fn default_socket_under_home_missing_prints_nothing() {
    let run = run_shim(&[], &[], APPLY_PATCH_ADD.as_bytes());
    assert_silent_success(&run);
}

#[test]
fn garbage_stdin_prints_nothing() {
    let dir = TempDir::new();
    let run = run_with_socket(&dir.0.join("unused.sock"), "this is not {json");
    assert_silent_success(&run);
    assert!(run.stderr.starts_with("guidebook-hook: "), "{}", run.stderr);
    let run = run_with_socket(&dir.0.join("unused.sock"), "");
    assert_silent_success(&run);
}

#[test]
fn oversized_stdin_prints_nothing() {
    let huge = vec![b' '; (16 << 20) + 10];
    let run = run_shim(
        &[],
        &[("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", TIMEOUT_MS)],
        &huge,
    );
    assert_silent_success(&run);
    assert!(run.stderr.contains("larger than"), "{}", run.stderr);
}

#[test]
fn json_rpc_error_prints_nothing() {
    let dir = TempDir::new();
    let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"deadline exceeded"}}"#;
    let sidecar = FakeSidecar::start(&dir.0, Reply::Raw(http_200(error)));
    let run = run_with_socket(&sidecar.socket, APPLY_PATCH_ADD);
    assert_silent_success(&run);
    assert!(run.stderr.contains("deadline exceeded"), "{}", run.stderr);
    sidecar.join();
}

#[test]
fn http_error_status_prints_nothing() {
    let dir = TempDir::new();
    let response = "HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\n\r\n".to_owned();
    let sidecar = FakeSidecar::start(&dir.0, Reply::Raw(response));
    let run = run_with_socket(&sidecar.socket, APPLY_PATCH_ADD);
    assert_silent_success(&run);
    assert!(run.stderr.contains("413"), "{}", run.stderr);
    sidecar.join();
}

#[test]
fn empty_search_result_prints_nothing() {
    let dir = TempDir::new();
    let reply = http_200(r#"{"jsonrpc":"2.0","id":1,"result":[]}"#);
    let sidecar = FakeSidecar::start(&dir.0, Reply::Raw(reply));
    let run = run_with_socket(&sidecar.socket, APPLY_PATCH_ADD);
    assert_silent_success(&run);
    assert_eq!(run.stderr, "");
    sidecar.join();
}

#[test]
fn session_start_after_compact_resets_the_session() {
    let dir = TempDir::new();
    let reply = http_200(r#"{"jsonrpc":"2.0","id":1,"result":{"cleared":3}}"#);
    let sidecar = FakeSidecar::start(&dir.0, Reply::Raw(reply));
    let run = run_with_socket(&sidecar.socket, SESSION_START_COMPACT);
    assert_silent_success(&run);
    let body = request_json(&sidecar.join());
    assert_eq!(body["method"], "resetSession");
    assert_eq!(
        body["params"],
        json!({"sessionId": "5f0c7e2a-9b1d-4c3e-8a7f-1e2d3c4b5a69"})
    );
}

#[test]
fn irrelevant_events_do_not_contact_the_sidecar() {
    let dir = TempDir::new();
    let socket = dir.0.join("sidecar.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let run = run_with_socket(&socket, CLAUDE_READ);
    assert_silent_success(&run);
    listener.set_nonblocking(true).unwrap();
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == io::ErrorKind::WouldBlock),
        "the shim connected for a Read event"
    );
}

#[test]
fn socket_precedence_flag_then_env_then_home_dir() {
    let answer = || Reply::Raw(http_200(SEARCH_RESULT));
    let dir = TempDir::new();
    let elsewhere = dir.0.join("elsewhere.sock");

    // The flag beats the environment.
    let sidecar = FakeSidecar::start(&dir.0, answer());
    let run = run_shim(
        &["--socket", sidecar.socket.to_str().unwrap()],
        &[
            ("ADAPTIVE_GUIDEBOOK_SOCKET", elsewhere.to_str().unwrap()),
            ("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", TIMEOUT_MS),
        ],
        APPLY_PATCH_ADD.as_bytes(),
    );
    assert_eq!(
        run.stdout,
        format!("{EXPECTED_OUTPUT}\n"),
        "stderr: {}",
        run.stderr
    );
    sidecar.join();

    // ADAPTIVE_GUIDEBOOK_SOCKET beats ADAPTIVE_GUIDEBOOK_HOME.
    let env_dir = TempDir::new();
    let sidecar = FakeSidecar::start(&env_dir.0, answer());
    let run = run_shim(
        &[],
        &[
            (
                "ADAPTIVE_GUIDEBOOK_SOCKET",
                sidecar.socket.to_str().unwrap(),
            ),
            ("ADAPTIVE_GUIDEBOOK_HOME", dir.0.to_str().unwrap()),
            ("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", TIMEOUT_MS),
        ],
        APPLY_PATCH_ADD.as_bytes(),
    );
    assert_eq!(
        run.stdout,
        format!("{EXPECTED_OUTPUT}\n"),
        "stderr: {}",
        run.stderr
    );
    sidecar.join();

    // Without either, $ADAPTIVE_GUIDEBOOK_HOME/sidecar.sock; an unparseable budget falls back
    // to the default with a warning.
    let home_dir = TempDir::new();
    let sidecar = FakeSidecar::start(&home_dir.0, answer());
    let run = run_shim(
        &["--unknown-flag"],
        &[
            ("ADAPTIVE_GUIDEBOOK_HOME", home_dir.0.to_str().unwrap()),
            ("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", "soon"),
        ],
        APPLY_PATCH_ADD.as_bytes(),
    );
    assert_eq!(
        run.stdout,
        format!("{EXPECTED_OUTPUT}\n"),
        "stderr: {}",
        run.stderr
    );
    assert!(run.stderr.contains("--unknown-flag"), "{}", run.stderr);
    assert!(
        run.stderr.contains("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS"),
        "{}",
        run.stderr
    );
    assert_eq!(
        request_json(&sidecar.join())["params"]["sessionId"],
        CODEX_SESSION
    );
}

#[test]
fn help_and_version_exit_zero() {
    let help = run_shim(&["--help"], &[], b"");
    assert!(help.status.success());
    assert!(help.stdout.contains("--socket"));
    let version = run_shim(&["--version"], &[], b"");
    assert!(version.status.success());
    assert!(version.stdout.starts_with("guidebook-hook "));
}

/// A stand-in for `guidebook` that records its arguments and exits without listening.
fn fake_daemon(dir: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let args = dir.join("daemon-args");
    let script = dir.join("fake-guidebook");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\n", args.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, args)
}

#[test]
fn missing_socket_starts_the_daemon_detached_unless_autostart_is_off() {
    let dir = TempDir::new();
    let (daemon, args) = fake_daemon(&dir.0);
    let socket = dir.0.join("run/sidecar.sock");
    let run_with = |no_autostart: &str| {
        run_shim(
            &["--socket", socket.to_str().unwrap()],
            &[
                ("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", "300"),
                ("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", no_autostart),
                ("ADAPTIVE_GUIDEBOOK_BIN", daemon.to_str().unwrap()),
            ],
            APPLY_PATCH_ADD.as_bytes(),
        )
    };

    let off = run_with("1");
    assert_silent_success(&off);
    assert!(!args.exists(), "NO_AUTOSTART=1 starts nothing");
    assert!(!dir.0.join("run").exists(), "and creates nothing");

    // The fake never listens, so the shim waits out its budget and prints nothing.
    let on = run_with("0");
    assert_silent_success(&on);
    assert!(on.stderr.contains("started the sidecar"), "{}", on.stderr);
    // The detached fake may still be writing on a busy machine.
    let started = Instant::now();
    while !std::fs::read_to_string(&args).is_ok_and(|a| a.ends_with('\n')) {
        assert!(
            started.elapsed() < HANG_LIMIT,
            "the daemon was never started"
        );
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        std::fs::read_to_string(&args).unwrap(),
        format!("serve --socket {}\n", socket.display())
    );
    let log = std::fs::read_to_string(dir.0.join("run/sidecar.log")).unwrap();
    assert!(log.contains("guidebook-hook: started"), "{log}");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.0.join("run")), 0o700);
    assert_eq!(mode(&dir.0.join("run/sidecar.sock.start.lock")), 0o600);
}

#[test]
fn the_token_budget_comes_from_the_environment_and_zero_sends_none() {
    for (value, expected) in [
        ("350", json!(350)),
        ("0", Value::Null),
        ("lots", json!(2000)),
    ] {
        let dir = TempDir::new();
        let sidecar = FakeSidecar::start(&dir.0, Reply::Raw(http_200(SEARCH_RESULT)));
        let run = run_shim(
            &["--socket", sidecar.socket.to_str().unwrap()],
            &[
                ("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", TIMEOUT_MS),
                ("ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS", value),
            ],
            APPLY_PATCH_ADD.as_bytes(),
        );
        assert!(run.status.success());
        let body = request_json(&sidecar.join());
        let sent = body["params"]
            .get("maxTokens")
            .cloned()
            .unwrap_or(Value::Null);
        assert_eq!(sent, expected, "ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS={value}");
    }
}

/// The agent's own shell command that would reset its breaker is denied by the real shim, in
/// each host's deny shape, with no sidecar running and none started (a guardrail that needed
/// the sidecar could be lifted by stopping it).
#[test]
fn a_shell_command_that_lifts_a_guardrail_is_denied_without_a_sidecar() {
    let dir = TempDir::new();
    let (daemon, args) = fake_daemon(&dir.0);
    let socket = dir.0.join("run/sidecar.sock");
    let run = |event: Value| {
        run_shim(
            &["--socket", socket.to_str().unwrap()],
            &[
                ("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", TIMEOUT_MS),
                ("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "0"),
                ("ADAPTIVE_GUIDEBOOK_BIN", daemon.to_str().unwrap()),
            ],
            event.to_string().as_bytes(),
        )
    };
    let claude = run(json!({"session_id": "s", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "cwd": "/w",
        "tool_input": {"command": "guidebook breaker reset --session s"}}));
    assert!(claude.status.success());
    let output: Value = serde_json::from_str(claude.stdout.trim()).unwrap();
    let specific = &output["hookSpecificOutput"];
    assert_eq!(specific["hookEventName"], "PreToolUse");
    assert_eq!(specific["permissionDecision"], "deny");
    let reason = specific["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("guidebook breaker reset"), "{reason}");
    assert!(reason.contains("ask the user"), "{reason}");

    let codex_socket = run(json!({"session_id": "s", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "cwd": "/w", "tool_input": {"command": format!(
            "curl -s --unix-socket {} http://x/ -d '{{\"method\":\"setFlag\"}}'", socket.display())}}));
    let output: Value = serde_json::from_str(codex_socket.stdout.trim()).unwrap();
    assert_eq!(output["hookSpecificOutput"]["permissionDecision"], "deny");

    let gemini = run(json!({"session_id": "s", "hook_event_name": "BeforeTool",
        "tool_name": "run_shell_command",
        "tool_input": {"command": "guidebook flags set hooks_enabled false"}}));
    let output: Value = serde_json::from_str(gemini.stdout.trim()).unwrap();
    assert_eq!(output["decision"], "deny", "{}", gemini.stdout);

    // An ordinary command says nothing, asks nothing and starts nothing.
    let ordinary = run(json!({"session_id": "s", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "cwd": "/w", "tool_input": {"command": "guidebook status"}}));
    assert_silent_success(&ordinary);
    assert!(
        !args.exists(),
        "no sidecar was started: {:?}",
        std::fs::read_to_string(&args)
    );
}

/// The default places come from the environment: a write to the flags file
/// `ADAPTIVE_GUIDEBOOK_FLAGS` names, or to the database under `ADAPTIVE_GUIDEBOOK_HOME`, and a
/// `config.yaml` that moves the database elsewhere.
#[test]
fn the_protected_places_follow_the_environment_and_config_yaml() {
    let dir = TempDir::new();
    let home = dir.0.join("gb");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.yaml"),
        "db: /var/lib/team/gb.db # moved\n",
    )
    .unwrap();
    let decision = |command: &str| {
        let run = run_shim(
            &[],
            &[
                ("ADAPTIVE_GUIDEBOOK_HOME", home.to_str().unwrap()),
                ("ADAPTIVE_GUIDEBOOK_FLAGS", "/etc/team/flags.json"),
            ],
            json!({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                "cwd": "/w", "tool_input": {"command": command}})
            .to_string()
            .as_bytes(),
        );
        assert!(run.status.success());
        run.stdout.contains("\"deny\"")
    };
    assert!(decision("echo '{}' > /etc/team/flags.json"));
    assert!(decision(&format!(
        "rm {}/adaptive-guidebook.db",
        home.display()
    )));
    assert!(decision(
        "sqlite3 /var/lib/team/gb.db 'delete from breaker_runs'"
    ));
    assert!(!decision("cat /etc/team/flags.json"));
    assert!(!decision("sqlite3 /var/lib/other.db .tables"));
    // The guidebook root below the home directory is the user's to author in.
    assert!(!decision(&format!(
        "printf 'id: x' > {}/guidebook/x/guideline.yaml",
        home.display()
    )));
    assert!(decision(&format!("rm -rf {}/guide*", home.display())));
}

/// A socket file that another user bound is not talked to: nothing is sent to it, and the
/// shim says whose it is. Needs root, to give the socket away.
#[test]
fn a_socket_owned_by_another_user_is_not_used() {
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() != 0) {
        panic!("this test runs as root (CI does) to give a socket to another uid");
    }
    let dir = TempDir::new();
    let socket = dir.0.join("sidecar.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    std::os::unix::fs::chown(&socket, Some(65534), None).unwrap();
    let run = run_with_socket(&socket, APPLY_PATCH_ADD);
    assert_silent_success(&run);
    assert!(
        run.stderr.contains("belongs to uid 65534"),
        "{}",
        run.stderr
    );
    listener.set_nonblocking(true).unwrap();
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == io::ErrorKind::WouldBlock),
        "the shim connected to another user's socket"
    );
}

/// The start lock and the log next to the socket are never opened through a symlink: one
/// planted there makes the start fail (and the hook stay silent), and its target is untouched.
#[test]
fn autostart_does_not_follow_a_symlinked_lock_or_log() {
    for planted in ["sidecar.sock.start.lock", "sidecar.log"] {
        let dir = TempDir::new();
        let (daemon, args) = fake_daemon(&dir.0);
        let run_dir = dir.0.join("run");
        std::fs::create_dir_all(&run_dir).unwrap();
        let victim = dir.0.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        std::os::unix::fs::symlink(&victim, run_dir.join(planted)).unwrap();
        let socket = run_dir.join("sidecar.sock");
        let run = run_shim(
            &["--socket", socket.to_str().unwrap()],
            &[
                ("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", "300"),
                ("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "0"),
                ("ADAPTIVE_GUIDEBOOK_BIN", daemon.to_str().unwrap()),
            ],
            APPLY_PATCH_ADD.as_bytes(),
        );
        assert_silent_success(&run);
        assert!(
            run.stderr.contains("cannot start the sidecar"),
            "{planted}: {}",
            run.stderr
        );
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "precious\n",
            "{planted}"
        );
        assert!(!args.exists(), "{planted}: the daemon was started anyway");
    }
}
