//! `guidebook-hook`: one hook event on stdin, a question or two to the sidecar, one line out.
//!
//! Reads: arguments, stdin, a few environment variables, the sidecar socket. Writes: stdout
//! (the hook output, at most one JSON line), stderr (diagnostics); starts the sidecar when none
//! listens (see `autostart`).
//!
//! **Invariant:** it always exits 0 and never runs longer than its timeout, counted from process
//! start; anything that goes wrong costs the agent a guideline, never a failed tool call.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use guidebook_hook::autostart;
use guidebook_hook::client::{self, ClientError};
use guidebook_hook::guard::Protected;
use guidebook_hook::hook::HookPlan;
use guidebook_hook::link::SidecarLink;
use guidebook_hook::protocol::deadline_ms;

const DEFAULT_TIMEOUT_MS: u64 = 2000;
/// The token budget for the guideline text one hook injects. Codex shows the model only a
/// preview of `additionalContext` above about 2,500 tokens.
const DEFAULT_MAX_TOKENS: u64 = 2000;
const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;
/// Hook events are a few kilobytes; a bigger stdin is not a hook event worth parsing.
const MAX_STDIN_BYTES: u64 = 16 << 20;

const HELP: &str = "\
guidebook-hook: reads one Codex, Claude Code, Gemini CLI, GitHub Copilot CLI or OpenCode (through
the plugin `guidebook hooks install --opencode` writes) hook event on stdin, asks the Adaptive
Guidebook sidecar which guidelines apply, and prints at most one line of hook output JSON. Always
exits 0.

Usage: guidebook-hook [--socket PATH]

Options:
  --socket PATH   the sidecar's socket (default: $ADAPTIVE_GUIDEBOOK_SOCKET, else
                  $ADAPTIVE_GUIDEBOOK_HOME/sidecar.sock, else ~/.adaptive-guidebook/sidecar.sock)
  -h, --help      print this help
  -V, --version   print the version

Environment:
  ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS   the whole run's budget in ms (default 2000)
  ADAPTIVE_GUIDEBOOK_NO_AUTOSTART=1    never start the sidecar when nothing listens on the socket
  ADAPTIVE_GUIDEBOOK_BIN               the `guidebook` binary to start (default: the one next to
                                       guidebook-hook, else the first on PATH)
  ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS   token budget for the guidelines one hook injects
                                       (default 2000; 0 = no budget); the rest come later
";

/// Held while the hook output is printed, so that the watchdog can never end the process
/// halfway through the line.
static STDOUT_GATE: Mutex<()> = Mutex::new(());

/// What the shim prints when it has nothing to say, set once the event's host is known and
/// wants one (Gemini CLI: see `guidebook_hook::nothing`). The watchdog prints it too.
static NOTHING: OnceLock<&'static str> = OnceLock::new();

macro_rules! diag {
    ($($arg:tt)*) => {
        eprintln!("guidebook-hook: {}", format_args!($($arg)*))
    };
}

fn main() {
    let started = Instant::now();
    // A panic must not reach the host as a crash: report it in one line and exit 0.
    std::panic::set_hook(Box::new(|info| diag!("internal error: {info}")));
    let _ = std::panic::catch_unwind(|| run(started));
}

fn run(started: Instant) {
    let Some(socket_flag) = parse_args() else {
        return;
    };
    let timeout_ms = env_u64("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", DEFAULT_TIMEOUT_MS);
    let max_tokens = match env_u64("ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS", DEFAULT_MAX_TOKENS) {
        0 => None,
        n => Some(n),
    };
    // An absurdly large timeout would overflow `Instant`; a day is as good as forever here.
    let timeout = Duration::from_millis(timeout_ms.min(MAX_TIMEOUT_MS));
    let deadline = started + timeout;
    start_watchdog(deadline, timeout);

    let Some(input) = read_stdin() else {
        return;
    };
    let event = match serde_json::from_slice(&input) {
        Ok(event) => event,
        Err(e) => {
            diag!("stdin is not a JSON hook event: {e}");
            return;
        }
    };
    let socket = socket_flag.or_else(default_socket);
    let Some(hook) = HookPlan::of(&event, || protected_places(socket.as_deref())) else {
        return;
    };
    if let Some(nothing) = guidebook_hook::nothing(hook.shape.host) {
        let _ = NOTHING.set(nothing);
    }
    if hook.guard.is_some() {
        diag!("denied a tool call that would lift the agent's own guardrails");
    }
    let Some(socket) = socket else {
        match hook.guard {
            // A denial needs no sidecar.
            Some(_) => {
                if let Some(line) = hook.run(max_tokens, &mut NoSidecar) {
                    print_line(&line, deadline);
                }
            }
            None => diag!("no socket: set --socket, ADAPTIVE_GUIDEBOOK_SOCKET or HOME"),
        }
        return;
    };
    let autostart = std::env::var_os("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART").is_none_or(|v| v != "1");
    let mut link = ShimLink {
        socket,
        deadline,
        autostart,
    };
    match hook.run(max_tokens, &mut link) {
        Some(line) => print_line(&line, deadline),
        None => {
            if let Some(nothing) = NOTHING.get() {
                print_line(nothing, deadline);
            }
        }
    }
}

/// The shim's way to the sidecar: a connection of its own per call (the client asks the
/// sidecar to close after one answer), all within the run's deadline.
struct ShimLink {
    socket: PathBuf,
    deadline: Instant,
    autostart: bool,
}

impl SidecarLink for ShimLink {
    fn exchange(
        &mut self,
        body: &dyn Fn(u64) -> String,
        may_start: bool,
    ) -> Result<Vec<u8>, ClientError> {
        let connected = if may_start {
            autostart::connect(
                &self.socket,
                self.deadline,
                self.autostart,
                &mut |problem| diag!("{problem}"),
            )
        } else {
            client::connect(&self.socket, self.deadline)
        };
        let exchanged = connected.and_then(|mut stream| {
            // The deadline is measured at the moment of sending, after stdin and the connect.
            let left = self.deadline.saturating_duration_since(Instant::now());
            let body = body(deadline_ms(left));
            client::post(&mut stream, &body, self.deadline)
        });
        exchanged.inspect_err(|e| diag!("{e} ({})", self.socket.display()))
    }

    fn report(&mut self, problem: &str) {
        diag!("{problem}");
    }
}

/// The link when no socket can be named: every exchange fails (only a guard's denial, which
/// asks nothing, gets an answer through it).
struct NoSidecar;

impl SidecarLink for NoSidecar {
    fn exchange(&mut self, _: &dyn Fn(u64) -> String, _: bool) -> Result<Vec<u8>, ClientError> {
        Err(ClientError::Closed)
    }

    fn report(&mut self, problem: &str) {
        diag!("{problem}");
    }
}

/// The sidecar's places the agent may not touch (see `guard`): its home directory, socket,
/// database, flags file and config file, where the environment and `config.yaml` put them.
/// The defaults are the sidecar's; `config.yaml` is read only for its top-level `socket`, `db`,
/// `flags` and `guidebookRoot` lines (this binary parses no YAML), which covers what the
/// sidecar's own sample shows. The guidebook root stays free to use.
fn protected_places(socket: Option<&std::path::Path>) -> Protected {
    let home = env_nonempty("HOME").map(PathBuf::from);
    let Some(sidecar_home) = sidecar_home() else {
        return Protected::new(
            &socket.map(PathBuf::from).into_iter().collect::<Vec<_>>(),
            None,
        );
    };
    let config = env_nonempty("ADAPTIVE_GUIDEBOOK_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| sidecar_home.join("config.yaml"));
    let mut places = vec![sidecar_home.clone()];
    // The guidebook root is the user's to author in, with an agent's help, wherever it is.
    let mut root = env_nonempty("ADAPTIVE_GUIDEBOOK_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| sidecar_home.join("guidebook"));
    places.extend(socket.map(PathBuf::from));
    for (var, default) in [
        ("ADAPTIVE_GUIDEBOOK_DB", "adaptive-guidebook.db"),
        ("ADAPTIVE_GUIDEBOOK_FLAGS", "feature_flags.json"),
    ] {
        places.push(
            env_nonempty(var)
                .map(PathBuf::from)
                .unwrap_or_else(|| sidecar_home.join(default)),
        );
    }
    if let Ok(text) = std::fs::read_to_string(&config) {
        let dir = config.parent().unwrap_or(std::path::Path::new("/"));
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            if !matches!(key, "socket" | "db" | "flags" | "guidebookRoot") {
                continue;
            }
            let value = value.split(" #").next().unwrap_or("").trim();
            let value = value.trim_matches(|c| c == '"' || c == '\'');
            if value.is_empty() {
                continue;
            }
            let path = match (value.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => dir.join(value),
            };
            if key == "guidebookRoot" {
                if env_nonempty("ADAPTIVE_GUIDEBOOK_ROOT").is_none() {
                    root = path;
                }
            } else {
                places.push(path);
            }
        }
    }
    places.push(config);
    Protected::new(&places, home.as_deref()).except(&[root])
}

/// Parses the command line. Returns the `--socket` value, if any, or `None` when the process
/// should stop here (`--help`, `--version`). Unknown arguments are reported and ignored, since
/// a hook configuration mistake must not fail the agent's tool call.
fn parse_args() -> Option<Option<PathBuf>> {
    let mut socket = None;
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        match arg.to_str() {
            // Written without `print!`, which panics when the reader has gone
            // (`guidebook-hook --help | head -1`): a cut-short help ends quietly.
            Some("-h" | "--help") => {
                let _ = io::stdout().write_all(HELP.as_bytes());
                return None;
            }
            Some("-V" | "--version") => {
                let version = format!("guidebook-hook {}\n", env!("CARGO_PKG_VERSION"));
                let _ = io::stdout().write_all(version.as_bytes());
                return None;
            }
            Some("--socket") => match args.next() {
                Some(path) => socket = Some(PathBuf::from(path)),
                None => diag!("--socket needs a path; ignored"),
            },
            Some(other) if other.starts_with("--socket=") => {
                socket = Some(PathBuf::from(&other["--socket=".len()..]));
            }
            _ => diag!("unknown argument {arg:?} ignored"),
        }
    }
    Some(socket)
}

/// The socket when no `--socket` was given: `ADAPTIVE_GUIDEBOOK_SOCKET`, else
/// `$ADAPTIVE_GUIDEBOOK_HOME/sidecar.sock`, else `$HOME/.adaptive-guidebook/sidecar.sock`.
fn default_socket() -> Option<PathBuf> {
    if let Some(socket) = env_nonempty("ADAPTIVE_GUIDEBOOK_SOCKET") {
        return Some(socket.into());
    }
    sidecar_home().map(|home| home.join("sidecar.sock"))
}

/// The sidecar's home directory: `ADAPTIVE_GUIDEBOOK_HOME`, else `$HOME/.adaptive-guidebook`.
fn sidecar_home() -> Option<PathBuf> {
    env_nonempty("ADAPTIVE_GUIDEBOOK_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            env_nonempty("HOME").map(|home| PathBuf::from(home).join(".adaptive-guidebook"))
        })
}

/// An environment variable, treating an empty value as unset.
fn env_nonempty(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|value| !value.is_empty())
}

/// A non-negative integer from the environment, or `default` when unset or unparseable.
fn env_u64(name: &str, default: u64) -> u64 {
    let Some(value) = env_nonempty(name) else {
        return default;
    };
    match value.to_str().and_then(|v| v.trim().parse().ok()) {
        Some(parsed) => parsed,
        None => {
            diag!("{name}={value:?} is not a whole number; using {default}");
            default
        }
    }
}

/// Ends the process, silently and with status 0, once the deadline has passed. The socket
/// timeouts bound the exchange itself, but not a host that never closes stdin nor a connect
/// to a listener whose backlog is full; this thread bounds everything.
fn start_watchdog(deadline: Instant, timeout: Duration) {
    let spawned = std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || {
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
            // Waiting for the gate lets a line already being printed finish whole.
            let _gate = STDOUT_GATE.lock();
            diag!("gave up after {} ms", timeout.as_millis());
            if let Some(nothing) = NOTHING.get() {
                let mut stdout = io::stdout().lock();
                let _ = writeln!(stdout, "{nothing}").and_then(|()| stdout.flush());
            }
            std::process::exit(0);
        });
    if let Err(e) = spawned {
        diag!("cannot start the watchdog: {e}");
    }
}

/// Reads all of stdin, or reports why not and returns `None`.
fn read_stdin() -> Option<Vec<u8>> {
    let mut input = Vec::new();
    let read = io::stdin()
        .lock()
        .take(MAX_STDIN_BYTES + 1)
        .read_to_end(&mut input);
    match read {
        Err(e) => {
            diag!("cannot read stdin: {e}");
            None
        }
        Ok(_) if input.len() as u64 > MAX_STDIN_BYTES => {
            diag!(
                "stdin is larger than {} MiB; ignored",
                MAX_STDIN_BYTES >> 20
            );
            None
        }
        Ok(_) => Some(input),
    }
}

/// Prints the hook output, unless the deadline has passed: an answer the host has stopped
/// waiting for must not appear.
fn print_line(line: &str, deadline: Instant) {
    let _gate = STDOUT_GATE.lock();
    if Instant::now() >= deadline {
        diag!("answer arrived too late; dropped");
        return;
    }
    let mut stdout = io::stdout().lock();
    if let Err(e) = writeln!(stdout, "{line}").and_then(|()| stdout.flush()) {
        diag!("cannot write stdout: {e}");
    }
}
