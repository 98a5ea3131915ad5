//! One file watcher per repository an agent runs shell commands in: every directory of its work
//! tree that git does not ignore is watched (inotify on Linux), and each file created, written
//! or moved in is logged with the moment it was seen. Reads: the work tree's directories (once,
//! when armed), its `.gitignore` files, the watcher's events. Writes: a barrier file in the
//! sidecar's own directory.
//!
//! A command's writes are then the log's entries since the command began: no walk of the
//! repository per command. Events reach the log on the watcher's thread, a little after the
//! write; [`RepoWatch::settle`] makes sure every event of a write before it has been logged
//! (a barrier: a file created in a directory the same watcher watches; events of one watcher
//! arrive in order).
//!
//! Bounded: at most [`MAX_DIRS`] directories per repository (past it the rest is not watched,
//! and the repository says it is incomplete), at most [`MAX_LOG`] logged events (the oldest go,
//! and a window that began before them is incomplete).

use crate::sync::Locked;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use notify::event::{CreateKind, EventKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};

/// The most directories one repository's watcher holds (each is one inotify watch).
pub const MAX_DIRS: usize = 20_000;
/// The most events a repository's log keeps.
pub const MAX_LOG: usize = 16_384;
/// The longest [`RepoWatch::settle`] waits for the barrier's event.
pub const SETTLE_WAIT: Duration = Duration::from_millis(200);

/// What changed in a repository during a window.
#[derive(Debug, Default)]
pub struct Seen {
    /// Files (and directories) created, written or moved in, each once, in order.
    pub paths: Vec<PathBuf>,
    /// Whether something may be missing: the log dropped events of the window, the watcher
    /// overflowed, or not every directory is watched.
    pub incomplete: bool,
}

/// A repository's watcher and its log.
pub struct RepoWatch {
    pub root: PathBuf,
    /// `None` once armed without a watcher (it could not be created).
    watcher: Mutex<Option<RecommendedWatcher>>,
    state: Arc<Shared>,
    /// The barrier file this repository's watcher waits for, in the sidecar's directory.
    barrier: PathBuf,
    /// When the watcher began to see everything it watches.
    pub armed_at: Instant,
    /// What arming cost (the walk and the watches).
    pub arm_took: Duration,
    /// The directories watched when armed.
    pub dirs: usize,
    /// The directories watched now (armed, and adopted since), at most [`MAX_DIRS`].
    watched: std::sync::atomic::AtomicUsize,
    /// Whether every directory is watched.
    pub complete: bool,
    ignores: Vec<(PathBuf, Gitignore)>,
}

impl std::fmt::Debug for RepoWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RepoWatch")
            .field("root", &self.root)
            .field("dirs", &self.dirs)
            .field("complete", &self.complete)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Shared {
    log: Mutex<Log>,
    /// The highest barrier number seen.
    barrier_seen: Mutex<u64>,
    barrier_moved: Condvar,
}

#[derive(Default)]
struct Log {
    events: VecDeque<(Instant, PathBuf)>,
    /// Events up to this moment were dropped (the log was full, or the watcher overflowed).
    lost_until: Option<Instant>,
    /// Directories created since they were last adopted (watched).
    new_dirs: Vec<PathBuf>,
    barrier_next: u64,
}

impl RepoWatch {
    /// Watches every directory of the work tree at `root` that git does not ignore (`.git`
    /// itself neither), and the barrier directory `barrier_dir` (which must exist).
    pub fn arm(root: &Path, barrier_dir: &Path, barrier_name: &str) -> RepoWatch {
        let started = Instant::now();
        let state = Arc::new(Shared::default());
        let barrier = barrier_dir.join(barrier_name);
        let handler_state: Weak<Shared> = Arc::downgrade(&state);
        let barrier_prefix = format!("{barrier_name}.");
        let barrier_dir_owned = barrier_dir.to_path_buf();
        let handler = move |event: notify::Result<notify::Event>| {
            let Some(state) = handler_state.upgrade() else {
                return;
            };
            record(&state, event, &barrier_dir_owned, &barrier_prefix);
        };
        let mut watcher = match notify::recommended_watcher(handler) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(root = %root.display(), error = %e, "cannot create a file watcher; shell commands' unnamed writes go unseen");
                None
            }
        };
        let mut dirs = 0;
        let mut complete = watcher.is_some();
        let mut ignores = Vec::new();
        if let Some(w) = watcher.as_mut() {
            if let Err(e) = w.watch(barrier_dir, RecursiveMode::NonRecursive) {
                tracing::warn!(error = %e, "cannot watch the barrier directory");
            }
            let walk = ignore::WalkBuilder::new(root)
                .hidden(false)
                .parents(false)
                .git_global(false)
                .require_git(false)
                .filter_entry(|e| e.file_name() != ".git")
                .build();
            for entry in walk.flatten() {
                if !entry.file_type().is_some_and(|t| t.is_dir()) {
                    continue;
                }
                if dirs >= MAX_DIRS {
                    complete = false;
                    break;
                }
                let dir = entry.path();
                if let Err(e) = w.watch(dir, RecursiveMode::NonRecursive) {
                    tracing::warn!(dir = %dir.display(), error = %e, "cannot watch a directory (inotify limits?); the rest of the repository goes unwatched");
                    complete = false;
                    break;
                }
                dirs += 1;
                let gitignore = dir.join(".gitignore");
                let exclude = (dir == root).then(|| root.join(".git/info/exclude"));
                if gitignore.is_file() || exclude.as_ref().is_some_and(|e| e.is_file()) {
                    let mut builder = GitignoreBuilder::new(dir);
                    builder.add(&gitignore);
                    if let Some(exclude) = exclude {
                        builder.add(exclude);
                    }
                    if let Ok(matcher) = builder.build() {
                        ignores.push((dir.to_path_buf(), matcher));
                    }
                }
            }
        }
        // Deepest first: the nearest .gitignore decides.
        ignores.sort_by_key(|(dir, _)| std::cmp::Reverse(dir.components().count()));
        RepoWatch {
            root: root.to_path_buf(),
            watcher: Mutex::new(watcher),
            state,
            barrier,
            armed_at: Instant::now(),
            arm_took: started.elapsed(),
            dirs,
            watched: std::sync::atomic::AtomicUsize::new(dirs),
            complete,
            ignores,
        }
    }

    /// Whether a watcher runs for this repository.
    pub fn watching(&self) -> bool {
        self.watcher.locked().is_some()
    }

    /// Waits (at most [`SETTLE_WAIT`]) until every event of a write made before this call has
    /// been logged: creates a barrier file and waits for its event. Returns whether it came.
    pub fn settle(&self) -> bool {
        if !self.watching() {
            return false;
        }
        let number = {
            let mut log = self.state.log.locked();
            log.barrier_next += 1;
            log.barrier_next
        };
        let path = PathBuf::from(format!("{}.{number}", self.barrier.display()));
        if std::fs::File::create(&path).is_err() {
            return false;
        }
        let _ = std::fs::remove_file(&path);
        let deadline = Instant::now() + SETTLE_WAIT;
        let mut seen = self.state.barrier_seen.locked();
        while *seen < number {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::debug!(root = %self.root.display(), "the watcher's barrier did not come in time");
                return false;
            }
            seen = self.state.barrier_moved.wait_timeout(seen, left).unwrap().0;
        }
        true
    }

    /// Watches the directories created since the last call (and those below them), so that
    /// the next command's writes in them are seen too.
    pub fn adopt_new_dirs(&self) {
        let new_dirs = std::mem::take(&mut self.state.log.locked().new_dirs);
        if new_dirs.is_empty() {
            return;
        }
        let mut watcher = self.watcher.locked();
        let Some(w) = watcher.as_mut() else {
            return;
        };
        for dir in new_dirs {
            if !dir.is_dir() || self.ignored(&dir, true) {
                continue;
            }
            let walk = ignore::WalkBuilder::new(&dir)
                .hidden(false)
                .parents(false)
                .git_global(false)
                .require_git(false)
                .max_depth(Some(16))
                .build();
            for entry in walk.flatten() {
                if !entry.file_type().is_some_and(|t| t.is_dir()) {
                    continue;
                }
                use std::sync::atomic::Ordering;
                if self.watched.load(Ordering::Relaxed) >= MAX_DIRS {
                    return;
                }
                if w.watch(entry.path(), RecursiveMode::NonRecursive).is_ok() {
                    self.watched.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// What the log holds since `since`: files created, written or moved in, once each,
    /// ignored ones left out. Directories created in the window are listed (bounded): the
    /// files written into them before they were watched are in no event.
    pub fn since(&self, since: Instant) -> Seen {
        let mut seen = Seen {
            incomplete: !self.complete,
            ..Seen::default()
        };
        {
            let log = self.state.log.locked();
            if log.lost_until.is_some_and(|lost| lost >= since) {
                seen.incomplete = true;
            }
            let mut unique = std::collections::HashSet::new();
            for (at, path) in log.events.iter().rev() {
                if *at < since {
                    break;
                }
                if unique.insert(path.clone()) {
                    seen.paths.push(path.clone());
                }
            }
        }
        seen.paths.reverse();
        // Files inside directories created in the window.
        let mut listed = Vec::new();
        for dir in &seen.paths {
            if listed.len() >= guidebook_hook::protocol::MAX_FILEPATHS {
                seen.incomplete = true;
                break;
            }
            if !dir.is_dir() {
                continue;
            }
            let walk = ignore::WalkBuilder::new(dir)
                .hidden(false)
                .parents(false)
                .git_global(false)
                .require_git(false)
                .max_depth(Some(16))
                .build();
            for entry in walk
                .flatten()
                .take(guidebook_hook::protocol::MAX_FILEPATHS - listed.len())
            {
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    listed.push(entry.into_path());
                }
            }
        }
        seen.paths.extend(listed);
        let mut unique = std::collections::HashSet::new();
        seen.paths.retain(|p| {
            unique.insert(p.clone())
                && p.is_file()
                && !self.ignored(p, false)
                && !p.components().any(|c| c.as_os_str() == ".git")
        });
        seen
    }

    /// Whether git ignores `path` (by the `.gitignore` files found when armed and the
    /// repository's `info/exclude`).
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for (dir, matcher) in &self.ignores {
            if !path.starts_with(dir) {
                continue;
            }
            let matched = matcher.matched_path_or_any_parents(path, is_dir);
            if matched.is_ignore() {
                return true;
            }
            if matched.is_whitelist() {
                return false;
            }
        }
        false
    }
}

/// Logs one watcher event (on the watcher's thread).
fn record(
    state: &Shared,
    event: notify::Result<notify::Event>,
    barrier_dir: &Path,
    barrier_prefix: &str,
) {
    let now = Instant::now();
    let event = match event {
        Ok(event) => event,
        Err(e) => {
            tracing::debug!(error = %e, "file watcher error");
            state.log.locked().lost_until = Some(now);
            return;
        }
    };
    if event.need_rescan() {
        state.log.locked().lost_until = Some(now);
        return;
    }
    let counts = matches!(
        event.kind,
        EventKind::Create(_)
            | EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any)
            | EventKind::Any
    );
    if !counts {
        return;
    }
    let is_dir = matches!(event.kind, EventKind::Create(CreateKind::Folder));
    let mut log = state.log.locked();
    for path in event.paths {
        if path.parent() == Some(barrier_dir) {
            let number = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(barrier_prefix))
                .and_then(|n| n.parse::<u64>().ok());
            if let Some(number) = number {
                let mut seen = state.barrier_seen.locked();
                *seen = (*seen).max(number);
                state.barrier_moved.notify_all();
            }
            continue;
        }
        if is_dir || matches!(event.kind, EventKind::Modify(ModifyKind::Name(_))) && path.is_dir() {
            log.new_dirs.push(path.clone());
        }
        if log.events.len() >= MAX_LOG {
            if let Some((at, _)) = log.events.pop_front() {
                log.lost_until = Some(at);
            }
        }
        log.events.push_back((now, path));
    }
}
