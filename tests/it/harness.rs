//! The test harness: boots the real `guidebook serve` on a temp socket with a temp HOME, talks
//! JSON-RPC to it over a blocking HTTP/1.1 client, runs the real `guidebook-hook` and `guidebook`
//! binaries, and makes real git repositories. Reads: fixtures under `tests/fixtures/`. Writes:
//! temp directories only.

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

/// The `guidebook-hook` binary under test. It belongs to another workspace package, so Cargo
/// does not build it for this test binary nor tell us where it is: it sits next to
/// `guidebook`, and is (re)built once per test run so that a stale copy is never tested.
pub fn shim_exe() -> PathBuf {
    static BUILD: Once = Once::new();
    let exe_dir = guidebook_exe()
        .parent()
        .expect("the binary has a directory");
    // `<target>/<profile>/guidebook`: build the shim into the same target and profile.
    let target_dir = exe_dir.parent().expect("a target directory");
    BUILD.call_once(|| build_shim(target_dir, None));
    let exe = exe_dir.join("guidebook-hook");
    assert!(exe.is_file(), "{} was not built", exe.display());
    exe
}

/// The shim as README's Linux install line builds it: linked statically
/// (`RUSTFLAGS="-C target-feature=+crt-static"`), in a target directory of its own, since
/// those flags apply to every crate of a build. Built once per test run.
pub fn static_shim_exe() -> PathBuf {
    static BUILD: Once = Once::new();
    let exe_dir = guidebook_exe()
        .parent()
        .expect("the binary has a directory");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("static-shim");
    BUILD.call_once(|| build_shim(&target_dir, Some("-C target-feature=+crt-static")));
    let profile = exe_dir.file_name().expect("a profile directory");
    let exe = target_dir.join(profile).join("guidebook-hook");
    assert!(exe.is_file(), "{} was not built", exe.display());
    exe
}

/// Builds `guidebook-hook` into `target_dir` with the profile this test binary was built
/// with; `rustflags`, when given, replace the test process's own `RUSTFLAGS`.
fn build_shim(target_dir: &Path, rustflags: Option<&str>) {
    let profile = guidebook_exe()
        .parent()
        .and_then(Path::file_name)
        .and_then(OsStr::to_str)
        .unwrap_or("debug");
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args([
            "build",
            "--quiet",
            "-p",
            "guidebook-hook",
            "--bin",
            "guidebook-hook",
        ])
        .arg("--manifest-path")
        .arg(manifest_dir().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    if let Some(flags) = rustflags {
        cargo
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env("RUSTFLAGS", flags);
    }
    if profile == "release" {
        cargo.arg("--release");
    }
    let out = cargo
        .output()
        .expect("running cargo to build guidebook-hook");
    assert!(
        out.status.success(),
        "building guidebook-hook (RUSTFLAGS {rustflags:?}) failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
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

/// What one run of `guidebook-hook` did.
#[derive(Debug)]
pub struct ShimRun {
    pub stdout: String,
    pub stderr: String,
    pub status: ExitStatus,
}

/// Runs the real `guidebook-hook` with `stdin` and `envs` (nothing else from the test's own
/// settings environment), checks that it exited 0 and that whatever it printed is one line of
/// hook output valid against Codex's published schema. Autostart is off unless `envs` sets
/// `ADAPTIVE_GUIDEBOOK_NO_AUTOSTART` otherwise: a shim that found no sidecar would start one
/// this test does not own.
pub fn run_shim(stdin: &str, envs: &[(&str, &OsStr)]) -> ShimRun {
    run_shim_with_args(&[], stdin, envs)
}

/// [`run_shim`] with command-line arguments.
pub fn run_shim_with_args(args: &[&OsStr], stdin: &str, envs: &[(&str, &OsStr)]) -> ShimRun {
    run_shim_exe(&shim_exe(), args, stdin, envs)
}

/// [`run_shim_with_args`] with a given build of the shim.
pub fn run_shim_exe(exe: &Path, args: &[&OsStr], stdin: &str, envs: &[(&str, &OsStr)]) -> ShimRun {
    let mut cmd = Command::new(exe);
    for var in INHERITED_SETTINGS {
        cmd.env_remove(var);
    }
    cmd.env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1");
    cmd.args(args).envs(envs.iter().copied());
    let out = run_bounded(cmd, stdin.as_bytes(), "guidebook-hook");
    let run = ShimRun {
        stdout: String::from_utf8(out.stdout).expect("hook output is UTF-8"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        status: out.status,
    };
    assert_eq!(
        run.status.code(),
        Some(0),
        "the shim must always exit 0: {run:?}"
    );
    let event: Option<Value> = serde_json::from_str(stdin).ok();
    match event.as_ref().and_then(|e| e["hook_event_name"].as_str()) {
        Some("PreToolUse") => assert_valid_pre_tool_use_output(&run.stdout),
        Some("BeforeTool" | "AfterTool" | "PreCompress") => assert_valid_gemini_output(&run.stdout),
        Some("PostToolUseFailure") => assert_valid_claude_failure_output(&run.stdout),
        _ => assert_valid_hook_output(&run.stdout),
    }
    run
}

/// Like [`assert_valid_hook_output`], against the shapes Gemini CLI reads (its hook output types,
/// written down as `gemini-hook-schemas/hook-output.schema.json`).
pub fn assert_valid_gemini_output(stdout: &str) {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    assert_valid_output(
        stdout,
        &VALIDATOR,
        "gemini-hook-schemas/hook-output.schema.json",
    );
}

/// Like [`assert_valid_hook_output`], against what Claude Code reads from a `PostToolUseFailure`
/// hook (an event Codex does not have).
pub fn assert_valid_claude_failure_output(stdout: &str) {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    assert_valid_output(
        stdout,
        &VALIDATOR,
        "claude-hook-schemas/post-tool-use-failure.output.schema.json",
    );
}

/// Like [`assert_valid_hook_output`], against Codex's `PreToolUse` output schema.
pub fn assert_valid_pre_tool_use_output(stdout: &str) {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    assert_valid_output(
        stdout,
        &VALIDATOR,
        "codex-hook-schemas/pre-tool-use.command.output.schema.json",
    );
}

/// Checks that the shim's stdout is empty or exactly one compact JSON object on one line that
/// Codex's PostToolUse output schema accepts (it rejects unknown keys).
pub fn assert_valid_hook_output(stdout: &str) {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    assert_valid_output(
        stdout,
        &VALIDATOR,
        "codex-hook-schemas/post-tool-use.command.output.schema.json",
    );
}

/// `stdout` is empty, or one newline-terminated compact JSON line valid against `schema`.
fn assert_valid_output(
    stdout: &str,
    validator: &'static OnceLock<jsonschema::Validator>,
    schema: &str,
) {
    if stdout.is_empty() {
        return;
    }
    let line = stdout
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("hook output must end with a newline: {stdout:?}"));
    assert!(
        !line.contains('\n'),
        "hook output must be one line: {stdout:?}"
    );
    let value: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("hook output is not JSON ({e}): {stdout:?}"));
    let validator = validator.get_or_init(|| {
        jsonschema::validator_for(&fixture(schema))
            .unwrap_or_else(|e| panic!("the schema {schema} compiles: {e}"))
    });
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "hook output {line} is invalid against {schema}: {errors:?}"
    );
}

/// How to start a sidecar.
#[derive(Debug, Default)]
pub struct SidecarOptions {
    /// The guidebook root; `None` leaves the default (`HOME/guidebook`, the embedded sample).
    pub root: Option<PathBuf>,
    /// Socket path; `None` leaves the default `HOME/sidecar.sock`.
    pub socket: Option<PathBuf>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
}

/// A real `guidebook serve` on a temp socket with a temp HOME. Killed when dropped.
pub struct Sidecar {
    /// Owns every file of this sidecar; removed on drop.
    pub dir: TempDir,
    /// `ADAPTIVE_GUIDEBOOK_HOME`.
    pub home: PathBuf,
    pub socket: PathBuf,
    pub db: PathBuf,
    /// `HOME` for the daemon and the git it runs: keeps the developer's git config out.
    pub user_home: PathBuf,
    options: SidecarOptions,
    stderr_path: PathBuf,
    child: Option<Child>,
}

impl Sidecar {
    /// Starts a sidecar serving the guidebook at `root`.
    pub fn start(root: &Path) -> Sidecar {
        Self::start_with(SidecarOptions {
            root: Some(root.to_path_buf()),
            ..SidecarOptions::default()
        })
    }

    /// Starts a sidecar with the default root (the embedded sample, installed on first start).
    pub fn start_default() -> Sidecar {
        Self::start_with(SidecarOptions::default())
    }

    pub fn start_with(options: SidecarOptions) -> Sidecar {
        let dir = tempfile::Builder::new()
            .prefix("gb-it-")
            .tempdir()
            .expect("a temp dir");
        let home = dir.path().join("home");
        let user_home = dir.path().join("user");
        std::fs::create_dir_all(&user_home).unwrap();
        let socket = options
            .socket
            .clone()
            .unwrap_or_else(|| home.join("sidecar.sock"));
        let mut sidecar = Sidecar {
            db: home.join("adaptive-guidebook.db"),
            stderr_path: dir.path().join("sidecar.stderr"),
            home,
            socket,
            user_home,
            options,
            dir,
            child: None,
        };
        sidecar.spawn();
        sidecar
    }

    /// The environment every `guidebook` process of this sidecar runs with.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            (
                "ADAPTIVE_GUIDEBOOK_HOME".into(),
                self.home.display().to_string(),
            ),
            ("HOME".into(), self.user_home.display().to_string()),
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("RUST_LOG".into(), "warn".into()),
        ];
        if let Some(root) = &self.options.root {
            env.push(("ADAPTIVE_GUIDEBOOK_ROOT".into(), root.display().to_string()));
        }
        if let Some(socket) = &self.options.socket {
            env.push((
                "ADAPTIVE_GUIDEBOOK_SOCKET".into(),
                socket.display().to_string(),
            ));
        }
        env.extend(self.options.env.iter().cloned());
        env
    }

    /// A `guidebook ARGS` command with this sidecar's environment.
    pub fn guidebook(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(guidebook_exe());
        for var in INHERITED_SETTINGS {
            cmd.env_remove(var);
        }
        cmd.args(args).envs(self.env()).current_dir(self.dir.path());
        cmd
    }

    /// Runs `guidebook ARGS` to completion (bounded by the watchdog).
    pub fn cli(&self, args: &[&str]) -> Output {
        run_bounded(self.guidebook(args), b"", "guidebook CLI")
    }

    fn spawn(&mut self) {
        let stderr = std::fs::File::create(&self.stderr_path).unwrap();
        let child = self
            .guidebook(&["serve"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawning guidebook serve");
        self.child = Some(child);
        self.wait_ready();
    }

    /// Polls until the socket accepts connections and the guidebook is loaded (the daemon
    /// answers before it has compiled its guidebook; `status` says `loadedAt: null` until
    /// then); fails with the daemon's stderr if it exits.
    fn wait_ready(&mut self) {
        let started = Instant::now();
        loop {
            if UnixStream::connect(&self.socket).is_ok() {
                let status = self.call("status", json!({}));
                if !status["result"]["guidebook"]["loadedAt"].is_null() {
                    return;
                }
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "guidebook serve exited early with {status}:\n{}",
                    self.stderr()
                );
            }
            assert!(
                started.elapsed() < WATCHDOG,
                "guidebook serve did not listen on {} within {WATCHDOG:?}:\n{}",
                self.socket.display(),
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// What the daemon logged so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    pub fn pid(&self) -> libc::pid_t {
        self.child.as_ref().expect("running").id() as libc::pid_t
    }

    /// Stops the daemon (SIGTERM) and starts a new one on the same home, database and socket.
    pub fn restart(&mut self) {
        let status = self.stop();
        assert!(status.success(), "the sidecar exited with {status}");
        self.spawn();
    }

    /// Sends SIGTERM and waits (bounded) for the daemon to exit; returns its exit status.
    pub fn stop(&mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        self.wait_exit()
    }

    /// Waits (bounded) for the daemon to exit after a signal; returns its exit status.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        wait_bounded(&mut child, WATCHDOG, "guidebook serve after a signal")
    }

    /// Starts a new daemon on the same home, database and socket after [`Sidecar::kill`] or
    /// [`Sidecar::stop`].
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the sidecar is still running");
        self.spawn();
    }

    /// Sends SIGKILL and reaps the daemon: a crash that leaves the socket file behind.
    pub fn kill(&mut self) {
        let mut child = self.child.take().expect("running");
        let _ = child.kill();
        let _ = child.wait();
    }

    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: the pid is our own child, not yet reaped.
        let rc = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(rc, 0, "kill({}, {signal})", self.pid());
    }

    /// Sends one HTTP/1.1 `POST /` with `body` and returns the status and body.
    pub fn raw(&self, body: &[u8]) -> (u16, Vec<u8>) {
        http_post(&self.socket, body)
    }

    /// One JSON-RPC call; returns the whole response object.
    pub fn call(&self, method: &str, params: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (status, body) = self.raw(request.to_string().as_bytes());
        assert_eq!(
            status,
            200,
            "{method}: HTTP {status}: {}",
            String::from_utf8_lossy(&body)
        );
        serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!(
                "{method}: response is not JSON ({e}): {}",
                String::from_utf8_lossy(&body)
            )
        })
    }

    /// A call that must succeed; returns its `result`.
    pub fn result(&self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// A call that must fail; returns its error `code` and `message`.
    pub fn error(&self, method: &str, params: Value) -> (i64, String) {
        rpc_error(&self.call(method, params))
    }

    /// The ids `search` returns for these files in this session (recording them).
    pub fn search_ids(&self, session: &str, files: &[&Path]) -> Vec<String> {
        ids(&self.result(
            "search",
            json!({"sessionId": session, "filepaths": paths(files)}),
        ))
    }

    /// The `explain` result for these files.
    pub fn explain(&self, files: &[&Path]) -> Value {
        self.result("explain", json!({"filepaths": paths(files)}))
    }

    /// Runs the real shim on `event` against this sidecar, with a patient timeout.
    pub fn hook(&self, event: &Value) -> ShimRun {
        self.hook_with(&shim_exe(), event)
    }

    /// [`Sidecar::hook`] with a given build of the shim.
    pub fn hook_with(&self, exe: &Path, event: &Value) -> ShimRun {
        run_shim_exe(
            exe,
            &[],
            &event.to_string(),
            &[
                ("ADAPTIVE_GUIDEBOOK_SOCKET", self.socket.as_os_str()),
                (
                    "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
                    OsStr::new(PATIENT_HOOK_TIMEOUT_MS),
                ),
                ("HOME", self.user_home.as_os_str()),
            ],
        )
    }

    /// Polls `status` until `done` holds, bounded (the sidecar reloads about every 400 ms).
    pub fn wait_for_status(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let limit = Duration::from_secs(10);
        let started = Instant::now();
        loop {
            let status = self.result("status", json!({}));
            if done(&status) {
                return status;
            }
            assert!(
                started.elapsed() < limit,
                "{what}: not within {limit:?}; last status {status}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The `code` and `message` of a JSON-RPC error response.
pub fn rpc_error(response: &Value) -> (i64, String) {
    let error = response
        .get("error")
        .unwrap_or_else(|| panic!("expected an error, got {response}"));
    (
        error["code"].as_i64().expect("an integer code"),
        error["message"].as_str().expect("a message").to_string(),
    )
}

pub fn paths(files: &[&Path]) -> Vec<String> {
    files.iter().map(|p| p.display().to_string()).collect()
}

/// The `id`s of a `search` result, in order.
pub fn ids(result: &Value) -> Vec<String> {
    result
        .as_array()
        .unwrap_or_else(|| panic!("search result is not an array: {result}"))
        .iter()
        .map(|g| g["id"].as_str().expect("an id").to_string())
        .collect()
}

/// A minimal blocking HTTP/1.1 client: `POST /` with `Connection: close`, read to EOF. A read
/// that waits longer than [`WATCHDOG`] fails the test: the sidecar must never hang.
pub fn http_post(socket: &Path, body: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = UnixStream::connect(socket)
        .unwrap_or_else(|e| panic!("connecting to {}: {e}", socket.display()));
    send_request(&mut stream, body);
    read_response(&mut stream)
}

/// Writes the request. A write error is ignored: a server may refuse an oversized body and
/// close early, and its answer is still there to read.
pub fn send_request(stream: &mut UnixStream, body: &[u8]) {
    stream.set_write_timeout(Some(WATCHDOG)).unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body));
}

/// Reads a whole response to EOF and returns its status and (de-chunked) body.
pub fn read_response(stream: &mut UnixStream) -> (u16, Vec<u8>) {
    stream.set_read_timeout(Some(WATCHDOG)).unwrap();
    let mut raw = Vec::new();
    if let Err(e) = stream.read_to_end(&mut raw) {
        let hung = matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        );
        assert!(
            !hung,
            "the sidecar hung: no complete answer within {WATCHDOG:?}"
        );
        // A reset after the whole response arrived is fine; the parse below checks that.
        assert!(!raw.is_empty(), "reading the response: {e}");
    }
    parse_http(&raw)
}

fn parse_http(raw: &[u8]) -> (u16, Vec<u8>) {
    let text = String::from_utf8_lossy(raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no complete HTTP head in {text:?}"));
    let head = std::str::from_utf8(&raw[..split]).expect("ASCII head");
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line in {head:?}"));
    let rest = &raw[split + 4..];
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut body = Vec::new();
        let mut data = rest;
        loop {
            let eol = data
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("chunk size line");
            let size_text = std::str::from_utf8(&data[..eol]).unwrap();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
                .expect("hex chunk size");
            if size == 0 {
                return (status, body);
            }
            assert!(data.len() >= eol + 2 + size, "truncated chunk in {text:?}");
            body.extend_from_slice(&data[eol + 2..eol + 2 + size]);
            data = &data[eol + 2 + size + 2..];
        }
    }
    match header("content-length") {
        Some(len) => {
            let len: usize = len.parse().expect("numeric Content-Length");
            assert!(rest.len() >= len, "truncated body: {text:?}");
            (status, rest[..len].to_vec())
        }
        None => (status, rest.to_vec()),
    }
}

// --- Guidebooks -------------------------------------------------------------------------------

/// Writes `<root>/<dir>/guideline.yaml` and returns its path.
pub fn write_guideline(root: &Path, dir: &str, yaml: &str) -> PathBuf {
    let dir = root.join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("guideline.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// The guidebook most tests serve:
///
/// | id | repositories | languages | matches |
/// | --- | --- | --- | --- |
/// | `backend-logging` | `acme/backend-*` | kotlin, java | `println(`, `System.out.` |
/// | `java-field-injection` | all | java | `@Autowired` |
/// | `kotlin-data-classes` | all | kotlin | a line starting `class Name(` |
/// | `python-typed-fields` | all | python | `: int = ` |
/// | `todo-needs-ticket` | all | all | `TODO:` |
pub fn test_guidebook(root: &Path) {
    write_guideline(
        root,
        "backend/logging",
        "id: backend-logging\n\
         scope:\n  repositories: ['acme/backend-*']\n  languages: [kotlin, java]\n\
         match:\n  any:\n    - regex:\n        pattern: 'println\\('\n    - regex:\n        pattern: 'System\\.out\\.'\n\
         content: |\n  Use the structured logger (\"log.info\"), not println.\n",
    );
    write_guideline(
        root,
        "java/field-injection",
        "id: java-field-injection\nscope:\n  languages: [java]\n\
         match:\n  any:\n    - regex:\n        pattern: '@Autowired'\n\
         content: Inject through the constructor, not a field.\n",
    );
    write_guideline(
        root,
        "kotlin/data-classes",
        // Trailing spaces and blank lines: the hook text must trim them.
        "id: kotlin-data-classes\nscope:\n  languages: [kotlin]\n\
         when: [file_changed]\n\
         match:\n  any:\n    - regex:\n        pattern: '^class \\w+\\('\n\
         content: \"Kotlin classes:\\n- prefer data classes for DTOs\\n- keep constructors small  \\n\\n\"\n",
    );
    write_guideline(
        root,
        "python/typed-fields",
        "id: python-typed-fields\nscope:\n  languages: [python]\n\
         match:\n  any:\n    - regex:\n        pattern: ': int = '\n\
         content: Type every field.\n",
    );
    write_guideline(
        root,
        "todo",
        "id: todo-needs-ticket\nmatch:\n  any:\n    - regex:\n        pattern: 'TODO:'\n\
         content: Link every TODO to a ticket.\n",
    );
}

/// A temp directory holding [`test_guidebook`] at `<dir>/guidebook`.
pub fn test_guidebook_dir() -> (TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("gb-root-")
        .tempdir()
        .unwrap();
    let root = dir.path().join("guidebook");
    test_guidebook(&root);
    (dir, root)
}

// --- Git --------------------------------------------------------------------------------------

/// Runs `git ARGS` in `dir` isolated from the machine's git configuration; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let home = std::env::temp_dir();
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Guidebook Test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", home)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .output()
        .expect("running git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Makes `dir` a real git repository, with `origin` set to `origin` if given.
pub fn git_repo(dir: &Path, origin: Option<&str>) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    if let Some(url) = origin {
        git(dir, &["remote", "add", "origin", url]);
    }
}

/// Commits everything in `dir` (worktrees and submodules need a commit).
pub fn git_commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", message]);
}

/// Writes `content` to `dir/rel`, creating directories; returns the absolute path.
pub fn write_file(dir: &Path, rel: &str, content: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    path
}

// --- Hook events ------------------------------------------------------------------------------

/// A hook fixture with `session_id` and `cwd` replaced, keeping everything else as the host
/// sends it.
pub fn hook_event(fixture_name: &str, session: &str, cwd: &Path) -> Value {
    let mut event = fixture(&format!("hooks/{fixture_name}"));
    event["session_id"] = json!(session);
    event["cwd"] = json!(cwd.display().to_string());
    event
}

/// An `apply_patch` patch that adds each `(relative path, content)` file.
pub fn add_file_patch(files: &[(&str, &str)]) -> String {
    let mut patch = String::from("*** Begin Patch\n");
    for (path, content) in files {
        patch.push_str(&format!("*** Add File: {path}\n"));
        for line in content.lines() {
            patch.push_str(&format!("+{line}\n"));
        }
    }
    patch.push_str("*** End Patch\n");
    patch
}

/// Codex's `tool_response` for a successful `apply_patch`, in today's `Exit code:` form.
pub fn apply_patch_response(summary: &[&str]) -> String {
    let mut out = String::from(
        "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\n",
    );
    for line in summary {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Turns the `hooks_enabled` flag on in the sidecar's flags file (the circuit breaker's switch).
pub fn enable_hooks(sidecar: &Sidecar) {
    std::fs::write(
        sidecar.home.join("feature_flags.json"),
        r#"{"flags": {"hooks_enabled": {"enabled": true}}}"#,
    )
    .unwrap();
}
