//! Team guidebooks kept in git: fetched into `HOME_DIR/sources/<name>`, refreshed in the
//! background with last-good semantics. Reads and writes: `HOME_DIR/sources/<name>/` (the
//! checkout, `state.json`, a lock file); runs git through [`crate::git::run_git`].
//!
//! Layout of one source's directory:
//! - `checkout/`: the work tree the guidebook loads, detached at the fetched commit. It only ever
//!   moves from one good revision to the next; a failed refresh leaves it untouched.
//! - `state.json`: [`TeamState`], written atomically after every attempt, read by `status` and
//!   by `doctor` (which has no daemon).
//! - `refresh.lock`: held for a whole refresh, so two processes sharing a `HOME_DIR` never run git
//!   in the same checkout at once.
//! - `.checkout.tmp/`, `.checkout.old/`: only during a first clone (or a re-clone of a broken
//!   checkout); a clone lands in `.checkout.tmp/` and is renamed into place once complete.
//!
//! Git never runs code the team repository chose: hooks are off (`core.hooksPath=/dev/null`,
//! an empty template), and the only repository config git reads is the `.git/config` this module
//! had `git clone` write (a clone never copies the remote's config). Symbolic links in the team
//! repository are checked out as plain files holding the link text (`core.symlinks=false`), so a
//! `guideline.yaml -> ~/.ssh/id_rsa` cannot pull a local file into the guidebook.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::TeamGuidebook;
use crate::git::{run_git, GitFailure};

/// The longest a first clone may take (a large repository over a slow link).
const CLONE_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest a fetch of one ref may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest a local step (rev-parse, checkout, clean) may take.
const LOCAL_TIMEOUT: Duration = Duration::from_secs(60);
/// The most standard output kept from one git command (we only read commit ids).
const MAX_STDOUT: usize = 64 << 10;
/// The most of git's error text kept in `state.json`.
const MAX_ERROR_CHARS: usize = 600;
/// How long [`Refresher::stop`] waits for a refresh in flight before leaving it to finish alone.
const STOP_WAIT: Duration = Duration::from_secs(2);

const CHECKOUT: &str = "checkout";
const CLONE_TMP: &str = ".checkout.tmp";
const CLONE_OLD: &str = ".checkout.old";
const STATE_FILE: &str = "state.json";
const LOCK_NAME: &str = "refresh";

/// Configuration given to every git command this module runs, before the subcommand. Hooks off,
/// no file-system monitor daemon left behind, no submodules, links as plain files, objects
/// checked as they arrive, and the `ext::` transport off even if the user's config allows it.
const SAFE_CONFIG: &[&str] = &[
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.symlinks=false",
    "-c",
    "submodule.recurse=false",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "transfer.fsckObjects=true",
];

/// What a successful refresh left in the checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refreshed {
    /// The commit the checkout is now at (full hex id).
    pub revision: String,
    /// Whether the checkout moved (or was made for the first time).
    pub changed: bool,
}

/// Why a refresh failed. Every one leaves the last good checkout as it was.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TeamError {
    #[error("refusing url `{url}`: {why}")]
    BadUrl { url: String, why: &'static str },
    #[error("refusing ref `{git_ref}`: {why}")]
    BadRef { git_ref: String, why: &'static str },
    #[error("git {step} failed: {message}")]
    Git { step: &'static str, message: String },
    #[error("git {step}: {source}")]
    Run {
        step: &'static str,
        #[source]
        source: GitFailure,
    },
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("another process is refreshing {}: {source}", path.display())]
    Busy {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// A team source's last refresh, as `state.json` keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TeamState {
    pub name: String,
    /// The URL of the last attempt.
    pub url: String,
    /// The ref of the last attempt (`None`: the remote's default branch).
    #[serde(rename = "ref", default)]
    pub git_ref: Option<String>,
    /// The commit the checkout is at; `None` until a first clone succeeded.
    #[serde(default)]
    pub revision: Option<String>,
    /// When a refresh last succeeded (the checkout was then the remote's newest), RFC 3339.
    #[serde(default)]
    pub fetched_at: Option<String>,
    /// When a refresh was last tried, RFC 3339.
    #[serde(default)]
    pub last_attempt_at: Option<String>,
    /// Why the last attempt failed; `None` when it succeeded.
    #[serde(default)]
    pub error: Option<String>,
}

impl TeamState {
    /// Seconds since the last good fetch, if there was one.
    pub(crate) fn age_seconds(&self) -> Option<u64> {
        let at = crate::time::parse_rfc3339(self.fetched_at.as_deref()?)?;
        Some(crate::time::now_epoch().saturating_sub(at).max(0) as u64)
    }

    /// The state of a source nothing has been tried for yet.
    fn fresh(team: &TeamGuidebook) -> TeamState {
        TeamState {
            name: team.name.clone(),
            url: team.url.clone(),
            git_ref: team.git_ref.clone(),
            ..TeamState::default()
        }
    }

    /// `team`'s `state.json`; a fresh state (no revision) when it is missing or unreadable, or
    /// names another source.
    pub(crate) fn read(team: &TeamGuidebook) -> TeamState {
        fs::read(team.dir.join(STATE_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<TeamState>(&bytes).ok())
            .filter(|state| state.name == team.name)
            .unwrap_or_else(|| TeamState::fresh(team))
    }

    /// Writes `dir/state.json` atomically.
    fn write(&self, dir: &Path) -> io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        bytes.push(b'\n');
        crate::flags::write::replace(&dir.join(STATE_FILE), &bytes)
    }
}

/// One team guidebook: its checkout, its refresh, its recorded state.
#[derive(Debug, Clone)]
pub(crate) struct TeamSource {
    team: TeamGuidebook,
}

impl TeamSource {
    pub(crate) fn new(team: TeamGuidebook) -> TeamSource {
        TeamSource { team }
    }

    pub(crate) fn team(&self) -> &TeamGuidebook {
        &self.team
    }

    /// The work tree whose guideline files the guidebook loads: `dir/checkout`. The path never
    /// changes; it does not exist until a first clone succeeded.
    pub(crate) fn checkout_dir(&self) -> PathBuf {
        self.team.dir.join(CHECKOUT)
    }

    /// The recorded state (`state.json`).
    pub(crate) fn state(&self) -> TeamState {
        TeamState::read(&self.team)
    }

    /// Brings the checkout to the newest commit of the configured ref: a shallow clone the first
    /// time, a shallow fetch and a forced detached checkout afterwards. Records the attempt in
    /// `state.json` either way. A failure leaves the last good checkout untouched; a failed
    /// first clone leaves no checkout at all. While another process refreshes the same source,
    /// fails with [`TeamError::Busy`] and records nothing.
    pub(crate) fn refresh(&self) -> Result<Refreshed, TeamError> {
        let dir = &self.team.dir;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| TeamError::Io {
                what: "cannot create",
                path: dir.clone(),
                source,
            })?;
        let lock_path = dir.join(LOCK_NAME);
        let _lock =
            crate::flags::write::lock(&lock_path).map_err(|source| match source.kind() {
                io::ErrorKind::WouldBlock => TeamError::Busy {
                    path: dir.clone(),
                    source,
                },
                _ => TeamError::Io {
                    what: "cannot lock",
                    path: lock_path.clone(),
                    source,
                },
            })?;
        let attempted_at = crate::time::now_rfc3339();
        let outcome = self.refresh_locked();

        let mut state = self.state();
        state.name = self.team.name.clone();
        state.last_attempt_at = Some(attempted_at.clone());
        match &outcome {
            Ok(done) => {
                state.url = self.team.url.clone();
                state.git_ref = self.team.git_ref.clone();
                state.revision = Some(done.revision.clone());
                // The remote's newest as of the attempt (one timestamp: a second boundary
                // between two clock readings made the two fields differ).
                state.fetched_at = Some(attempted_at);
                state.error = None;
            }
            Err(e) => {
                // The checkout is what it was; say what it is if state.json had lost it.
                if state.revision.is_none() {
                    state.revision = head(&self.checkout_dir()).ok();
                }
                state.error = Some(e.to_string());
            }
        }
        if let Err(e) = state.write(dir) {
            tracing::warn!(team = %self.team.name, error = %e, "cannot write the team guidebook's state.json");
        }
        outcome
    }

    fn refresh_locked(&self) -> Result<Refreshed, TeamError> {
        check_url(&self.team.url)?;
        if let Some(r) = &self.team.git_ref {
            check_ref(r)?;
        }
        let checkout = self.checkout_dir();
        let before = if checkout.join(".git").is_dir() {
            head(&checkout).ok()
        } else {
            None
        };
        match before {
            None => {
                self.clone_into_place()?;
                Ok(Refreshed {
                    revision: head(&checkout)?,
                    changed: true,
                })
            }
            Some(old) => {
                let new = self.fetch(&checkout)?;
                // Always forced, so that a checkout someone edited by hand heals too.
                git(
                    &checkout,
                    "checkout",
                    &["checkout", "--quiet", "--force", "--detach", &new],
                    LOCAL_TIMEOUT,
                )?;
                git(&checkout, "clean", &["clean", "-ffdxq"], LOCAL_TIMEOUT)?;
                Ok(Refreshed {
                    changed: new != old,
                    revision: new,
                })
            }
        }
    }

    /// A shallow clone into `.checkout.tmp`, renamed to `checkout` once whole (moving a broken
    /// checkout aside first). On failure nothing of it is left.
    fn clone_into_place(&self) -> Result<(), TeamError> {
        let dir = &self.team.dir;
        let tmp = dir.join(CLONE_TMP);
        let old = dir.join(CLONE_OLD);
        // Left by a process killed mid-clone; we hold the lock, so no one else owns them.
        remove_dir_if_present(&tmp)?;
        remove_dir_if_present(&old)?;
        let mut args: Vec<&str> = vec![
            "clone",
            "--quiet",
            // No template: no hooks or other files from the user's init.templateDir.
            "--template=",
            // A local path is fetched as a remote would be (shallow, objects checked), not
            // copied or hard-linked.
            "--no-local",
            "--depth",
            "1",
            "--no-tags",
            "--single-branch",
            "--config",
            "core.symlinks=false",
            "--config",
            "core.hooksPath=/dev/null",
        ];
        if let Some(r) = &self.team.git_ref {
            args.extend(["--branch", r.as_str()]);
        }
        args.extend(["--", self.team.url.as_str(), CLONE_TMP]);
        let cloned = git(dir, "clone", &args, CLONE_TIMEOUT);
        if let Err(e) = cloned {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
        let checkout = self.checkout_dir();
        let io_err = |what, path: &Path| {
            let path = path.to_path_buf();
            move |source| TeamError::Io { what, path, source }
        };
        if fs::symlink_metadata(&checkout).is_ok() {
            fs::rename(&checkout, &old).map_err(io_err("cannot move aside", &checkout))?;
        }
        if let Err(e) = fs::rename(&tmp, &checkout) {
            let _ = fs::remove_dir_all(&tmp);
            let _ = fs::rename(&old, &checkout);
            return Err(io_err("cannot rename the clone to", &checkout)(e));
        }
        remove_dir_if_present(&old)
    }

    /// Fetches the configured ref (the remote's HEAD when none) with depth 1; the commit it
    /// names.
    fn fetch(&self, checkout: &Path) -> Result<String, TeamError> {
        let what = self.team.git_ref.as_deref().unwrap_or("HEAD");
        git(
            checkout,
            "fetch",
            &[
                "fetch",
                "--quiet",
                "--depth",
                "1",
                "--no-tags",
                // From the configured URL, not `origin`: a URL changed in config.yaml applies.
                "--",
                self.team.url.as_str(),
                what,
            ],
            FETCH_TIMEOUT,
        )?;
        rev_parse(checkout, "FETCH_HEAD^{commit}")
    }
}

/// Refuses what would make `git clone`/`git fetch` read an option or run a command.
fn check_url(url: &str) -> Result<(), TeamError> {
    let bad = |why| {
        Err(TeamError::BadUrl {
            url: url.to_string(),
            why,
        })
    };
    let lower = url.to_ascii_lowercase();
    if url.trim().is_empty() {
        bad("it is empty")
    } else if url.starts_with('-') {
        bad("it starts with `-`, which git would read as an option")
    } else if lower.starts_with("ext::") || lower.starts_with("fd::") {
        bad("the ext:: and fd:: transports run commands or use descriptors; use https, ssh or a path")
    } else if url.chars().any(|c| c.is_control()) {
        bad("it holds a control character")
    } else {
        Ok(())
    }
}

/// Refuses a ref that is an option, a refspec (`src:dst` would write a local ref) or a revision
/// expression rather than a branch or tag name.
fn check_ref(r: &str) -> Result<(), TeamError> {
    let bad = |why| {
        Err(TeamError::BadRef {
            git_ref: r.to_string(),
            why,
        })
    };
    if r.is_empty() {
        bad("it is empty")
    } else if r.starts_with('-') {
        bad("it starts with `-`, which git would read as an option")
    } else if r.contains("..")
        || r.chars().any(|c| {
            c.is_control()
                || c.is_whitespace()
                || matches!(c, ':' | '^' | '~' | '?' | '*' | '[' | '\\')
        })
    {
        bad("name a branch or a tag")
    } else {
        Ok(())
    }
}

/// The commit `root` is checked out at.
fn head(root: &Path) -> Result<String, TeamError> {
    rev_parse(root, "HEAD")
}

fn rev_parse(root: &Path, what: &str) -> Result<String, TeamError> {
    let out = git(
        root,
        "rev-parse",
        &["rev-parse", "--verify", "--quiet", what],
        LOCAL_TIMEOUT,
    )?;
    let id = String::from_utf8_lossy(&out).trim().to_string();
    if id.len() >= 40 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(id)
    } else {
        Err(TeamError::Git {
            step: "rev-parse",
            message: format!("`{what}` gave no commit id"),
        })
    }
}

/// `git SAFE_CONFIG ARGS` in `root`; its standard output, or its error text.
fn git(
    root: &Path,
    step: &'static str,
    args: &[&str],
    timeout: Duration,
) -> Result<Vec<u8>, TeamError> {
    let all: Vec<&OsStr> = SAFE_CONFIG
        .iter()
        .chain(args)
        .map(|a| OsStr::new(*a))
        .collect();
    let run = run_git(root, &all, timeout, MAX_STDOUT)
        .map_err(|source| TeamError::Run { step, source })?;
    if run.success {
        Ok(run.stdout)
    } else {
        Err(TeamError::Git {
            step,
            message: error_text(&run.stderr),
        })
    }
}

/// Git's error text on one line, capped.
fn error_text(stderr: &str) -> String {
    let joined = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if joined.is_empty() {
        return "no message".to_string();
    }
    guidebook_hook::ellipsize(&joined, MAX_ERROR_CHARS)
}

fn remove_dir_if_present(path: &Path) -> Result<(), TeamError> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(TeamError::Io {
            what: "cannot remove",
            path: path.to_path_buf(),
            source: e,
        }),
        _ => Ok(()),
    }
}

enum Wake {
    // Sent by `refresh_now`, which nothing outside the tests calls yet.
    #[cfg_attr(not(test), allow(dead_code))]
    Now,
    Stop,
}

/// The background refresher's thread. Dropping it (or [`Refresher::stop`]) ends it.
pub(crate) struct Refresher {
    wake: mpsc::Sender<Wake>,
    done: mpsc::Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

impl Refresher {
    /// Refreshes every team now, then goes on with each one's interval from there (for a
    /// "refresh now" command; the daemon does not offer one yet).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn refresh_now(&self) {
        let _ = self.wake.send(Wake::Now);
    }

    /// Ends the thread: at once when it is waiting, after the current git command when it is
    /// refreshing, waiting for that at most [`STOP_WAIT`] (past it, the thread finishes alone
    /// and nothing waits for it). Dropping it does the same.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        let _ = self.wake.send(Wake::Stop);
        match self.done.recv_timeout(STOP_WAIT) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                let _ = thread.join();
            }
            Err(RecvTimeoutError::Timeout) => {
                tracing::warn!(
                    "a team guidebook refresh is still running at shutdown; not waiting for it"
                );
            }
        }
    }
}

impl Drop for Refresher {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Each configured team guidebook's name and the checkout its guidelines are loaded from.
pub(crate) fn checkouts(settings: &crate::config::Settings) -> Vec<(String, PathBuf)> {
    settings
        .team_guidebooks
        .iter()
        .map(|t| (t.name.clone(), TeamSource::new(t.clone()).checkout_dir()))
        .collect()
}

/// One thread that refreshes every team once at start, then each every `refresh_minutes`, and
/// calls `on_updated(name)` whenever a refresh moved a checkout (or made the first one).
pub(crate) fn spawn_refresher(
    teams: Vec<TeamGuidebook>,
    on_updated: impl Fn(&str) + Send + Sync + 'static,
) -> Refresher {
    spawn_refresher_every(teams, None, on_updated)
}

/// [`spawn_refresher`] with every team's interval replaced by `every` when given (tests).
pub(crate) fn spawn_refresher_every(
    teams: Vec<TeamGuidebook>,
    every: Option<Duration>,
    on_updated: impl Fn(&str) + Send + Sync + 'static,
) -> Refresher {
    let (wake, woken) = mpsc::channel();
    let (finished, done) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("team-refresh".into())
        .spawn(move || {
            refresh_loop(teams, every, &woken, &on_updated);
            let _ = finished.send(());
        })
        .expect("spawning the team guidebook refresher");
    Refresher {
        wake,
        done,
        thread: Some(thread),
    }
}

fn refresh_loop(
    teams: Vec<TeamGuidebook>,
    every: Option<Duration>,
    woken: &mpsc::Receiver<Wake>,
    on_updated: &dyn Fn(&str),
) {
    let sources: Vec<(TeamSource, Duration)> = teams
        .into_iter()
        .map(|team| {
            let interval = every.unwrap_or(Duration::from_secs(
                team.refresh_minutes.max(1).saturating_mul(60),
            ));
            (TeamSource::new(team), interval)
        })
        .collect();
    let mut due = vec![Instant::now(); sources.len()];
    loop {
        let mut again = false;
        for (i, (source, interval)) in sources.iter().enumerate() {
            if due[i] > Instant::now() {
                continue;
            }
            // A stop that arrived during the previous refresh ends the loop before the next.
            match woken.try_recv() {
                Ok(Wake::Stop) | Err(mpsc::TryRecvError::Disconnected) => return,
                Ok(Wake::Now) => again = true,
                Err(mpsc::TryRecvError::Empty) => {}
            }
            let name = &source.team().name;
            match source.refresh() {
                Ok(done) if done.changed => {
                    tracing::info!(team = %name, revision = %done.revision, "team guidebook updated");
                    on_updated(name);
                }
                Ok(_) => tracing::debug!(team = %name, "team guidebook unchanged"),
                Err(e) => {
                    tracing::warn!(team = %name, error = %e, "team guidebook refresh failed; keeping the last good checkout")
                }
            }
            due[i] = Instant::now() + *interval;
        }
        if again {
            due.fill(Instant::now());
            continue;
        }
        let wait = due
            .iter()
            .min()
            .map(|next| next.saturating_duration_since(Instant::now()));
        let woke = match wait {
            Some(wait) => woken.recv_timeout(wait),
            None => woken.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match woke {
            Ok(Wake::Now) => due.fill(Instant::now()),
            Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::Locked;
    use std::process::{Command, Stdio};
    use std::sync::{Arc, Mutex};

    /// Runs git for the test's own setup (the "team" side), isolated from the machine's config.
    fn sh_git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=Team",
                "-c",
                "user.email=team@example.invalid",
            ])
            .args([
                "-c",
                "init.defaultBranch=main",
                "-c",
                "commit.gpgSign=false",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
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
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A team remote (bare repository) and a work repository that pushes to it.
    struct Remote {
        _tmp: tempfile::TempDir,
        bare: PathBuf,
        work: PathBuf,
        home: PathBuf,
    }

    impl Remote {
        fn new() -> Remote {
            let tmp = tempfile::tempdir().unwrap();
            let bare = tmp.path().join("team.git");
            let work = tmp.path().join("work");
            let home = tmp.path().join("home");
            fs::create_dir_all(&bare).unwrap();
            fs::create_dir_all(&work).unwrap();
            sh_git(&bare, &["init", "-q", "--bare"]);
            sh_git(&work, &["init", "-q"]);
            sh_git(&work, &["remote", "add", "origin", bare.to_str().unwrap()]);
            Remote {
                _tmp: tmp,
                bare,
                work,
                home,
            }
        }

        /// Writes `id`'s guideline with `content` and pushes a commit to `branch`; its id.
        fn push_guideline(&self, id: &str, content: &str, branch: &str) -> String {
            let dir = self.work.join("guidelines").join(id);
            fs::create_dir_all(&dir).unwrap();
            fs::write(
                dir.join("guideline.yaml"),
                format!("id: {id}\ncontent: {content}\n"),
            )
            .unwrap();
            self.commit_and_push(&format!("{id}: {content}"), branch)
        }

        fn commit_and_push(&self, message: &str, branch: &str) -> String {
            sh_git(&self.work, &["add", "-A"]);
            sh_git(&self.work, &["commit", "-q", "-m", message]);
            sh_git(
                &self.work,
                &["push", "-q", "origin", &format!("HEAD:refs/heads/{branch}")],
            );
            sh_git(&self.work, &["rev-parse", "HEAD"])
        }

        fn team(&self, git_ref: Option<&str>) -> TeamGuidebook {
            TeamGuidebook {
                name: "acme".into(),
                url: self.bare.display().to_string(),
                git_ref: git_ref.map(str::to_string),
                refresh_minutes: 15,
                dir: self.home.join("sources").join("acme"),
            }
        }
    }

    fn guideline(source: &TeamSource, id: &str) -> String {
        fs::read_to_string(
            source
                .checkout_dir()
                .join("guidelines")
                .join(id)
                .join("guideline.yaml"),
        )
        .unwrap()
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn first_refresh_clones_the_remote_shallowly_into_a_stable_checkout() {
        let remote = Remote::new();
        remote.push_guideline("one", "first", "main");
        let tip = remote.push_guideline("two", "second", "main");
        let source = TeamSource::new(remote.team(None));

        let done = source.refresh().unwrap();
        assert_eq!(
            done,
            Refreshed {
                revision: tip.clone(),
                changed: true
            }
        );
        assert_eq!(
            source.checkout_dir(),
            remote.home.join("sources/acme/checkout")
        );
        assert!(guideline(&source, "two").contains("second"));
        // Depth 1: only the tip commit is there.
        assert!(source.checkout_dir().join(".git/shallow").is_file());
        assert_eq!(
            sh_git(&source.checkout_dir(), &["rev-list", "--count", "HEAD"]),
            "1"
        );
        // Nothing but the checkout, the state and the lock file.
        assert_eq!(
            entries(&source.team().dir),
            ["checkout", "refresh.lock", "state.json"]
        );
        let state = source.state();
        assert_eq!(state.revision.as_deref(), Some(tip.as_str()));
        assert!(state.fetched_at.is_some() && state.error.is_none());
        assert_eq!(state.fetched_at, state.last_attempt_at);
    }

    #[test]
    fn a_pushed_commit_moves_the_checkout_and_reports_changed() {
        let remote = Remote::new();
        let first = remote.push_guideline("one", "first", "main");
        let source = TeamSource::new(remote.team(None));
        assert_eq!(source.refresh().unwrap().revision, first);

        let second = remote.push_guideline("one", "amended", "main");
        remote.push_guideline("three", "new", "main");
        fs::remove_dir_all(remote.work.join("guidelines/three")).unwrap();
        let third = remote.commit_and_push("drop three", "main");
        assert_ne!(first, second);

        let done = source.refresh().unwrap();
        assert_eq!(
            done,
            Refreshed {
                revision: third.clone(),
                changed: true
            }
        );
        assert!(guideline(&source, "one").contains("amended"));
        // A file the remote deleted is gone from the work tree too.
        assert!(!source.checkout_dir().join("guidelines/three").exists());
        assert_eq!(
            sh_git(&source.checkout_dir(), &["rev-parse", "HEAD"]),
            third
        );
        assert_eq!(source.state().revision.as_deref(), Some(third.as_str()));
    }

    #[test]
    fn a_refresh_without_a_new_commit_reports_unchanged() {
        let remote = Remote::new();
        let tip = remote.push_guideline("one", "first", "main");
        let source = TeamSource::new(remote.team(None));
        source.refresh().unwrap();
        let path = source.checkout_dir().join("guidelines/one/guideline.yaml");
        let stamp = |p: &Path| {
            use std::os::unix::fs::MetadataExt;
            let m = fs::metadata(p).unwrap();
            (m.ino(), m.modified().unwrap())
        };
        let before = stamp(&path);
        let done = source.refresh().unwrap();
        assert_eq!(
            done,
            Refreshed {
                revision: tip,
                changed: false
            }
        );
        // Not rewritten: a watcher on the checkout sees nothing and the guidebook is not reloaded.
        assert_eq!(stamp(&path), before);
    }

    #[test]
    fn a_hand_edited_checkout_is_restored_by_the_next_refresh() {
        let remote = Remote::new();
        remote.push_guideline("one", "first", "main");
        let source = TeamSource::new(remote.team(None));
        source.refresh().unwrap();
        let path = source.checkout_dir().join("guidelines/one/guideline.yaml");
        fs::write(&path, "id: one\ncontent: tampered\n").unwrap();
        let stray = source
            .checkout_dir()
            .join("guidelines/stray/guideline.yaml");
        fs::create_dir_all(stray.parent().unwrap()).unwrap();
        fs::write(&stray, "id: stray\ncontent: x\n").unwrap();

        assert!(!source.refresh().unwrap().changed);
        assert!(guideline(&source, "one").contains("first"));
        assert!(!stray.exists());
    }

    #[test]
    fn an_unreachable_remote_keeps_the_checkout_and_revision_and_records_the_error() {
        let remote = Remote::new();
        let tip = remote.push_guideline("one", "first", "main");
        let source = TeamSource::new(remote.team(None));
        source.refresh().unwrap();
        let good = source.state();

        let gone = remote.bare.with_extension("gone");
        fs::rename(&remote.bare, &gone).unwrap();
        let err = source.refresh().unwrap_err();
        assert!(matches!(err, TeamError::Git { step: "fetch", .. }), "{err}");
        assert!(guideline(&source, "one").contains("first"));
        assert_eq!(sh_git(&source.checkout_dir(), &["rev-parse", "HEAD"]), tip);
        let state = source.state();
        assert_eq!(state.revision.as_deref(), Some(tip.as_str()));
        assert_eq!(state.fetched_at, good.fetched_at);
        assert!(state.last_attempt_at.is_some());
        let message = state.error.expect("the error is recorded");
        assert!(message.contains("fetch"), "{message}");
        assert!(message.contains("team.git"), "{message}");

        // Back online: the error clears.
        fs::rename(&gone, &remote.bare).unwrap();
        assert!(!source.refresh().unwrap().changed);
        assert_eq!(source.state().error, None);
    }

    #[test]
    fn a_ref_can_name_a_branch_or_a_tag() {
        let remote = Remote::new();
        remote.push_guideline("one", "on-main", "main");
        let release = remote.push_guideline("one", "on-release", "release");
        sh_git(&remote.work, &["tag", "-a", "-m", "v1", "v1"]);
        sh_git(&remote.work, &["push", "-q", "origin", "v1"]);
        // main moves on past the tag.
        sh_git(&remote.work, &["reset", "-q", "--hard", "HEAD~1"]);
        let main_tip = remote.push_guideline("one", "main-later", "main");

        let branch = TeamSource::new(remote.team(Some("release")));
        assert_eq!(branch.refresh().unwrap().revision, release);
        assert!(guideline(&branch, "one").contains("on-release"));

        let mut tagged_team = remote.team(Some("v1"));
        tagged_team.dir = remote.home.join("sources/tagged");
        let tagged = TeamSource::new(tagged_team);
        // An annotated tag: the checkout is at the commit it names.
        assert_eq!(tagged.refresh().unwrap().revision, release);
        assert!(guideline(&tagged, "one").contains("on-release"));
        remote.push_guideline("two", "more", "main");
        assert!(!tagged.refresh().unwrap().changed);

        // The default (no ref) follows the remote's HEAD, main.
        let mut default_team = remote.team(None);
        default_team.dir = remote.home.join("sources/default");
        let default = TeamSource::new(default_team);
        let first = default.refresh().unwrap().revision;
        assert_ne!(first, main_tip, "main moved on with `two`");
        assert!(guideline(&default, "two").contains("more"));

        // A ref changed in config.yaml applies on the next refresh of an existing checkout.
        let mut moved = remote.team(Some("release"));
        moved.dir = remote.home.join("sources/default");
        let done = TeamSource::new(moved).refresh().unwrap();
        assert_eq!(
            done,
            Refreshed {
                revision: release,
                changed: true
            }
        );
    }

    #[test]
    fn an_unknown_ref_keeps_the_last_good_checkout() {
        let remote = Remote::new();
        let tip = remote.push_guideline("one", "first", "main");
        let source = TeamSource::new(remote.team(Some("main")));
        source.refresh().unwrap();
        let mut wrong = remote.team(Some("no-such-branch"));
        wrong.dir = source.team().dir.clone();
        let err = TeamSource::new(wrong).refresh().unwrap_err();
        assert!(err.to_string().contains("no-such-branch"), "{err}");
        assert_eq!(source.state().revision.as_deref(), Some(tip.as_str()));
        assert!(guideline(&source, "one").contains("first"));
    }

    #[test]
    fn a_first_clone_that_fails_leaves_nothing_behind() {
        let remote = Remote::new();
        remote.push_guideline("one", "first", "main");
        for (what, team) in [
            ("a missing remote", {
                let mut t = remote.team(None);
                t.url = remote.bare.with_extension("missing").display().to_string();
                t
            }),
            ("an unknown ref", remote.team(Some("no-such-branch"))),
        ] {
            let source = TeamSource::new(team);
            let err = source.refresh().unwrap_err();
            assert!(
                matches!(err, TeamError::Git { step: "clone", .. }),
                "{what}: {err}"
            );
            assert!(!source.checkout_dir().exists(), "{what}");
            assert_eq!(
                entries(&source.team().dir),
                ["refresh.lock", "state.json"],
                "{what}: no half clone left"
            );
            let state = source.state();
            assert_eq!(state.revision, None, "{what}");
            assert_eq!(state.fetched_at, None, "{what}");
            assert!(state.error.unwrap().contains("clone"), "{what}");
        }
    }

    #[test]
    fn a_clone_left_half_done_by_a_killed_process_is_cleared_before_the_next() {
        let remote = Remote::new();
        remote.push_guideline("one", "first", "main");
        let source = TeamSource::new(remote.team(None));
        let tmp = source.team().dir.join(CLONE_TMP);
        fs::create_dir_all(tmp.join(".git")).unwrap();
        fs::write(tmp.join("half"), "x").unwrap();
        assert!(source.refresh().unwrap().changed);
        assert!(!tmp.exists());
        assert!(guideline(&source, "one").contains("first"));
    }

    #[test]
    fn a_broken_checkout_is_cloned_again() {
        let remote = Remote::new();
        let tip = remote.push_guideline("one", "first", "main");
        let source = TeamSource::new(remote.team(None));
        source.refresh().unwrap();
        fs::remove_dir_all(source.checkout_dir().join(".git/objects")).unwrap();
        let done = source.refresh().unwrap();
        assert_eq!(
            done,
            Refreshed {
                revision: tip,
                changed: true
            }
        );
        assert!(guideline(&source, "one").contains("first"));
        assert!(!source.team().dir.join(CLONE_OLD).exists());
    }

    #[test]
    fn state_json_round_trips_and_a_missing_or_foreign_one_reads_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let team = TeamGuidebook {
            name: "acme".into(),
            url: "https://example.invalid/team.git".into(),
            git_ref: Some("v2".into()),
            refresh_minutes: 15,
            dir: dir.path().join("sources/acme"),
        };
        let fresh = TeamState::read(&team);
        assert_eq!(
            fresh,
            TeamState {
                name: "acme".into(),
                url: "https://example.invalid/team.git".into(),
                git_ref: Some("v2".into()),
                ..TeamState::default()
            }
        );
        let state = TeamState {
            revision: Some("a".repeat(40)),
            fetched_at: Some("2026-12-06T05:00:00Z".into()),
            last_attempt_at: Some("2026-12-06T05:15:00Z".into()),
            error: Some("git fetch failed: fatal: unable to access".into()),
            ..fresh.clone()
        };
        state.write(&team.dir).unwrap();
        assert_eq!(TeamState::read(&team), state);
        let text = fs::read_to_string(team.dir.join("state.json")).unwrap();
        for key in [
            "\"ref\"",
            "\"revision\"",
            "\"fetchedAt\"",
            "\"lastAttemptAt\"",
            "\"error\"",
        ] {
            assert!(text.contains(key), "{key} in {text}");
        }
        let mut other = team.clone();
        other.name = "other".into();
        assert_eq!(TeamState::read(&other).revision, None);
        fs::write(team.dir.join("state.json"), "{not json").unwrap();
        assert_eq!(TeamState::read(&team), fresh);
    }

    #[test]
    fn urls_and_refs_that_git_would_read_as_options_or_commands_are_refused() {
        let remote = Remote::new();
        let marker = remote.home.join("ran");
        for url in [
            "-uhoh".to_string(),
            "--upload-pack=touch /tmp/x".to_string(),
            format!("ext::sh -c touch% {}", marker.display()),
            "EXT::sh".to_string(),
            "fd::3".to_string(),
            "https://example.invalid/a\nb".to_string(),
        ] {
            let mut team = remote.team(None);
            team.url = url.clone();
            let err = TeamSource::new(team).refresh().unwrap_err();
            assert!(matches!(err, TeamError::BadUrl { .. }), "{url}: {err}");
        }
        for r in ["-b", "main:refs/heads/x", "HEAD~1", "a..b", "v 1", ""] {
            let err = TeamSource::new(remote.team(Some(r))).refresh().unwrap_err();
            assert!(matches!(err, TeamError::BadRef { .. }), "{r}: {err}");
        }
        assert!(!marker.exists());
    }

    #[test]
    fn links_in_the_team_repository_are_checked_out_as_plain_files() {
        let remote = Remote::new();
        let secret = remote.home.with_file_name("secret");
        fs::write(&secret, "id: leaked\ncontent: secret\n").unwrap();
        let dir = remote.work.join("guidelines/link");
        fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("guideline.yaml")).unwrap();
        remote.commit_and_push("a link", "main");
        let source = TeamSource::new(remote.team(None));
        source.refresh().unwrap();
        let path = source.checkout_dir().join("guidelines/link/guideline.yaml");
        assert!(fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            secret.display().to_string()
        );
    }

    #[test]
    fn the_remote_hooks_and_the_users_templates_never_run() {
        let remote = Remote::new();
        remote.push_guideline("one", "first", "main");
        let source = TeamSource::new(remote.team(None));
        source.refresh().unwrap();
        let git_dir = source.checkout_dir().join(".git");
        // No template: no hooks directory at all, and hooks are pointed at /dev/null.
        assert!(!git_dir.join("hooks").exists());
        let config = fs::read_to_string(git_dir.join("config"))
            .unwrap()
            .to_lowercase();
        assert!(config.contains("hookspath = /dev/null"), "{config}");
        assert!(config.contains("symlinks = false"), "{config}");
        // A hook planted afterwards (as a compromised tool might) is still not run.
        let marker = remote.home.join("hook-ran");
        fs::create_dir_all(git_dir.join("hooks")).unwrap();
        let hook = git_dir.join("hooks/post-checkout");
        fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
        fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        remote.push_guideline("one", "second", "main");
        assert!(source.refresh().unwrap().changed);
        assert!(!marker.exists());
    }

    #[test]
    fn the_refresher_refreshes_at_start_then_on_its_interval_and_stops_promptly() {
        let remote = Remote::new();
        remote.push_guideline("one", "first", "main");
        let team = remote.team(None);
        let updates = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = updates.clone();
        let refresher = spawn_refresher_every(
            vec![team.clone()],
            Some(Duration::from_millis(100)),
            move |name| seen.locked().push(name.to_string()),
        );
        let wait_for = |count: usize| {
            let started = Instant::now();
            while updates.locked().len() < count {
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "{count} updates: {:?}",
                    updates.locked()
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        wait_for(1);
        let source = TeamSource::new(team);
        assert!(guideline(&source, "one").contains("first"));
        // Several unchanged refreshes call nothing.
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(updates.locked().len(), 1);
        let tip = remote.push_guideline("one", "second", "main");
        wait_for(2);
        assert_eq!(*updates.locked(), ["acme", "acme"]);
        assert_eq!(source.state().revision.as_deref(), Some(tip.as_str()));

        let started = Instant::now();
        refresher.stop();
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn the_refresher_waits_its_interval_then_refresh_now_wakes_it_and_drop_ends_it() {
        let remote = Remote::new();
        remote.push_guideline("one", "first", "main");
        let updates = Arc::new(Mutex::new(0usize));
        let seen = updates.clone();
        // The default interval (15 minutes): only the start and refresh_now refresh.
        let refresher = spawn_refresher(vec![remote.team(None)], move |_| *seen.locked() += 1);
        let wait_for = |count: usize| {
            let started = Instant::now();
            while *updates.locked() < count {
                assert!(started.elapsed() < Duration::from_secs(20));
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        wait_for(1);
        remote.push_guideline("one", "second", "main");
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(*updates.locked(), 1, "not before its interval");
        refresher.refresh_now();
        wait_for(2);
        let started = Instant::now();
        drop(refresher);
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
