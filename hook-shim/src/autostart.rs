//! Starts the sidecar on demand when nothing listens on its socket, within the caller's deadline.
//!
//! One caller (a shim, or `guidebook mcp`) starts `guidebook serve` detached and every other
//! waits for it. Reads: the socket, the environment (`ADAPTIVE_GUIDEBOOK_BIN`, `PATH`).
//! Writes: `<socket>.start.lock`, the sidecar's log next to the socket.
//!
//! Many hooks fire at once (parallel tool calls, several agents), so many shims can find the
//! socket missing at the same moment. An exclusive `flock` on `<socket>.start.lock` elects the
//! one that starts the daemon; the others poll the socket until it answers. The winner keeps
//! the lock until the daemon accepts connections, so that no shim starts a second one while the
//! first is still loading its guidebook. (Were a second daemon started anyway, for example after
//! the winner was killed mid-start, the daemon's own `<socket>.lock` would make it exit at once.)

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::client::{self, ClientError};

/// How often a waiting shim tries the socket again. A cold start takes most of a second, so a
/// few dozen tries at most.
const POLL: Duration = Duration::from_millis(10);

/// Connects to the sidecar on `socket`. When `autostart` is on and nothing listens there (the
/// socket is missing, or a crash left it behind and connecting is refused), starts the sidecar
/// or waits for the one that is starting it, until `deadline`. What went wrong, and a start,
/// are told to `report`.
pub fn connect(
    socket: &Path,
    deadline: Instant,
    autostart: bool,
    report: &mut dyn FnMut(&str),
) -> Result<UnixStream, ClientError> {
    let refused = match client::connect(socket, deadline) {
        Err(ClientError::Connect(e)) if autostart && nobody_listens(&e) => e,
        other => return other,
    };
    let lock = match open_start_lock(socket) {
        Ok(lock) => lock,
        Err(e) => {
            report(&format!("cannot start the sidecar: {e}"));
            return Err(ClientError::Connect(refused));
        }
    };
    // Held from the moment this shim decides to start the daemon until it answers (or this
    // process ends, which releases the lock too).
    let mut starting = false;
    loop {
        if !starting {
            match lock.try_lock() {
                Ok(()) => {
                    // Another shim may have started the daemon between our connect and the lock.
                    match client::connect(socket, deadline) {
                        Err(ClientError::Connect(e)) if nobody_listens(&e) => {}
                        other => return other,
                    }
                    if let Err(e) = spawn_daemon(socket, report) {
                        report(&format!("cannot start the sidecar: {e}"));
                        return Err(ClientError::Connect(refused));
                    }
                    starting = true;
                }
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => {
                    report(&format!(
                        "cannot lock {}: {e}",
                        start_lock_path(socket).display()
                    ));
                    return Err(ClientError::Connect(refused));
                }
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ClientError::TimedOut);
        }
        std::thread::sleep(POLL.min(left));
        match client::connect(socket, deadline) {
            Err(ClientError::Connect(e)) if nobody_listens(&e) => {}
            other => return other,
        }
    }
}

/// Missing or refused: no daemon is there, so starting one can help. Anything else (permission
/// denied, a path that is not a socket) a new daemon would not fix.
fn nobody_listens(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
    )
}

fn start_lock_path(socket: &Path) -> PathBuf {
    let mut path = socket.as_os_str().to_owned();
    path.push(".start.lock");
    PathBuf::from(path)
}

/// The daemon's log when a shim started it: the socket's name with `.log`, so the default
/// `HOME_DIR/sidecar.sock` logs to `HOME_DIR/sidecar.log`.
pub fn log_path(socket: &Path) -> PathBuf {
    socket.with_extension("log")
}

/// Opens (creating) the start lock, and the socket's directory with it, private as the daemon
/// would make them.
fn open_start_lock(socket: &Path) -> io::Result<File> {
    if let Some(dir) = socket.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| with_path(e, "creating", dir))?;
    }
    let path = start_lock_path(socket);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(O_NOFOLLOW)
        .open(&path)
        .map_err(|e| with_path(e, "opening", &path))?;
    regular(file, &path)
}

/// `O_NOFOLLOW`, which std does not name: the lock and the log are opened only if they are not
/// symlinks, so a link planted at their place cannot make a shim write elsewhere.
#[cfg(any(
    target_os = "macos",
    target_os = "ios",
    target_os = "freebsd",
    target_os = "openbsd",
    target_os = "netbsd",
    target_os = "dragonfly"
))]
const O_NOFOLLOW: i32 = 0x100;
#[cfg(all(
    target_os = "linux",
    any(
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "powerpc",
        target_arch = "powerpc64"
    )
))]
const O_NOFOLLOW: i32 = 0o100000;
#[cfg(all(
    target_os = "linux",
    not(any(
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "powerpc",
        target_arch = "powerpc64"
    ))
))]
const O_NOFOLLOW: i32 = 0o400000;

/// `file` if it is a regular file: a FIFO or a device at the lock's or the log's place is not
/// ours to write.
fn regular(file: File, path: &Path) -> io::Result<File> {
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ))
    }
}

/// Starts `guidebook serve --socket SOCKET` detached: no terminal, stdin and stdout on
/// `/dev/null`, stderr appended to the log next to the socket, its own process group (so the
/// agent's Ctrl-C or a kill of the hook's group does not reach it), `/` as its working
/// directory (so it never pins a project directory). Its settings come from the inherited
/// environment; `--socket` makes it listen where this shim looks, whatever `config.yaml` says.
fn spawn_daemon(socket: &Path, report: &mut dyn FnMut(&str)) -> io::Result<()> {
    let daemon = find_daemon().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "no `guidebook` binary next to this program, in $ADAPTIVE_GUIDEBOOK_BIN or on PATH",
        )
    })?;
    let log_path = log_path(socket);
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(O_NOFOLLOW)
        .open(&log_path)
        .map_err(|e| with_path(e, "opening", &log_path))?;
    let mut log = regular(log, &log_path)?;
    let child = Command::new(&daemon)
        .arg("serve")
        .arg("--socket")
        .arg(socket)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log.try_clone()?)
        .current_dir("/")
        .process_group(0)
        .spawn()
        .map_err(|e| with_path(e, "running", &daemon))?;
    // One line per start in the daemon's own log says who started it and how to find it. The
    // child is not waited for: it outlives this process and is reaped by whoever inherits it.
    let starter = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "guidebook-hook".to_owned());
    let _ = writeln!(
        log,
        "{starter}: started `{} serve --socket {}` (pid {})",
        daemon.display(),
        socket.display(),
        child.id()
    );
    report(&format!(
        "started the sidecar (pid {}); its log is {}",
        child.id(),
        log_path.display()
    ));
    Ok(())
}

/// The `guidebook` binary: `$ADAPTIVE_GUIDEBOOK_BIN` if set, else the one next to the running
/// program (the shim and `guidebook` are installed together; `guidebook mcp` finds itself),
/// else the first on `PATH`.
fn find_daemon() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("ADAPTIVE_GUIDEBOOK_BIN").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(bin));
    }
    let sibling = std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name("guidebook"))
        .filter(|p| is_executable(p));
    sibling.or_else(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join("guidebook"))
            .find(|p| p.is_absolute() && is_executable(p))
    })
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn with_path(e: io::Error, doing: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{doing} {}: {e}", path.display()))
}
