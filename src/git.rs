//! Runs git for the daemon and the CLI: in a given work tree, with the caller's own git
//! environment removed, no prompt and no optional lock, bounded in time and output, its output
//! read on threads of its own so that a long answer cannot stall it. Reads: the repository.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one git command printed, and whether it succeeded.
#[derive(Debug)]
pub(crate) struct GitRun {
    pub success: bool,
    pub stdout: Vec<u8>,
    /// Its standard error, at most [`MAX_STDERR_BYTES`], lossily decoded.
    pub stderr: String,
}

/// Why a git command gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum GitFailure {
    #[error("cannot run git: {0}")]
    Spawn(std::io::Error),
    #[error("git did not finish within {0:?}")]
    TimedOut(Duration),
    #[error("git printed more than {0} bytes")]
    TooLong(usize),
}

/// The most standard error kept from one git command.
const MAX_STDERR_BYTES: u64 = 64 << 10;

/// Runs `git -C root --literal-pathspecs ARGS` with the caller's own git environment removed
/// (`GIT_DIR` and the like would point it at another repository), no prompt and no optional
/// lock, bounded by `timeout` and by `max_stdout` bytes of output.
pub(crate) fn run_git(
    root: &Path,
    args: &[&std::ffi::OsStr],
    timeout: Duration,
    max_stdout: usize,
) -> Result<GitRun, GitFailure> {
    let mut child = git_command(root)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(GitFailure::Spawn)?;
    // Read on threads of their own, so a long diff cannot fill a pipe and stall git.
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let read = stdout.take(max_stdout as u64 + 1).read_to_end(&mut out);
        read.ok().map(|_| out)
    });
    let errors = std::thread::spawn(move || {
        let mut err = Vec::new();
        let _ = stderr.take(MAX_STDERR_BYTES).read_to_end(&mut err);
        String::from_utf8_lossy(&err).into_owned()
    });
    let status = wait_bounded(&mut child, timeout)?;
    let out = reader.join().ok().flatten().unwrap_or_default();
    let stderr = errors.join().unwrap_or_default();
    if out.len() > max_stdout {
        return Err(GitFailure::TooLong(max_stdout));
    }
    Ok(GitRun {
        success: status.success(),
        stdout: out,
        stderr,
    })
}

/// `git -C root --literal-pathspecs`, isolated from the caller's git environment.
pub(crate) fn git_command(root: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(root)
        .arg("--literal-pathspecs")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_COMMON_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0");
    command
}

/// Waits for `child`, killing it once `timeout` has passed.
pub(crate) fn wait_bounded(
    child: &mut std::process::Child,
    timeout: Duration,
) -> Result<std::process::ExitStatus, GitFailure> {
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if started.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GitFailure::TimedOut(timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(GitFailure::Spawn(e)),
        }
    }
}
