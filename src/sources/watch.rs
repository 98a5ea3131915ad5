//! File-system notifications for every source, with the old poll as the fallback.
//!
//! The sources are what the daemon serves from: the guidebook root, team guidebooks,
//! `trust.json`, trusted repositories. Reads: the watched paths' metadata (to arm watches).
//! Writes nothing.
//!
//! A [`Watch`] runs one thread of its own (besides notify's): it coalesces events for a
//! debounce, then calls `on_change` with the [`WatchKey`]s whose paths saw a change. Each key
//! watches its path (recursively, for a directory that asks so) and the nearest existing
//! directory above it, non-recursively: a path that does not exist yet, or a directory
//! deleted and recreated or renamed away and back (`rm -rf root && mkdir root`, a switched
//! checkout), is seen in its parent and the key re-armed; renames in and out of a tree and
//! atomic replaces (a temporary file renamed over) are events of the watched directories.
//!
//! Where notifications are not to be had (no watcher, or the watch limit reached), a key is
//! polled instead: `on_change` gets it every `poll_every`, spaced out in proportion to the CPU
//! time the checks take ([`reload_pause`]), as the daemon did for everything before. And since
//! a notification can be missed where no event is ever sent (a symlinked file's target edited,
//! a network file system), every watched key is also reported by a rare audit whose pace keeps
//! its cost below [`AUDIT_SHARE`]'s share of one core.

use crate::sync::Locked;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};

/// Which source a watched path belongs to: what `on_change` is told.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum WatchKey {
    /// The guidebook root: its guideline files and `prompts/`.
    Guidebook,
    /// A team guidebook's checkout, by name.
    Team(String),
    /// `trust.json`.
    Trust,
    /// A trusted repository's rule directory.
    Repository(PathBuf),
}

/// How the keys are watched, for logs and `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WatchMode {
    /// Every key by notifications.
    Notify,
    /// These keys are polled (the watch limit, or a path that cannot be watched); every key
    /// is when no watcher could be created at all.
    Polling { keys: Vec<WatchKey> },
}

/// How a [`Watch`] runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WatchConfig {
    /// Events are coalesced until none came for this long (at most ten times this long after
    /// the first): an editor's save or a checkout is one report, not hundreds.
    pub debounce: Duration,
    /// How often a key that cannot be watched is polled (`reloadIntervalMs`), at the least;
    /// also the least time between two audits.
    pub poll_every: Duration,
    /// The least time between two audits of the watched keys.
    pub audit_min: Duration,
    /// `false`: no watcher at all, every key is polled.
    pub notify: bool,
}

impl WatchConfig {
    /// Notifications with the usual debounce and audit; `poll_every` for the fallback.
    pub(crate) fn new(poll_every: Duration) -> Self {
        WatchConfig {
            debounce: DEBOUNCE,
            poll_every,
            audit_min: AUDIT_MIN,
            notify: true,
        }
    }
}

/// Events are coalesced for this long: an editor's save (temporary file, rename, attributes)
/// is one reload.
pub(crate) const DEBOUNCE: Duration = Duration::from_millis(100);

/// The audit reports every watched key at most once per this many times the CPU time the last
/// report took: at most a two-thousandth of a core (10,000 guidelines, about 100 ms a check:
/// one audit every 200 s).
const AUDIT_SHARE: u32 = 2000;
/// ... and no more often than this.
const AUDIT_MIN: Duration = Duration::from_secs(60);
/// ... and at least this often (a configured interval that is longer still is kept).
const AUDIT_MAX: Duration = Duration::from_secs(600);
/// How often keys that fell back to polling try notifications again (the watch limit may have
/// room by then).
const RETRY: Duration = Duration::from_secs(300);
/// How many times arming a key follows a path that keeps changing under it before it polls.
const ARM_TRIES: usize = 8;

/// A watcher over the sources' paths, and its thread. Dropping the last handle stops both.
pub(crate) struct Watch {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("mode", &self.mode())
            .finish_non_exhaustive()
    }
}

struct Inner {
    state: Mutex<State>,
    /// Wakes the thread: notify's events, and keys added or removed.
    wake: Sender<Msg>,
}

enum Msg {
    Event(notify::Result<notify::Event>),
    /// Keys changed, or [`Watch::check_all`] asked for a report.
    Wake,
}

struct State {
    watcher: Option<RecommendedWatcher>,
    keys: BTreeMap<WatchKey, Entry>,
    /// What notify was asked to watch: path, recursive.
    actual: BTreeMap<PathBuf, bool>,
    /// [`Watch::check_all`] was called.
    check_all: bool,
}

struct Entry {
    path: PathBuf,
    recursive: bool,
    /// The watches this key needs now (path, recursive).
    watches: Vec<(PathBuf, bool)>,
    polled: bool,
}

impl Watch {
    /// Starts the watcher and its thread; `on_change` runs on that thread with the keys that
    /// saw a change (every key after an overflow or an error of the watcher), the next report
    /// waiting for it to return.
    pub(crate) fn start(
        config: WatchConfig,
        on_change: impl Fn(&Watch, &[WatchKey]) + Send + 'static,
    ) -> Watch {
        let (wake, rx) = mpsc::channel();
        let watcher = if config.notify {
            let events = wake.clone();
            let handler = move |event| {
                let _ = events.send(Msg::Event(event));
            };
            // Symlinked directories are not followed, as the guidebook's own walk does not.
            let options = notify::Config::default().with_follow_symlinks(false);
            match RecommendedWatcher::new(handler, options) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        "cannot create a file watcher; every source is polled"
                    );
                    None
                }
            }
        } else {
            None
        };
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                watcher,
                keys: BTreeMap::new(),
                actual: BTreeMap::new(),
                check_all: false,
            }),
            wake,
        });
        let weak = Arc::downgrade(&inner);
        let spawned = std::thread::Builder::new()
            .name("guidebook-watch".into())
            .spawn(move || run(weak, rx, config, Box::new(on_change)));
        if let Err(e) = spawned {
            tracing::error!(
                error = %e,
                "cannot start the sources' watch thread; changes go unseen until a restart"
            );
        }
        Watch { inner }
    }

    /// Watches `path` (recursively when `recursive`) for `key`, replacing what `key` watched
    /// before. The path need not exist: it is watched once it appears.
    pub(crate) fn add(&self, key: WatchKey, path: PathBuf, recursive: bool) {
        let mut state = self.state();
        state.keys.insert(
            key.clone(),
            Entry {
                path,
                recursive,
                watches: Vec::new(),
                polled: false,
            },
        );
        state.arm(&key);
        drop(state);
        let _ = self.inner.wake.send(Msg::Wake);
    }

    /// Stops watching `key`'s path.
    pub(crate) fn remove(&self, key: &WatchKey) {
        let mut state = self.state();
        if state.keys.remove(key).is_some() {
            state.sync(&[]);
        }
        drop(state);
        let _ = self.inner.wake.send(Msg::Wake);
    }

    /// Reports every key once, soon, on the watch's thread: the check after arming, which
    /// sees what changed before the watches were in place. Its CPU time paces the audits.
    pub(crate) fn check_all(&self) {
        self.state().check_all = true;
        let _ = self.inner.wake.send(Msg::Wake);
    }

    /// Whether keys are watched or polled.
    pub(crate) fn mode(&self) -> WatchMode {
        let state = self.state();
        let keys: Vec<WatchKey> = state
            .keys
            .iter()
            .filter(|(_, e)| e.polled)
            .map(|(k, _)| k.clone())
            .collect();
        if state.watcher.is_none() || !keys.is_empty() {
            WatchMode::Polling { keys }
        } else {
            WatchMode::Notify
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.locked()
    }
}

impl State {
    /// Arms `key`: watches its path if it exists and the nearest existing directory above it,
    /// following a path that changes meanwhile; polls it when notify refuses.
    fn arm(&mut self, key: &WatchKey) {
        let Some(entry) = self.keys.get(key) else {
            return;
        };
        let (path, recursive) = (entry.path.clone(), entry.recursive);
        if self.watcher.is_none() {
            self.set(key, Vec::new(), true);
            return;
        }
        for _ in 0..ARM_TRIES {
            let want = watches_for(&path, recursive);
            self.set(key, want.clone(), false);
            let forced: Vec<PathBuf> = want.iter().map(|(p, _)| p.clone()).collect();
            let failed = self.sync(&forced);
            let mine: Vec<_> = failed
                .into_iter()
                .filter(|(p, _)| forced.contains(p))
                .collect();
            // A path that vanished between the look and the watch: look again.
            if let Some((p, e)) = mine.iter().find(|(p, _)| p.exists()) {
                tracing::warn!(
                    ?key,
                    path = %p.display(),
                    error = %e,
                    "cannot watch a source (the inotify watch limit?); it is polled"
                );
                self.set(key, Vec::new(), true);
                self.sync(&[]);
                return;
            }
            if mine.is_empty() && watches_for(&path, recursive) == want {
                return;
            }
        }
        tracing::warn!(
            ?key,
            path = %path.display(),
            "a source's path keeps changing while it is armed; it is polled"
        );
        self.set(key, Vec::new(), true);
        self.sync(&[]);
    }

    fn set(&mut self, key: &WatchKey, watches: Vec<(PathBuf, bool)>, polled: bool) {
        if let Some(entry) = self.keys.get_mut(key) {
            entry.watches = watches;
            entry.polled = polled;
        }
    }

    /// Brings notify's watches in line with what the keys need: removes what none needs, adds
    /// what is missing and re-adds `forced` (a directory recreated under the same path is a
    /// new one). Returns the paths that could not be watched.
    fn sync(&mut self, forced: &[PathBuf]) -> Vec<(PathBuf, notify::Error)> {
        let Some(watcher) = self.watcher.as_mut() else {
            return Vec::new();
        };
        let mut desired: BTreeMap<PathBuf, bool> = BTreeMap::new();
        for entry in self.keys.values().filter(|e| !e.polled) {
            for (path, recursive) in &entry.watches {
                *desired.entry(path.clone()).or_insert(false) |= *recursive;
            }
        }
        // Within a recursive watch everything is watched already; a second watch of a path
        // in it would be the same inotify watch, and removing it would cut the tree.
        let trees: Vec<PathBuf> = desired
            .iter()
            .filter(|(_, r)| **r)
            .map(|(p, _)| p.clone())
            .collect();
        desired.retain(|p, _| !trees.iter().any(|t| p != t && p.starts_with(t)));
        let stale: Vec<PathBuf> = self
            .actual
            .iter()
            .filter(|(p, r)| desired.get(*p) != Some(r))
            .map(|(p, _)| p.clone())
            .collect();
        for path in stale {
            // It may be gone already (notify drops the watches of a deleted directory).
            let _ = watcher.unwatch(&path);
            self.actual.remove(&path);
        }
        let mut failed = Vec::new();
        for (path, recursive) in desired {
            if self.actual.get(&path) == Some(&recursive) && !forced.contains(&path) {
                continue;
            }
            let mode = if recursive {
                RecursiveMode::Recursive
            } else {
                RecursiveMode::NonRecursive
            };
            match watcher.watch(&path, mode) {
                Ok(()) => {
                    self.actual.insert(path, recursive);
                }
                Err(e) => {
                    // A recursive watch that failed half-way leaves the half it added.
                    let _ = watcher.unwatch(&path);
                    self.actual.remove(&path);
                    failed.push((path, e));
                }
            }
        }
        failed
    }

    /// The keys an event concerns, and those of them to re-arm (their path, or a directory
    /// above it, was created, removed or renamed).
    /// Returns whether it concerns any.
    fn classify(
        &self,
        event: &notify::Event,
        changed: &mut BTreeSet<WatchKey>,
        rearm: &mut BTreeSet<WatchKey>,
    ) -> bool {
        let counts = match event.kind {
            // Reads (the reload's own among them) are not changes; a write's close is.
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            _ => true,
        };
        if !counts {
            return false;
        }
        let mut concerns = false;
        let moves = matches!(
            event.kind,
            EventKind::Create(_)
                | EventKind::Remove(_)
                | EventKind::Modify(notify::event::ModifyKind::Name(_))
                | EventKind::Any
                | EventKind::Other
        );
        for path in &event.paths {
            for (key, entry) in &self.keys {
                if let Ok(below) = path.strip_prefix(&entry.path) {
                    // A repository's own bookkeeping (a checkout's `git fetch`) is no change
                    // of its files.
                    if below.components().any(|c| c.as_os_str() == ".git") {
                        continue;
                    }
                    concerns = true;
                    changed.insert(key.clone());
                    if moves && below.as_os_str().is_empty() {
                        rearm.insert(key.clone());
                    }
                } else if moves && entry.path.starts_with(path) {
                    concerns = true;
                    changed.insert(key.clone());
                    rearm.insert(key.clone());
                }
            }
        }
        concerns
    }
}

/// What a key at `path` watches now: `path` itself if it is a directory, and the nearest
/// existing directory above it (which sees it created, deleted, renamed or replaced).
fn watches_for(path: &Path, recursive: bool) -> Vec<(PathBuf, bool)> {
    let mut watches = Vec::new();
    if let Some(above) = path.ancestors().skip(1).find(|a| a.is_dir()) {
        watches.push((above.to_path_buf(), false));
    }
    if path.is_dir() {
        watches.push((path.to_path_buf(), recursive));
    }
    watches
}

/// What the watch calls with the keys that changed.
type OnChange = dyn Fn(&Watch, &[WatchKey]) + Send;

/// The watch's thread: events in, coalesced reports, polls and audits out. Ends when the last
/// [`Watch`] is dropped.
fn run(weak: Weak<Inner>, rx: Receiver<Msg>, config: WatchConfig, on_change: Box<OnChange>) {
    let debounce = config.debounce;
    let max_delay = debounce * 10;
    let mut changed = BTreeSet::new();
    let mut rearm = BTreeSet::new();
    let mut everything = false;
    // The first and the last event of the batch being coalesced.
    let mut batch: Option<(Instant, Instant)> = None;
    let mut poll_every = config.poll_every;
    let mut poll_due = Instant::now() + poll_every;
    let mut audit_every = config.poll_every.max(config.audit_min);
    let mut audit_due = Instant::now() + audit_every;
    let mut retry_due = Instant::now() + RETRY;
    let report = |watch: &Watch, keys: &[WatchKey]| -> Duration {
        let before = process_cpu_time();
        let call = std::panic::AssertUnwindSafe(|| on_change(watch, keys));
        if std::panic::catch_unwind(call).is_err() {
            tracing::error!(?keys, "reloading the changed sources panicked");
        }
        process_cpu_time().saturating_sub(before)
    };
    loop {
        let now = Instant::now();
        let polling = {
            let Some(inner) = weak.upgrade() else { return };
            let state = inner.state.locked();
            state.keys.values().any(|e| e.polled)
        };
        let mut deadline = audit_due;
        if let Some((first, last)) = batch {
            deadline = deadline.min(last + debounce).min(first + max_delay);
        }
        if polling {
            deadline = deadline.min(poll_due).min(retry_due);
        }
        match rx.recv_timeout(deadline.saturating_duration_since(now)) {
            Ok(Msg::Event(event)) => {
                let Some(inner) = weak.upgrade() else { return };
                let state = inner.state.locked();
                let concerns = match event {
                    Ok(event) if !event.need_rescan() => {
                        state.classify(&event, &mut changed, &mut rearm)
                    }
                    // An overflow (events were lost) or an error (a watch could not be added
                    // under a recursive one): anything may have changed and any watch may be
                    // missing.
                    other => {
                        tracing::debug!(
                            event = ?other,
                            "the file watcher lost events; every source is checked"
                        );
                        everything = true;
                        true
                    }
                };
                drop(state);
                if concerns {
                    let now = Instant::now();
                    batch = Some((batch.map_or(now, |(first, _)| first), now));
                }
            }
            Ok(Msg::Wake) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        let Some(inner) = weak.upgrade() else { return };
        let watch = Watch { inner };
        let now = Instant::now();
        let check_all = std::mem::take(&mut watch.state().check_all);
        let flush =
            batch.is_some_and(|(first, last)| now >= last + debounce || now >= first + max_delay);
        if check_all || flush {
            let keys: Vec<WatchKey> = {
                let mut state = watch.state();
                if everything {
                    let all: Vec<WatchKey> = state.keys.keys().cloned().collect();
                    for key in &all {
                        state.arm(key);
                    }
                } else {
                    for key in &rearm {
                        state.arm(key);
                    }
                }
                if everything || check_all {
                    state.keys.keys().cloned().collect()
                } else {
                    changed
                        .iter()
                        .filter(|k| state.keys.contains_key(*k))
                        .cloned()
                        .collect()
                }
            };
            changed.clear();
            rearm.clear();
            everything = false;
            batch = None;
            if !keys.is_empty() {
                let cpu = report(&watch, &keys);
                if check_all {
                    audit_every = audit_pause(&config, cpu);
                    audit_due = Instant::now() + audit_every;
                }
            }
        }
        let now = Instant::now();
        if now >= poll_due {
            let polled: Vec<WatchKey> = {
                let state = watch.state();
                state
                    .keys
                    .iter()
                    .filter(|(_, e)| e.polled)
                    .map(|(k, _)| k.clone())
                    .collect()
            };
            if !polled.is_empty() {
                let cpu = report(&watch, &polled);
                poll_every = reload_pause(config.poll_every, cpu);
                tracing::debug!(
                    keys = ?polled,
                    cpu_ms = crate::time::log_ms(cpu),
                    next_in_ms = poll_every.as_millis() as u64,
                    "polled the sources that cannot be watched"
                );
            }
            poll_due = Instant::now() + poll_every;
        }
        if now >= audit_due {
            let watched: Vec<WatchKey> = {
                let state = watch.state();
                state
                    .keys
                    .iter()
                    .filter(|(_, e)| !e.polled)
                    .map(|(k, _)| k.clone())
                    .collect()
            };
            if !watched.is_empty() {
                let cpu = report(&watch, &watched);
                audit_every = audit_pause(&config, cpu);
            }
            audit_due = Instant::now() + audit_every;
        }
        if now >= retry_due {
            let mut state = watch.state();
            if state.watcher.is_some() {
                let polled: Vec<WatchKey> = state
                    .keys
                    .iter()
                    .filter(|(_, e)| e.polled)
                    .map(|(k, _)| k.clone())
                    .collect();
                for key in &polled {
                    state.arm(key);
                }
            }
            retry_due = Instant::now() + RETRY;
        }
    }
}

/// How long before the next audit, after one that used `cpu`.
fn audit_pause(config: &WatchConfig, cpu: Duration) -> Duration {
    (cpu * AUDIT_SHARE)
        .clamp(config.audit_min, AUDIT_MAX.max(config.audit_min))
        .max(config.poll_every)
}

/// How long to wait before the next poll of a key that cannot be watched: `every`, or longer
/// when the last poll used more CPU time than [`RELOAD_CHECK_SHARE`] of one core allows, but
/// never more than [`RELOAD_PAUSE_MAX`]. An idle daemon on a laptop must not burn a core
/// checking files: with the pause in proportion to wall time, 10,000 guideline directories
/// checked on two threads every 400–470 ms took 31 % of a core while nobody called the daemon.
fn reload_pause(every: Duration, cpu: Duration) -> Duration {
    (cpu * RELOAD_CHECK_SHARE).min(RELOAD_PAUSE_MAX).max(every)
}

/// The next poll waits at least this many times the CPU time the last one used: polls take at
/// most about a twentieth of one core (1 / (1 + 20)).
const RELOAD_CHECK_SHARE: u32 = 20;

/// However costly a poll, the next one comes within this long (a configured interval that is
/// longer still is kept).
const RELOAD_PAUSE_MAX: Duration = Duration::from_secs(30);

/// The CPU time (user and system) this process has used so far, all threads together: a
/// check walks on every core, and whatever searches ran meanwhile count too, which only
/// spaces checks out more while the daemon is busy.
fn process_cpu_time() -> Duration {
    // SAFETY: `getrusage` writes into the zeroed struct it is given and reads nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return Duration::ZERO;
        }
        usage
    };
    let of = |t: libc::timeval| {
        Duration::new(t.tv_sec.max(0) as u64, 0) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    of(usage.ru_utime) + of(usage.ru_stime)
}

#[cfg(test)]
impl Watch {
    /// The paths notify was asked to watch, with whether recursively.
    fn watched(&self) -> Vec<(PathBuf, bool)> {
        self.state()
            .actual
            .iter()
            .map(|(p, r)| (p.clone(), *r))
            .collect()
    }

    /// Hands the thread an event as notify's would.
    fn inject(&self, event: notify::Result<notify::Event>) {
        let _ = self.inner.wake.send(Msg::Event(event));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(10);

    /// Every report a watch made, in order.
    #[derive(Clone, Default)]
    struct Reports(Arc<Mutex<Vec<Vec<WatchKey>>>>);

    impl Reports {
        fn all(&self) -> Vec<Vec<WatchKey>> {
            self.0.locked().clone()
        }

        /// How many reports named `key`.
        fn count(&self, key: &WatchKey) -> usize {
            self.all().iter().filter(|r| r.contains(key)).count()
        }

        /// Waits (bounded) until `done` holds of the reports.
        fn wait(&self, what: &str, done: impl Fn(&[Vec<WatchKey>]) -> bool) {
            let started = Instant::now();
            while !done(&self.all()) {
                assert!(
                    started.elapsed() < LIMIT,
                    "{what}: not within {LIMIT:?}; reports {:?}",
                    self.all()
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }

        /// Waits until `key` is reported more than `than` times.
        fn wait_more(&self, key: &WatchKey, than: usize, what: &str) {
            self.wait(what, |r| {
                r.iter().filter(|r| r.contains(key)).count() > than
            });
        }
    }

    /// Notifications only: no poll, no audit within a test's time.
    fn quiet(debounce: Duration) -> WatchConfig {
        WatchConfig {
            debounce,
            poll_every: Duration::from_secs(3600),
            audit_min: Duration::from_secs(3600),
            notify: true,
        }
    }

    fn started(config: WatchConfig) -> (Watch, Reports) {
        let reports = Reports::default();
        let sink = reports.clone();
        let watch = Watch::start(config, move |_, keys| sink.0.locked().push(keys.to_vec()));
        (watch, reports)
    }

    fn barrier() -> WatchKey {
        WatchKey::Team("barrier".into())
    }

    /// Waits until every event of what was done before this call has been reported: a write
    /// in the barrier key's directory is reported after them (one thread, events in order).
    fn settle(reports: &Reports, dir: &Path) {
        let n = reports.count(&barrier());
        std::fs::write(dir.join(format!("b{n}")), "x").unwrap();
        reports.wait_more(&barrier(), n, "the barrier");
    }

    /// A watch on `root` (key [`WatchKey::Guidebook`], recursive) and a barrier directory.
    fn watching(tmp: &Path, root: &Path) -> (Watch, Reports, PathBuf) {
        let (watch, reports) = started(quiet(Duration::from_millis(50)));
        let barrier_dir = tmp.join("barrier");
        std::fs::create_dir_all(&barrier_dir).unwrap();
        watch.add(barrier(), barrier_dir.clone(), false);
        watch.add(WatchKey::Guidebook, root.to_path_buf(), true);
        assert_eq!(watch.mode(), WatchMode::Notify);
        (watch, reports, barrier_dir)
    }

    /// Does `change`, and waits until the guidebook key is reported for it.
    fn seen(reports: &Reports, barrier_dir: &Path, what: &str, change: impl FnOnce()) {
        settle(reports, barrier_dir);
        let n = reports.count(&WatchKey::Guidebook);
        change();
        reports.wait_more(&WatchKey::Guidebook, n, what);
    }

    #[test]
    fn a_burst_of_writes_is_one_report() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let (watch, reports) = started(quiet(Duration::from_millis(300)));
        let barrier_dir = tmp.path().join("barrier");
        std::fs::create_dir_all(&barrier_dir).unwrap();
        watch.add(barrier(), barrier_dir.clone(), false);
        watch.add(WatchKey::Guidebook, root.clone(), true);
        for i in 0..40 {
            std::fs::write(root.join(format!("f{}", i % 4)), format!("{i}")).unwrap();
        }
        reports.wait_more(&WatchKey::Guidebook, 0, "the burst");
        settle(&reports, &barrier_dir);
        assert_eq!(
            reports.count(&WatchKey::Guidebook),
            1,
            "{:?}",
            reports.all()
        );
    }

    #[test]
    fn edits_renames_and_atomic_replaces_are_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let file = root.join("g1/guideline.yaml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "a").unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let (_watch, reports, barrier_dir) = watching(tmp.path(), &root);

        seen(&reports, &barrier_dir, "an edit in place", || {
            std::fs::write(&file, "b").unwrap()
        });
        seen(&reports, &barrier_dir, "an atomic replace", || {
            let temp = root.join("g1/.guideline.yaml.tmp");
            std::fs::write(&temp, "c").unwrap();
            std::fs::rename(&temp, &file).unwrap();
        });
        seen(&reports, &barrier_dir, "a replace from outside", || {
            let temp = outside.join("new.yaml");
            std::fs::write(&temp, "d").unwrap();
            std::fs::rename(&temp, &file).unwrap();
        });
        seen(&reports, &barrier_dir, "a directory renamed", || {
            std::fs::rename(root.join("g1"), root.join("g2")).unwrap()
        });
        seen(&reports, &barrier_dir, "an edit in the renamed one", || {
            std::fs::write(root.join("g2/guideline.yaml"), "e").unwrap()
        });
        let moved_in = outside.join("g3/deeper");
        std::fs::create_dir_all(&moved_in).unwrap();
        seen(&reports, &barrier_dir, "a directory moved in", || {
            std::fs::rename(outside.join("g3"), root.join("g3")).unwrap()
        });
        seen(
            &reports,
            &barrier_dir,
            "an edit in the moved-in one",
            || std::fs::write(root.join("g3/deeper/guideline.yaml"), "f").unwrap(),
        );
        seen(&reports, &barrier_dir, "a directory moved out", || {
            std::fs::rename(root.join("g2"), outside.join("g2")).unwrap()
        });
        seen(&reports, &barrier_dir, "a file deleted", || {
            std::fs::remove_file(root.join("g3/deeper/guideline.yaml")).unwrap()
        });
    }

    #[test]
    fn a_missing_path_is_watched_once_created() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("a/b/root");
        let (watch, reports, barrier_dir) = watching(tmp.path(), &root);
        assert!(watch.watched().contains(&(tmp.path().to_path_buf(), false)));
        seen(&reports, &barrier_dir, "the root created", || {
            std::fs::create_dir_all(&root).unwrap()
        });
        let started = Instant::now();
        while !watch.watched().contains(&(root.clone(), true)) {
            assert!(started.elapsed() < LIMIT, "{:?}", watch.watched());
            std::thread::sleep(Duration::from_millis(10));
        }
        // It is watched in its parent now, no longer in the directories above.
        let watched = watch.watched();
        assert!(
            watched.contains(&(tmp.path().join("a/b"), false)),
            "{watched:?}"
        );
        assert!(
            !watched.contains(&(tmp.path().join("a"), false)),
            "{watched:?}"
        );
        seen(
            &reports,
            &barrier_dir,
            "a guideline in the new root",
            || {
                std::fs::create_dir_all(root.join("g")).unwrap();
                std::fs::write(root.join("g/guideline.yaml"), "a").unwrap();
            },
        );
        seen(
            &reports,
            &barrier_dir,
            "an edit deep in the new root",
            || {
                std::fs::write(root.join("g/guideline.yaml"), "b").unwrap();
            },
        );
    }

    #[test]
    fn a_directory_deleted_and_recreated_is_watched_again() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("g")).unwrap();
        let (_watch, reports, barrier_dir) = watching(tmp.path(), &root);
        seen(&reports, &barrier_dir, "rm -rf root && mkdir root", || {
            std::fs::remove_dir_all(&root).unwrap();
            std::fs::create_dir_all(root.join("g")).unwrap();
        });
        seen(
            &reports,
            &barrier_dir,
            "an edit in the recreated root",
            || std::fs::write(root.join("g/guideline.yaml"), "a").unwrap(),
        );
        seen(
            &reports,
            &barrier_dir,
            "the root renamed away and another put in",
            || {
                std::fs::rename(&root, tmp.path().join("old")).unwrap();
                std::fs::create_dir_all(root.join("h")).unwrap();
            },
        );
        seen(&reports, &barrier_dir, "an edit in the new root", || {
            std::fs::write(root.join("h/guideline.yaml"), "b").unwrap()
        });
        seen(&reports, &barrier_dir, "a subdirectory deleted", || {
            std::fs::remove_dir_all(root.join("h")).unwrap()
        });
        seen(
            &reports,
            &barrier_dir,
            "... and recreated with a file",
            || {
                std::fs::create_dir_all(root.join("h")).unwrap();
                std::fs::write(root.join("h/guideline.yaml"), "c").unwrap();
            },
        );
        seen(&reports, &barrier_dir, "an edit in it", || {
            std::fs::write(root.join("h/guideline.yaml"), "d").unwrap()
        });
    }

    #[test]
    fn a_file_key_sees_atomic_replaces_and_its_own_creation() {
        let tmp = tempfile::tempdir().unwrap();
        let trust = tmp.path().join("home/trust.json");
        let (watch, reports) = started(quiet(Duration::from_millis(50)));
        watch.add(WatchKey::Trust, trust.clone(), false);
        std::fs::create_dir_all(trust.parent().unwrap()).unwrap();
        reports.wait_more(&WatchKey::Trust, 0, "its directory created");
        let wait_watched = || {
            let started = Instant::now();
            while !watch.watched().contains(&(tmp.path().join("home"), false)) {
                assert!(started.elapsed() < LIMIT, "{:?}", watch.watched());
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        wait_watched();
        let n = reports.count(&WatchKey::Trust);
        std::fs::write(&trust, "{}").unwrap();
        reports.wait_more(&WatchKey::Trust, n, "created");
        let n = reports.count(&WatchKey::Trust);
        let temp = tmp.path().join("home/.trust.json.tmp");
        std::fs::write(&temp, "{ }").unwrap();
        std::fs::rename(&temp, &trust).unwrap();
        reports.wait_more(&WatchKey::Trust, n, "replaced");
        // Other files beside it are not its changes.
        let n = reports.all().len();
        std::fs::write(tmp.path().join("home/other.db"), "x").unwrap();
        let m = reports.count(&WatchKey::Trust);
        std::fs::write(&trust, "{}").unwrap();
        reports.wait_more(&WatchKey::Trust, m, "written again");
        assert!(
            reports.all()[n..].iter().all(|r| r == &[WatchKey::Trust]),
            "{:?}",
            reports.all()
        );
        assert_eq!(reports.all().len(), n + 1, "{:?}", reports.all());
    }

    #[test]
    fn git_bookkeeping_is_not_a_change() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        let (_watch, reports, barrier_dir) = watching(tmp.path(), &root);
        std::fs::write(root.join(".git/objects/x"), "x").unwrap();
        std::fs::write(root.join(".git/index"), "x").unwrap();
        settle(&reports, &barrier_dir);
        assert_eq!(reports.count(&WatchKey::Guidebook), 0);
    }

    #[test]
    fn an_overflow_or_an_error_reports_every_key() {
        let tmp = tempfile::tempdir().unwrap();
        let (watch, reports) = started(quiet(Duration::from_millis(20)));
        watch.add(WatchKey::Guidebook, tmp.path().join("a"), true);
        watch.add(WatchKey::Trust, tmp.path().join("trust.json"), false);
        let both = |r: &[Vec<WatchKey>]| {
            r.iter()
                .filter(|r| r.contains(&WatchKey::Guidebook) && r.contains(&WatchKey::Trust))
                .count()
        };
        // What notify sends for inotify's IN_Q_OVERFLOW.
        let overflow = notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan);
        watch.inject(Ok(overflow));
        reports.wait("every key after an overflow", |r| both(r) == 1);
        watch.inject(Err(notify::Error::new(notify::ErrorKind::MaxFilesWatch)));
        reports.wait("every key after an error", |r| both(r) == 2);
        // Neither key's path exists: neither has been reported otherwise.
        assert_eq!(reports.all().len(), 2, "{:?}", reports.all());
    }

    #[test]
    fn check_all_reports_every_key_once() {
        let tmp = tempfile::tempdir().unwrap();
        let (watch, reports) = started(quiet(Duration::from_millis(20)));
        watch.add(WatchKey::Guidebook, tmp.path().join("a"), true);
        watch.add(WatchKey::Trust, tmp.path().join("trust.json"), false);
        watch.check_all();
        reports.wait("the check", |r| {
            r == [vec![WatchKey::Guidebook, WatchKey::Trust]]
        });
    }

    #[test]
    fn without_notifications_every_key_is_polled() {
        let tmp = tempfile::tempdir().unwrap();
        let (watch, reports) = started(WatchConfig {
            poll_every: Duration::from_millis(50),
            notify: false,
            ..quiet(Duration::from_millis(20))
        });
        watch.add(WatchKey::Guidebook, tmp.path().to_path_buf(), true);
        watch.add(WatchKey::Trust, tmp.path().join("trust.json"), false);
        assert_eq!(
            watch.mode(),
            WatchMode::Polling {
                keys: vec![WatchKey::Guidebook, WatchKey::Trust]
            }
        );
        assert!(watch.watched().is_empty());
        // Reported on the interval, nothing having changed.
        reports.wait("three polls", |r| {
            r.iter().filter(|r| r.len() == 2).count() >= 3
        });
    }

    #[test]
    fn watched_keys_are_audited_rarely() {
        let tmp = tempfile::tempdir().unwrap();
        let (watch, reports) = started(WatchConfig {
            poll_every: Duration::from_millis(10),
            audit_min: Duration::from_millis(200),
            ..quiet(Duration::from_millis(20))
        });
        let started = Instant::now();
        watch.add(WatchKey::Guidebook, tmp.path().to_path_buf(), true);
        assert_eq!(watch.mode(), WatchMode::Notify);
        reports.wait("two audits", |r| r.len() >= 2);
        // Not on the poll's interval: the audit's least pause.
        assert!(started.elapsed() >= Duration::from_millis(400));
    }

    #[test]
    fn dropping_the_watch_stops_its_thread() {
        let tmp = tempfile::tempdir().unwrap();
        let held = Arc::new(());
        let in_callback = held.clone();
        let watch = Watch::start(quiet(Duration::from_millis(20)), move |_, _| {
            let _ = &in_callback;
        });
        watch.add(WatchKey::Guidebook, tmp.path().to_path_buf(), true);
        drop(watch);
        let started = Instant::now();
        // The thread dropped its callback: it has ended.
        while Arc::strong_count(&held) > 1 {
            assert!(started.elapsed() < LIMIT, "the watch's thread still runs");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn polls_take_at_most_a_twentieth_of_a_core() {
        let every = Duration::from_millis(400);
        let ms = Duration::from_millis;
        // A small guidebook is polled on the interval.
        assert_eq!(reload_pause(every, ms(3)), every);
        assert_eq!(reload_pause(every, ms(20)), every);
        // A large one waits twenty times the CPU time its check used: 10,000 guideline
        // directories walked on two threads (100 ms of wall time, 200 ms of CPU).
        let cpu = ms(200);
        let pause = reload_pause(every, cpu);
        assert_eq!(pause, ms(4000));
        assert!(cpu.as_secs_f64() / (cpu + pause).as_secs_f64() <= 0.05);
        // However large, a change is seen within half a minute.
        assert_eq!(
            reload_pause(every, Duration::from_secs(5)),
            RELOAD_PAUSE_MAX
        );
        // A configured interval longer than that is kept.
        let hourly = Duration::from_secs(3600);
        assert_eq!(reload_pause(hourly, Duration::from_secs(5)), hourly);
    }

    #[test]
    fn audits_take_at_most_a_two_thousandth_of_a_core() {
        let config = WatchConfig::new(Duration::from_millis(400));
        let ms = Duration::from_millis;
        // A small guidebook: once a minute.
        assert_eq!(audit_pause(&config, ms(1)), AUDIT_MIN);
        // 10,000 guidelines, 150 ms a check: every five minutes.
        let cpu = ms(150);
        let pause = audit_pause(&config, cpu);
        assert_eq!(pause, Duration::from_secs(300));
        assert!(cpu.as_secs_f64() / pause.as_secs_f64() <= 0.0005);
        // However large, within ten minutes; a longer configured interval is kept.
        assert_eq!(audit_pause(&config, Duration::from_secs(5)), AUDIT_MAX);
        let hourly = WatchConfig::new(Duration::from_secs(3600));
        assert_eq!(audit_pause(&hourly, ms(1)), Duration::from_secs(3600));
    }

    #[test]
    fn process_cpu_time_counts_work_on_every_thread() {
        // Each thread spins until it has itself used 40 ms of CPU, however loaded the machine.
        let thread_cpu = || {
            // SAFETY: `clock_gettime` writes into the zeroed struct it is given.
            let mut t: libc::timespec = unsafe { std::mem::zeroed() };
            assert_eq!(
                unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) },
                0
            );
            Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
        };
        let spin = || {
            let start = thread_cpu();
            let mut x = 0u64;
            while thread_cpu() - start < Duration::from_millis(40) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        };
        let before = process_cpu_time();
        std::thread::scope(|s| {
            s.spawn(spin);
            s.spawn(spin);
        });
        let used = process_cpu_time() - before;
        // Both threads' 40 ms (rusage counts in microseconds; a little slack for rounding).
        assert!(used >= Duration::from_millis(79), "counted {used:?}");
    }
}
