//! What the real-agent tests share: the agents' CLIs from npm, and a scripted mock model server.
//!
//! Each agent is installed once with npm into `target/agents/<name>-<version>` (reused after
//! that, so no network is needed once it is there), at its pinned version, or with
//! `ADAPTIVE_GUIDEBOOK_AGENTS=latest` (`scripts/test --latest-agents`) at the newest the npm
//! registry serves, asked once per test process, and runs against a [`MockServer`] on
//! 127.0.0.1 that answers with the agent's own streaming wire format and keeps every request.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use crate::harness::*;

/// An agent's CLI on npm: its package, the version the tests pin, and the binary they run.
/// Which version a run uses is [`Agent::version`]: the pin, or with
/// `ADAPTIVE_GUIDEBOOK_AGENTS=latest` the newest the registry serves.
pub struct Agent {
    pub package: &'static str,
    pub pinned: &'static str,
    pub bin: &'static str,
    latest: OnceLock<&'static str>,
}

impl Agent {
    const fn pinned(package: &'static str, pinned: &'static str, bin: &'static str) -> Agent {
        Agent {
            package,
            pinned,
            bin,
            latest: OnceLock::new(),
        }
    }

    /// The version this test process runs: the pin, or the registry's newest (asked once).
    pub fn version(&self) -> &'static str {
        match agents_mode() {
            AgentsMode::Pinned => self.pinned,
            AgentsMode::Latest => self.latest.get_or_init(|| {
                let newest = npm_newest(self.package);
                // Straight to the process's stderr, past the test harness's capture: the
                // weekly check's log says which versions it ran.
                let _ = writeln!(
                    std::io::stderr(),
                    "agents: {} {newest} (pinned {})",
                    self.package,
                    self.pinned
                );
                newest
            }),
        }
    }

    /// The agent's executable at [`Agent::version`], installed on first use.
    pub fn exe(&self) -> PathBuf {
        npm_cli((self.package, self.version(), self.bin))
    }
}

/// The agents' CLIs, pinned: moving to a newer release is one line each.
pub static CODEX: Agent = Agent::pinned("@openai/codex", "0.171.0", "codex");
pub static CLAUDE_CODE: Agent = Agent::pinned("@anthropic-ai/claude-code", "2.1.332", "claude");
pub static GEMINI_CLI: Agent = Agent::pinned("@google/gemini-cli", "0.61.0", "gemini");
pub static COPILOT_CLI: Agent = Agent::pinned("@github/copilot", "1.0.102", "copilot");
pub static OPENCODE: Agent = Agent::pinned("opencode-ai", "1.18.33", "opencode");

/// The model the Claude Code tests name (`--model`); the mock answers whatever is named. Not
/// one Claude Code lists as retired: 2.1.332 prints "⚠ Claude Sonnet 4.5 was retired on
/// November 30, 2026. Consider switching to a newer model." after a `-p` answer, in the
/// output the tests read.
pub const CLAUDE_MODEL: &str = "claude-sonnet-4-6";

/// The variable that picks the agents' versions, and what it may say.
pub const AGENTS_VARIABLE: &str = "ADAPTIVE_GUIDEBOOK_AGENTS";

/// Which versions of the agents a test process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentsMode {
    /// The pins (the default).
    Pinned,
    /// The newest each package's registry serves: the weekly check.
    Latest,
}

/// [`AGENTS_VARIABLE`]'s value read: unset, empty or `pinned` is [`AgentsMode::Pinned`],
/// `latest` is [`AgentsMode::Latest`]; anything else an error naming the variable and both.
pub fn parse_agents_mode(value: Option<&str>) -> Result<AgentsMode, String> {
    match value.map(str::trim) {
        None | Some("") | Some("pinned") => Ok(AgentsMode::Pinned),
        Some("latest") => Ok(AgentsMode::Latest),
        Some(other) => Err(format!(
            "{AGENTS_VARIABLE}={other:?} is not a choice: `pinned` (the default, the versions \
            tests/it/agents.rs pins) or `latest` (the newest the npm registry serves)"
        )),
    }
}

/// This process's [`AgentsMode`], from the environment; a wrong value fails the test.
fn agents_mode() -> AgentsMode {
    let value = std::env::var(AGENTS_VARIABLE).ok();
    parse_agents_mode(value.as_deref()).unwrap_or_else(|e| panic!("{e}"))
}

/// The newest version of `package` the npm registry serves (`npm view PACKAGE version`).
fn npm_newest(package: &str) -> &'static str {
    let mut npm = Command::new("npm");
    npm.args(["view", "--loglevel=error", package, "version"]);
    let out = run_bounded(npm, b"", "npm view");
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success() && !version.is_empty() && !version.contains(char::is_whitespace),
        "asking npm for the newest {package} ({AGENTS_VARIABLE}=latest) failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Box::leak(version.into_boxed_str())
}

#[test]
fn the_agents_switch_takes_pinned_or_latest_and_names_both_otherwise() {
    assert_eq!(parse_agents_mode(None), Ok(AgentsMode::Pinned));
    assert_eq!(parse_agents_mode(Some("pinned")), Ok(AgentsMode::Pinned));
    assert_eq!(parse_agents_mode(Some("latest")), Ok(AgentsMode::Latest));
    let wrong = parse_agents_mode(Some("newest")).unwrap_err();
    for said in [
        AGENTS_VARIABLE,
        "\"newest\"",
        "`pinned`",
        "`latest`",
        "default",
    ] {
        assert!(wrong.contains(said), "{wrong}");
    }
}

/// The binary `bin` of npm package `package` at `version`, installed on first use.
pub fn npm_cli((package, version, bin): (&str, &str, &str)) -> PathBuf {
    let slug = package.trim_start_matches('@').replace('/', "-");
    let dir = manifest_dir()
        .join("target/agents")
        .join(format!("{slug}-{version}"));
    let exe = dir.join("node_modules/.bin").join(bin);
    // One installer at a time per package: tests run in parallel.
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if !exe.exists() {
        let mut npm = Command::new("npm");
        npm.args([
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&dir)
        .arg(format!("{package}@{version}"));
        let out = run_bounded(npm, b"", "npm install");
        assert!(
            out.status.success() && exe.exists(),
            "installing {package}@{version} with npm failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    exe
}

/// `guidebook hooks install HOST_FLAG --hook-command <the shim>` for the user whose home is
/// `home`; it must succeed.
pub fn install_shim_hooks(home: &std::path::Path, host_flag: &str) {
    let mut install = Command::new(guidebook_exe());
    install
        .env_clear()
        .env("HOME", home)
        .args(["hooks", "install", host_flag, "--hook-command"])
        .arg(shim_exe());
    let what = format!("guidebook hooks install {host_flag}");
    let out = run_bounded(install, b"", &what);
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `PATH` as after `cargo install`: our binaries' directory (`guidebook`, `guidebook-hook`)
/// first.
pub fn path_with_ours() -> std::ffi::OsString {
    let ours = shim_exe().parent().unwrap().to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(ours).chain(std::env::split_paths(&rest))).unwrap()
}

/// The guideline the real-agent tests expect in the next request: in scope for `acme/*`
/// Kotlin files that launch in `GlobalScope`.
pub const GLOBALSCOPE: &str =
    "id: kotlin-no-globalscope\nscope:\n  repositories: ['acme/*']\n  languages: [kotlin]\n\
    match:\n  any:\n    - regex:\n        pattern: 'GlobalScope\\.launch'\n\
    content: Do not launch in GlobalScope; use the component's own scope.\n";

/// Where every real-agent test of the edit hook starts: a guidebook holding the GlobalScope
/// guideline, a sidecar serving it, an `acme/orders` repository with its `origin`, and an
/// empty home for the agent's user.
pub struct Scene {
    pub dir: tempfile::TempDir,
    pub sidecar: Sidecar,
    pub work: PathBuf,
    pub home: PathBuf,
}

impl Scene {
    pub fn orders() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("guidebook");
        write_guideline(&root, "kotlin-no-globalscope", GLOBALSCOPE);
        let sidecar = Sidecar::start(&root);
        let work = dir.path().join("orders");
        git_repo(&work, Some("git@github.com:acme/orders.git"));
        let home = dir.path().join("user");
        std::fs::create_dir_all(&home).unwrap();
        Scene {
            dir,
            sidecar,
            work,
            home,
        }
    }

    /// Where the guardrail tests start: a sidecar on an empty guidebook, an `acme/api`
    /// repository with its `origin`, and an empty home.
    pub fn api() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        let sidecar = Sidecar::start(&dir.path().join("guidebook"));
        let work = dir.path().join("api");
        git_repo(&work, Some("git@github.com:acme/api.git"));
        let home = dir.path().join("user");
        std::fs::create_dir_all(&home).unwrap();
        Scene {
            dir,
            sidecar,
            work,
            home,
        }
    }

    /// Where the breaker tests start: [`Scene::api`] with flag `hooks_enabled` on and the
    /// unused import ruff reports in `src/app.py`.
    pub fn lint() -> Scene {
        let scene = Scene::api();
        enable_hooks(&scene.sidecar);
        python_with_an_unused_import(&scene.work);
        scene
    }
}

/// `src/app.py` in `work` with the unused import (ruff F401) the breaker tests lint.
pub fn python_with_an_unused_import(work: &std::path::Path) {
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::write(work.join("src/app.py"), "import os\n").unwrap();
}

/// What an agent printed, stdout then stderr.
pub fn printed(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The linter the breaker tests run through the agents' shells, pinned.
pub const RUFF: &str = "0.17.6";

/// The real `ruff` executable at [`RUFF`], installed from PyPI with pip on first use.
pub fn ruff_exe() -> PathBuf {
    let dir = manifest_dir()
        .join("target/agents")
        .join(format!("ruff-{RUFF}"));
    let exe = dir.join("bin/ruff");
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if !exe.exists() {
        let mut pip = Command::new("python3");
        pip.args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--target",
        ])
        .arg(&dir)
        .arg(format!("ruff=={RUFF}"));
        let out = run_bounded(pip, b"", "pip install ruff");
        assert!(
            out.status.success() && exe.exists(),
            "installing ruff=={RUFF} with pip failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    exe
}

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Value,
}

/// An answer: status, content type, body.
pub type Answer = (u16, &'static str, String);

/// A local HTTP/1.1 server that answers each request with `respond` and keeps them all.
pub struct MockServer {
    pub port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl MockServer {
    pub fn start(
        respond: impl Fn(&Request, usize) -> Answer + Send + Sync + 'static,
    ) -> MockServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let respond = Arc::new(respond);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (seen, respond) = (seen.clone(), respond.clone());
                std::thread::spawn(move || serve(stream, &seen, &*respond));
            }
        });
        MockServer { port, requests }
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

/// One connection: requests one after another (keep-alive), each `Content-Length` framed.
fn serve(
    mut stream: std::net::TcpStream,
    seen: &Mutex<Vec<Request>>,
    respond: &(dyn Fn(&Request, usize) -> Answer + Send + Sync),
) {
    loop {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
        let head = String::from_utf8_lossy(&head).to_string();
        let mut first = head.lines().next().unwrap_or("").split(' ');
        let method = first.next().unwrap_or("").to_string();
        let path = first.next().unwrap_or("").to_string();
        let length = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        let mut body = vec![0u8; length];
        if stream.read_exact(&mut body).is_err() {
            return;
        }
        let request = Request {
            method,
            path,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        };
        let n = {
            let mut seen = seen.lock().unwrap();
            seen.push(request.clone());
            seen.len()
        };
        let (status, content_type, body) = respond(&request, n);
        let written = write!(
            stream,
            "HTTP/1.1 {status} OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if written.is_err() {
            return;
        }
    }
}

/// Server-sent events: `event:` and `data:` per pair.
pub fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
        .collect()
}

/// A sidecar that has hung: it accepts connections on `path` and never answers. Kept until
/// dropped.
pub struct HungSidecar {
    pub path: PathBuf,
    _held: Arc<Mutex<Vec<std::os::unix::net::UnixStream>>>,
}

impl HungSidecar {
    pub fn bind(path: PathBuf) -> HungSidecar {
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let held = Arc::new(Mutex::new(Vec::new()));
        let keep = held.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                keep.lock().unwrap().push(stream);
            }
        });
        HungSidecar { path, _held: held }
    }
}
