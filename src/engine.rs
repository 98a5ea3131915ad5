//! The [`Engine`] every handler shares (guidebook, prompt packs, tokenizer, flags, stores,
//! metrics), and its evaluation of a change's files: each file once, spread over the free
//! cores, each evaluated as `evaluation` says. Reads: the guideline snapshot, the files,
//! repository identities. Writes nothing.

use crate::sync::Locked;
use std::collections::HashMap;
#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::breaker::Breaker;
use crate::config::Settings;
use crate::evaluation::{evaluate_content, EvaluationMemo, FileEdit};
pub use crate::evaluation::{FileEvaluation, GuidelineMatch};

/// What a caller knows of each changed file's edit, by the path as it gave it.
pub type Edits = HashMap<String, FileEdit>;
use crate::files;
use crate::flags::Flags;
use crate::guidebook::{Guidebook, GuidelineSnapshot};
use crate::metrics::{Recorder, Telemetry};
use crate::parallel::{wait_while, Gate, Helpers, InFlight, Permit};
use crate::prompt::PromptPacks;
use crate::repo::RepositoryResolver;
use crate::store::{BreakerStore, Database, MetricsStore, PresentationStore, StoreError};
use crate::tokens::Tokenizer;

/// Everything a request handler needs, shared by all of them. Built once per process.
#[derive(Debug)]
pub struct Engine {
    pub settings: Settings,
    pub guidebook: Arc<Guidebook>,
    pub flags: Flags,
    pub repos: Arc<RepositoryResolver>,
    pub presentations: PresentationStore,
    /// The prompt packs of the guidebook root, reloaded with the guidelines.
    pub prompts: PromptPacks,
    /// How tokens are counted (`buildPrompt`, token budgets), as configured.
    pub tokenizer: Tokenizer,
    /// The circuit breaker (`recordError`, `breakerStatus`, `resetBreaker`).
    pub breaker: Breaker,
    /// What orchestrators report (QC results, reviews, tokens, A/B assignments).
    pub metrics: MetricsStore,
    /// Writes what the sidecar observes, off the request path (off with `recordMetrics: false`).
    pub recorder: Recorder,
    /// The live counters of the Prometheus endpoint.
    pub telemetry: Telemetry,
    /// The team push's counters (`teamMetrics`), and its state for `status` while the daemon
    /// pushes.
    pub team: crate::store::TeamStore,
    pub team_push: Arc<Mutex<crate::metrics::team::PushStatus>>,
    /// At most [`EVALUATIONS_PER_CORE`] evaluations per core at a time (see [`Gate`]).
    matching: Gate,
    /// The threads that take a share of a search's files (one per core but the caller's).
    helpers: Helpers,
    /// The calls being served now (counted by the RPC layer): a search enlists helpers only
    /// when it is the only one.
    pub calls: InFlight,
    /// Shell commands between their begin and their end, and the repositories' watchers.
    pub shell: crate::shell_writes::ShellWrites,
    /// The trusted repositories' own rules, loaded into `guidebook` off the hooks' path.
    pub repositories: crate::sources::repository::RepositorySources,
    pub started: Instant,
    /// The files the latest searches named (at most [`RECENT_FILES`]): a new snapshot is warmed
    /// on them before the next hook needs it ([`Engine::warm`]).
    recent: Mutex<std::collections::VecDeque<String>>,
}

/// How many recently searched files a new snapshot is warmed on.
const RECENT_FILES: usize = 16;

/// Evaluations let run at once per core. One per core left the cores 8–10% idle under 8
/// clients at 10,000 guidelines: an evaluation holding a permit is not always on a core (it
/// reads files, it is preempted, the next waiter takes a wake-up to start), and a second
/// one ready per core fills those gaps. Measured: 8 clients at 10,000 near-miss guidelines
/// 1,718 and 1,753 req/s with one per core, 1,816 and 1,848 with two, the same at 1,000, and
/// the same peak RSS.
const EVALUATIONS_PER_CORE: usize = 2;

/// Groups `paths` by the file they name: paths whose targets share a device and inode (a
/// symlink, a hard link, `..` spellings) form one group, read once. Each group lists indices
/// into `paths`, in first-seen order; a path that cannot be looked up is a group of its own
/// (reading it says why it is skipped).
fn group_by_file(paths: &[PathBuf]) -> Vec<Vec<usize>> {
    use std::os::unix::fs::MetadataExt;
    let mut groups: Vec<Vec<usize>> = Vec::with_capacity(paths.len());
    let mut by_file: HashMap<(u64, u64), usize> = HashMap::new();
    for (i, path) in paths.iter().enumerate() {
        let file = std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| (m.dev(), m.ino()));
        match file.and_then(|f| by_file.get(&f).copied()) {
            Some(group) => groups[group].push(i),
            None => {
                if let Some(f) = file {
                    by_file.insert(f, groups.len());
                }
                groups.push(vec![i]);
            }
        }
    }
    groups
}

/// The files of one evaluation, shared by its caller and the helpers it enlists: each file is
/// claimed by whoever comes first, so a helper busy elsewhere only means the caller does more.
struct Batch {
    snapshot: Arc<GuidelineSnapshot>,
    repos: Arc<RepositoryResolver>,
    max_file_bytes: u64,
    details: bool,
    deadline: Option<Instant>,
    /// Each path once.
    paths: Vec<PathBuf>,
    /// What the caller said of each path's edit, by position in `paths`.
    edits: Vec<FileEdit>,
    /// The paths grouped by the file they name (see [`group_by_file`]): the unit of work,
    /// read once.
    groups: Vec<Vec<usize>>,
    /// Files read so far.
    reads: AtomicUsize,
    next: AtomicUsize,
    progress: Mutex<Progress>,
    finished: Condvar,
}

struct Progress {
    results: Vec<Option<FileEvaluation>>,
    /// Groups claimed and done with (evaluated, or lost to a panic).
    done: usize,
    /// A file whose evaluation panicked: the evaluation as a whole has no answer.
    lost: bool,
}

/// Records a claimed group as done when dropped, evaluated or not (a panic unwinding through
/// `evaluate_content`), so that the caller never waits for a file nobody is evaluating.
struct Claim<'a> {
    batch: &'a Batch,
    /// Each path of the group with its evaluation, once all are evaluated.
    results: Option<Vec<(usize, FileEvaluation)>>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut progress = self.batch.progress.locked();
        progress.done += 1;
        match self.results.take() {
            Some(results) => {
                for (index, result) in results {
                    progress.results[index] = Some(result);
                }
            }
            None => progress.lost = true,
        }
        self.batch.finished.notify_all();
    }
}

impl Batch {
    /// Evaluates unclaimed files until none is left or the deadline has passed.
    fn work(&self) {
        let mut memo = EvaluationMemo::new();
        loop {
            if self.deadline.is_some_and(|d| Instant::now() >= d) {
                return;
            }
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(group) = self.groups.get(index) else {
                return;
            };
            let mut claim = Claim {
                batch: self,
                results: None,
            };
            // One read for every path of the group; each path keeps its own repository and
            // language, so each is matched on its own.
            self.reads.fetch_add(1, Ordering::Relaxed);
            // Content the caller gave for every path of the group needs no read.
            let content = if group.iter().all(|&i| self.edits[i].content.is_some()) {
                Err(files::Skip::NotFound)
            } else {
                files::read_capped(&self.paths[group[0]], self.max_file_bytes)
            };
            claim.results = Some(
                group
                    .iter()
                    .map(|&i| {
                        let path = &self.paths[i];
                        let evaluation = evaluate_content(
                            &self.snapshot,
                            &self.repos,
                            path,
                            &content,
                            &self.edits[i],
                            self.details,
                            &mut memo,
                        );
                        (i, evaluation)
                    })
                    .collect(),
            );
        }
    }

    /// Every file's evaluation once all are done; `None` if the deadline passes first or a
    /// file's evaluation panicked.
    fn wait(&self) -> Option<Vec<FileEvaluation>> {
        let progress = self.progress.locked();
        let mut progress = wait_while(&self.finished, progress, self.deadline, |p| {
            p.done < self.groups.len() && !p.lost
        })?;
        if progress.lost {
            return None;
        }
        std::mem::take(&mut progress.results).into_iter().collect()
    }
}

impl Engine {
    /// Opens the database and loads the guidebook described by `settings`, for one command: the
    /// parse cache is read, not written (writing it would delay this command's answer; the
    /// daemon writes it off its requests' path).
    pub fn open(settings: Settings) -> Result<Engine, StoreError> {
        let engine = Self::open_with(settings, false)?;
        engine.guidebook.reload();
        engine.repositories.reload_all(&engine.guidebook);
        Ok(engine)
    }

    /// Opens the database; the guidebook stays empty until the caller runs its first
    /// `reload` (the daemon does so on a thread of its own, after its socket answers), and
    /// searches wait for that load. The parse cache is read and kept up to date.
    pub fn open_unloaded(settings: Settings) -> Result<Engine, StoreError> {
        Self::open_with(settings, true)
    }

    fn open_with(settings: Settings, write_cache: bool) -> Result<Engine, StoreError> {
        let db = Database::open(
            &settings.db,
            Duration::from_millis(settings.busy_timeout_ms),
        )?;
        // The parse cache lives beside the database, in the sidecar's own directory.
        let cache = settings
            .db
            .with_file_name(crate::guidebook::CACHE_FILE_NAME);
        let guidebook = Arc::new(
            Guidebook::with_cache(settings.guidebook_root.clone(), cache, write_cache)
                .with_teams(crate::sources::team::checkouts(&settings)),
        );
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(Engine {
            guidebook,
            prompts: PromptPacks::load(settings.guidebook_root.clone()),
            tokenizer: settings.tokenizer,
            flags: Flags::open(settings.flags.clone()),
            repos: Arc::new(RepositoryResolver::new()),
            breaker: Breaker::new(BreakerStore::new(db.clone()), settings.breaker),
            metrics: MetricsStore::new(db.clone()),
            recorder: if settings.record_metrics {
                Recorder::start(MetricsStore::new(db.clone()))
            } else {
                Recorder::off()
            },
            telemetry: Telemetry::default(),
            team: crate::store::TeamStore::new(db.clone()),
            team_push: Arc::default(),
            matching: Gate::new(EVALUATIONS_PER_CORE * cores),
            helpers: Helpers::new(cores - 1),
            calls: InFlight::default(),
            // The watchers' barrier files live beside the database, in the sidecar's directory.
            shell: crate::shell_writes::ShellWrites::new(
                settings.db.with_file_name("shell-barrier"),
                settings.max_file_bytes,
            ),
            presentations: PresentationStore::new(db),
            repositories: crate::sources::repository::RepositorySources::of(&settings),
            started: Instant::now(),
            recent: Mutex::new(std::collections::VecDeque::new()),
            settings,
        })
    }

    /// Whether adherence is kept at all: recording is on and something keeps it (the
    /// database's recorder, or the live counters while `/metrics` is served).
    pub fn keeps_adherence(&self) -> bool {
        crate::metrics::adherence::recording()
            && (self.recorder.is_on() || self.settings.metrics_listen.is_some())
    }

    /// Feeds the live per-guideline counters, which are kept only while `/metrics` is served;
    /// `event` is built only then.
    pub fn count_adherence<E: std::borrow::Borrow<crate::metrics::adherence::Event>>(
        &self,
        session: &str,
        event: impl FnOnce() -> E,
    ) {
        if self.settings.metrics_listen.is_some() {
            self.telemetry.adherence(session, event().borrow());
        }
    }

    /// Remembers the files a search named, for [`Engine::warm`].
    pub fn note_searched(&self, paths: &[String]) {
        let mut recent = self.recent.locked();
        for path in paths.iter().take(RECENT_FILES) {
            if let Some(at) = recent.iter().position(|p| p == path) {
                recent.remove(at);
            }
            recent.push_back(path.clone());
        }
        while recent.len() > RECENT_FILES {
            recent.pop_front();
        }
    }

    /// Evaluates the latest searched files against the snapshot being served, recording
    /// nothing, so that the first hook after a reload finds the new snapshot's applicability
    /// worked out and the regexes its candidates need compiled (10 ms of a hook otherwise, with
    /// a trusted repository's 400 rules beside 1,000). Called by the reloads, off the hooks'
    /// path.
    pub fn warm(&self) {
        let paths: Vec<String> = self.recent.locked().iter().cloned().collect();
        if paths.is_empty() || !self.guidebook.is_loaded() {
            return;
        }
        let snapshot = self.guidebook.snapshot();
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        let deadline = Instant::now() + Duration::from_secs(2);
        let _ = self.evaluate_until(&snapshot, &paths, &Edits::new(), false, Some(deadline));
    }

    /// How many helpers an evaluation of `files` files may enlist, cores permitting: one
    /// client's search of ten files is spread over both cores, while a search served beside
    /// other calls keeps to one, as each of eight clients' does. Those calls want the other
    /// cores (a free permit now is one of theirs in a moment), and a share handed to a helper
    /// costs the wake-ups of a hand-off: eight clients measured 0.90× the throughput with it.
    fn helpers_wanted(&self, files: usize) -> usize {
        if self.calls.count() > 1 {
            return 0;
        }
        files.saturating_sub(1).min(self.helpers.threads)
    }

    /// Evaluates each path (absolute, already checked) against `snapshot`. A path given twice
    /// is read once. With `details`, each match carries its first line and pattern.
    pub fn evaluate(
        &self,
        snapshot: &Arc<GuidelineSnapshot>,
        paths: &[&str],
        details: bool,
    ) -> Vec<FileEvaluation> {
        self.evaluate_until(snapshot, paths, &Edits::new(), details, None)
            .unwrap_or_default()
    }

    /// Like [`Engine::evaluate`], but gives up (`None`) as soon as `deadline` has passed
    /// between two files, so a caller that has stopped waiting does not keep the daemon reading.
    /// `edits` says, per path as given, what the caller knows of the edit (written lines,
    /// content); a path it does not name has its written lines worked out if needed.
    pub fn evaluate_until(
        &self,
        snapshot: &Arc<GuidelineSnapshot>,
        paths: &[&str],
        edits: &Edits,
        details: bool,
        deadline: Option<Instant>,
    ) -> Option<Vec<FileEvaluation>> {
        self.evaluate_counted(snapshot, paths, edits, details, deadline)
            .0
    }

    /// [`Engine::evaluate_until`], and how many files it read.
    fn evaluate_counted(
        &self,
        snapshot: &Arc<GuidelineSnapshot>,
        paths: &[&str],
        edits: &Edits,
        details: bool,
        deadline: Option<Instant>,
    ) -> (Option<Vec<FileEvaluation>>, usize) {
        let Some(permit) = self.matching.enter(deadline) else {
            return (None, 0);
        };
        // A bounded number of evaluations at once (the permit above): more only interleave on
        // the same cores, and each thread that scans keeps search caches of its own.
        let _permit = permit;
        // Each path once, in first-seen order; a repeated path is copied, not re-read.
        let mut unique: Vec<PathBuf> = Vec::with_capacity(paths.len());
        let mut slot: HashMap<&str, usize> = HashMap::new();
        for path in paths {
            slot.entry(path).or_insert_with(|| {
                unique.push(PathBuf::from(path));
                unique.len() - 1
            });
        }
        // Paths that name one file (a symlink, a hard link) share one read.
        let groups = group_by_file(&unique);
        // Helpers take a share only when this search has the daemon to itself
        // (`helpers_wanted`), each under a permit of its own that no waiter was promised.
        let extra: Vec<Permit<&Gate>> = (0..self.helpers_wanted(groups.len()))
            .map_while(|_| self.matching.try_enter())
            .collect();
        let batch = Arc::new(Batch {
            snapshot: snapshot.clone(),
            repos: self.repos.clone(),
            max_file_bytes: self.settings.max_file_bytes,
            details,
            deadline,
            progress: Mutex::new(Progress {
                results: vec![None; unique.len()],
                done: 0,
                lost: false,
            }),
            edits: unique
                .iter()
                .map(|p| {
                    p.to_str()
                        .and_then(|p| edits.get(p))
                        .cloned()
                        .unwrap_or_default()
                })
                .collect(),
            paths: unique,
            groups,
            reads: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            finished: Condvar::new(),
        });
        for _ in &extra {
            let batch = batch.clone();
            self.helpers.submit(Box::new(move || batch.work()));
        }
        batch.work();
        let evaluated = batch.wait();
        drop(extra);
        let reads = batch.reads.load(Ordering::Relaxed);
        let Some(evaluated) = evaluated else {
            return (None, reads);
        };
        (
            Some(paths.iter().map(|p| evaluated[slot[p]].clone()).collect()),
            reads,
        )
    }
}

/// An engine for unit tests: everything under `dir` (guidebook root `dir/guidebook`, the
/// database, the socket path, the home), nothing from the test's environment.
#[cfg(test)]
pub(crate) fn test_engine(dir: &Path) -> Engine {
    let overrides = crate::config::Overrides {
        guidebook_root: Some(dir.join("guidebook")),
        db: Some(dir.join("t.db")),
        socket: Some(dir.join("t.sock")),
        ..Default::default()
    };
    let settings = Settings::resolve_with(&overrides, |k| {
        (k == "ADAPTIVE_GUIDEBOOK_HOME").then(|| dir.join("home").into_os_string())
    })
    .unwrap();
    Engine::open(settings).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::Skip;

    /// Alone, a search of several files enlists the helpers; beside another call, none.
    /// The latest searched files are kept for warming, each once, the newest last, at most
    /// sixteen; `warm` evaluates them against the snapshot being served.
    #[test]
    fn the_latest_searched_files_are_kept_for_warming() {
        let dir = tempfile::tempdir().unwrap();
        let engine = test_engine(dir.path());
        let names = |range: std::ops::Range<usize>| -> Vec<String> {
            range.map(|i| format!("/f{i}")).collect()
        };
        engine.note_searched(&names(0..10));
        engine.note_searched(&names(5..20));
        engine.note_searched(&names(4..5));
        let kept: Vec<String> = engine.recent.locked().iter().cloned().collect();
        let mut expected = names(5..20);
        expected.push("/f4".into());
        assert_eq!(kept, expected);
        engine.warm();
    }

    #[test]
    fn a_search_beside_other_calls_enlists_no_helper() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, _) = engine_and_files(dir.path());
        assert!(
            engine.helpers.threads > 0,
            "needs a machine of 2 cores or more"
        );
        let alone = engine.helpers.threads.min(6);
        assert_eq!(engine.helpers_wanted(7), alone, "no call in flight (a CLI)");
        assert_eq!(engine.helpers_wanted(1), 0, "one file is not shared");
        let _this = engine.calls.enter();
        assert_eq!(engine.helpers_wanted(7), alone, "the search's own call");
        let other = engine.calls.enter();
        assert_eq!(engine.helpers_wanted(7), 0, "another call in flight");
        drop(other);
        assert_eq!(engine.helpers_wanted(7), alone);
    }

    /// An engine on a one-guideline guidebook (`needle(`) and 7 files, every third matching.
    fn engine_and_files(dir: &Path) -> (Engine, Vec<String>) {
        let root = dir.join("guidebook");
        std::fs::create_dir_all(root.join("g")).unwrap();
        std::fs::write(
            root.join("g/guideline.yaml"),
            "id: g\nmatch:\n  any:\n    - regex:\n        pattern: 'needle\\('\ncontent: c\n",
        )
        .unwrap();
        let engine = super::test_engine(dir);
        let paths: Vec<String> = (0..7)
            .map(|i| {
                let p = dir.join(format!("f{i}.kt"));
                let text = if i % 3 == 1 {
                    "x = needle(1)"
                } else {
                    "x = needles"
                };
                std::fs::write(&p, text).unwrap();
                p.display().to_string()
            })
            .collect();
        (engine, paths)
    }

    /// Files spread over the free cores come back in the order asked, a repeated path with
    /// its first evaluation, each as it is when evaluated alone.
    #[test]
    fn files_shared_between_cores_come_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, paths) = engine_and_files(dir.path());
        let snapshot = engine.guidebook.snapshot();
        let permits = engine.matching.free();
        assert_eq!(snapshot.guidelines.len(), 1, "{:?}", snapshot.errors);
        let mut asked: Vec<&str> = paths.iter().map(String::as_str).collect();
        asked.insert(3, asked[1]);
        asked.push(asked[0]);
        let hits =
            |e: &[FileEvaluation]| -> Vec<usize> { e.iter().map(|f| f.matches.len()).collect() };
        let together = engine.evaluate(&snapshot, &asked, true);
        let alone: Vec<FileEvaluation> = asked
            .iter()
            .flat_map(|p| engine.evaluate(&snapshot, &[p], true))
            .collect();
        assert_eq!(hits(&together), [0, 1, 0, 1, 0, 1, 0, 0, 0]);
        assert_eq!(hits(&together), hits(&alone));
        assert_eq!(engine.matching.free(), permits, "all permits back");
    }

    /// Paths that name one file (a symlink to it, a hard link, a `..` spelling) are read once
    /// within an evaluation, and each still gets its own answer.
    #[test]
    fn paths_to_one_file_are_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, paths) = engine_and_files(dir.path());
        let snapshot = engine.guidebook.snapshot();
        let target = Path::new(&paths[1]);
        let link = dir.path().join("link.kt");
        std::os::unix::fs::symlink(target, &link).unwrap();
        let hard = dir.path().join("hard.kt");
        std::fs::hard_link(target, &hard).unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let dotted = sub.join("..").join("f1.kt");
        let asked: Vec<String> = [
            paths[1].clone(),
            link.display().to_string(),
            hard.display().to_string(),
            dotted.display().to_string(),
            paths[0].clone(),
            dir.path().join("missing.kt").display().to_string(),
        ]
        .into();
        let asked: Vec<&str> = asked.iter().map(String::as_str).collect();
        let (evaluated, reads) =
            engine.evaluate_counted(&snapshot, &asked, &Edits::new(), true, None);
        let evaluated = evaluated.unwrap();
        assert_eq!(reads, 3, "f1 (four names), f0, and the missing file");
        let hits: Vec<usize> = evaluated.iter().map(|f| f.matches.len()).collect();
        assert_eq!(hits, [1, 1, 1, 1, 0, 0]);
        assert_eq!(
            evaluated[5].skipped,
            Some(Skip::NotFound),
            "a missing file is skipped as before"
        );
    }

    /// A helper busy with something else never holds an evaluation up: its caller evaluates
    /// every file nobody has claimed, and the helper's late share finds nothing left to do.
    #[test]
    fn a_busy_helper_does_not_hold_up_an_evaluation() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, paths) = engine_and_files(dir.path());
        let snapshot = engine.guidebook.snapshot();
        let permits = engine.matching.free();
        let asked: Vec<&str> = paths.iter().map(String::as_str).collect();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Arc::new(std::sync::Mutex::new(wait));
        for _ in 0..engine.helpers.threads {
            let wait = wait.clone();
            engine.helpers.submit(Box::new(move || {
                let _ = wait.locked().recv();
            }));
        }
        let evaluated = engine
            .evaluate_until(
                &snapshot,
                &asked,
                &Edits::new(),
                false,
                Some(Instant::now() + Duration::from_secs(60)),
            )
            .expect("evaluated before the deadline, without the helpers");
        let hits: Vec<usize> = evaluated.iter().map(|f| f.matches.len()).collect();
        assert_eq!(hits, [0, 1, 0, 0, 1, 0, 0]);
        drop(release);
        assert_eq!(engine.matching.free(), permits, "all permits back");
    }
}
