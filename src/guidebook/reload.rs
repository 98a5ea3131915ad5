//! The live guidebook: the current [`GuidelineSnapshot`] behind `arc-swap`, and the reload that
//! replaces it when files change while keeping the last good version of every file that broke.
//! Reads: the guidebook root. Writes: nothing on disk.

use crate::sync::Locked;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use arc_swap::ArcSwap;

use super::file_map::{FileMap, PathKey};
use super::guideline::{Guideline, Origin};
use super::load::{parse_guideline, MAX_GUIDELINE_BYTES};
use super::snapshot::GuidelineSnapshot;
use super::walk::find_guideline_files;
use crate::watched::{read_text, FileState, LoadError, Stamp};

/// What a reload did, for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReloadOutcome {
    Unchanged,
    Swapped { guidelines: usize, errors: usize },
}

/// The guidebook as served: a snapshot readers take without locking, and the bookkeeping the
/// reloader needs to keep last-good versions.
#[derive(Debug)]
pub struct Guidebook {
    root: PathBuf,
    /// Team guidebooks (name, checkout directory), loaded after the root in this order.
    teams: Vec<(Arc<str>, Arc<Path>)>,
    current: ArcSwap<GuidelineSnapshot>,
    /// Held only by the reloader (one at a time); request handlers never touch it.
    files: Mutex<ReloadState>,
    /// Whether the first load has been swapped in; searches that arrive before wait on it.
    loaded: (Mutex<bool>, Condvar),
    /// The parse cache (see `cache.rs`): read by the first load and, when the flag says so,
    /// written after a load that parsed or dropped something.
    cache: Option<(PathBuf, bool)>,
}

#[derive(Debug, Default)]
struct ReloadState {
    /// By path, hashed: ten thousand paths kept in order cost a component-by-component
    /// comparison at every step of every lookup (with the listing's sort, 7 % of a
    /// 10,000-guideline start's CPU in perf).
    files: FileMap,
    root_error: Option<LoadError>,
    loaded_once: bool,
    /// The parse cache is behind what was last loaded (its write was put off).
    cache_behind: bool,
    /// Each team guidebook's files, by position in [`Guidebook::teams`].
    teams: Vec<FileMap>,
    /// The guidelines of each trusted repository's rule files, by canonical root, as the
    /// repository loader last set them.
    repositories: BTreeMap<PathBuf, RepositoryGuidelines>,
}

/// What one repository's rule files came to: its guidelines (ids in its own namespace, each
/// confined to it) and the files that could not be used.
#[derive(Debug, Clone, Default)]
pub struct RepositoryGuidelines {
    pub guidelines: Vec<Arc<Guideline>>,
    pub errors: Vec<LoadError>,
}

/// Where a reload's time went, for the `guidebook loaded` log line: listing the root, reading
/// and parsing what changed (the rest, up to the swap, is building the snapshot).
#[derive(Debug, Clone, Copy)]
struct Phases {
    started: Instant,
    listed: std::time::Duration,
    parsed: std::time::Duration,
}

impl Phases {
    fn since(started: Instant) -> Self {
        Phases {
            started,
            listed: started.elapsed(),
            parsed: std::time::Duration::ZERO,
        }
    }
}

/// When a load that parsed something writes the parse cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheWrite {
    /// Before [`Guidebook::reload_with`] returns.
    Now,
    /// At the next reload or [`Guidebook::write_cache`]: a daemon's first load leaves the
    /// cores to its first searches (writing 10,000 guidelines takes tens of milliseconds of
    /// CPU) and the first check for changes, a reload interval later, writes it.
    Later,
}

impl Guidebook {
    /// A guidebook for `root` holding an empty snapshot; call [`Guidebook::reload`] to load it.
    pub fn new(root: PathBuf) -> Self {
        Guidebook {
            current: ArcSwap::from_pointee(GuidelineSnapshot::empty(root.clone())),
            root,
            teams: Vec::new(),
            files: Mutex::new(ReloadState::default()),
            loaded: (Mutex::new(false), Condvar::new()),
            cache: None,
        }
    }

    /// Like [`Guidebook::new`], with a parse cache at `cache`: the first load takes every file
    /// unchanged since the cache was written from it, without reading or parsing it. With
    /// `write`, a load that parsed or dropped something writes the cache anew.
    pub fn with_cache(root: PathBuf, cache: PathBuf, write: bool) -> Self {
        Guidebook {
            cache: Some((cache, write)),
            ..Self::new(root)
        }
    }

    /// The team guidebooks to load after the root, in priority order: `(name, checkout)`.
    pub fn with_teams(mut self, teams: Vec<(String, PathBuf)>) -> Self {
        self.teams = teams
            .into_iter()
            .map(|(name, dir)| (Arc::from(name), Arc::from(dir)))
            .collect();
        self
    }

    /// The team guidebooks' names and checkout directories.
    pub fn teams(&self) -> impl Iterator<Item = (&str, &Path)> {
        self.teams.iter().map(|(n, d)| (&**n, &**d))
    }

    /// Serves `rules` as the repository at `root`'s own guidelines from now on (`None`: it has
    /// none any more), in a new snapshot.
    pub fn set_repository(&self, root: &Path, rules: Option<RepositoryGuidelines>) {
        let mut state = self.files.locked();
        let before = state.repositories.len();
        match rules {
            Some(rules) => {
                state.repositories.insert(root.to_path_buf(), rules);
            }
            None => {
                state.repositories.remove(root);
                if state.repositories.len() == before {
                    return;
                }
            }
        }
        if state.loaded_once {
            self.swap(&state, Phases::since(Instant::now()));
        }
    }

    /// The canonical roots of the repositories whose rules are served.
    pub fn repositories(&self) -> Vec<PathBuf> {
        let state = self.files.locked();
        state.repositories.keys().cloned().collect()
    }

    /// Loads `root` right away.
    pub fn load(root: PathBuf) -> Self {
        let gb = Self::new(root);
        gb.reload();
        gb
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the first load is done (before it, [`Guidebook::snapshot`] is empty).
    pub fn is_loaded(&self) -> bool {
        *self.loaded.0.locked()
    }

    /// The snapshot to serve one request from, once the first load is done: waits for it (a
    /// daemon answers its socket before its guidebook is compiled) until `deadline`, and gives
    /// `None` if the deadline passes first.
    pub fn loaded_snapshot(&self, deadline: Option<Instant>) -> Option<Arc<GuidelineSnapshot>> {
        let (lock, cvar) = &self.loaded;
        let loaded = lock.locked();
        drop(crate::parallel::wait_while(cvar, loaded, deadline, |l| {
            !*l
        })?);
        Some(self.snapshot())
    }

    /// The snapshot to serve one request from. Handlers hold the `Arc`, never a guard, so a
    /// reload can swap while they run.
    pub fn snapshot(&self) -> Arc<GuidelineSnapshot> {
        self.current.load_full()
    }

    /// Looks at the root for added, changed and removed guideline files and swaps in a new
    /// snapshot when anything changed. A file that no longer parses keeps its last good
    /// guideline in service and its error is reported instead.
    pub fn reload(&self) -> ReloadOutcome {
        self.reload_with(CacheWrite::Now)
    }

    /// Like [`Guidebook::reload`], writing the parse cache (when the load parsed anything, or
    /// a write is still owed) as `write` says.
    pub fn reload_with(&self, write: CacheWrite) -> ReloadOutcome {
        let mut state = self.files.locked();
        let outcome = self.reload_locked(&mut state);
        if state.cache_behind && write == CacheWrite::Now {
            self.write_cache_locked(&mut state);
        }
        outcome
    }

    /// Writes the parse cache if a load put its write off (the daemon calls it on its way out).
    /// A load still running is not waited for: its own write, or the next start, catches up.
    pub fn write_cache(&self) {
        let mut state = match self.files.try_lock() {
            Ok(state) => state,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        if state.cache_behind {
            self.write_cache_locked(&mut state);
        }
    }

    fn write_cache_locked(&self, state: &mut ReloadState) {
        // Owed only where the cache is written at all (see `reload_locked`).
        if let Some((cache, _)) = &self.cache {
            super::cache::save(cache, &self.root, &state.files);
        }
        state.cache_behind = false;
    }

    /// Looks at every team guidebook's checkout for changed files; whether anything changed.
    /// A checkout not fetched yet holds nothing (its fetch reports why, not the load).
    fn reload_teams(&self, state: &mut ReloadState) -> bool {
        state.teams.resize_with(self.teams.len(), FileMap::default);
        let mut changed = false;
        for ((name, dir), files) in self.teams.iter().zip(state.teams.iter_mut()) {
            let listing = if dir.is_dir() {
                find_guideline_files(dir).unwrap_or_default()
            } else {
                Vec::new()
            };
            let origin = Origin::Team {
                name: name.clone(),
                dir: dir.clone(),
            };
            changed |= refresh_files(listing, files, |path, text| {
                parse_guideline(path, text).map(|mut g| {
                    g.origin = origin.clone();
                    g
                })
            });
        }
        changed
    }

    fn reload_locked(&self, state: &mut ReloadState) -> ReloadOutcome {
        let started = Instant::now();
        let teams_changed = self.reload_teams(state);
        let listing = match find_guideline_files(&self.root) {
            Ok(l) => {
                state.root_error = None;
                // Only a root that can be listed is taken from the cache, file by file: a
                // root that cannot be read serves nothing on a first load, cache or not.
                if let (false, Some((cache, _))) = (state.loaded_once, &self.cache) {
                    state.files = super::cache::load(cache, &self.root);
                }
                l
            }
            Err(e) => {
                let err = LoadError::new(
                    &self.root,
                    None,
                    format!("cannot read the guidebook root: {e}"),
                );
                let changed = state.root_error.as_ref() != Some(&err);
                if changed {
                    tracing::warn!(target: crate::watched::FILE_ERRORS, "{err}");
                }
                state.root_error = Some(err);
                // Keep serving what was loaded: a root that vanishes for a moment (a checkout
                // being switched) must not take every guideline away.
                if changed || teams_changed || !state.loaded_once {
                    state.loaded_once = true;
                    return self.swap(state, Phases::since(started));
                }
                return ReloadOutcome::Unchanged;
            }
        };

        let listed = started.elapsed();
        let mut changed = !state.loaded_once || teams_changed;
        // Whether the files now differ from what the cache (or the last load) held.
        let parsed = refresh_files(listing, &mut state.files, parse_guideline);
        changed |= parsed;
        state.loaded_once = true;
        if !changed {
            return ReloadOutcome::Unchanged;
        }
        let phases = Phases {
            listed,
            parsed: started.elapsed() - listed,
            started,
        };
        let outcome = self.swap(state, phases);
        state.cache_behind |= parsed && matches!(self.cache, Some((_, true)));
        outcome
    }

    fn swap(&self, state: &ReloadState, phases: Phases) -> ReloadOutcome {
        let previous = self.current.load();
        let served_from: HashMap<&str, &Path> = previous
            .guidelines
            .iter()
            .map(|g| (g.id(), g.guideline.source.as_path()))
            .collect();

        let mut errors: Vec<LoadError> = state.root_error.iter().cloned().collect();
        errors.extend(state.files.values().filter_map(|f| f.error.clone()));

        // Resolve duplicate ids: the file already serving an id keeps it; otherwise the first
        // path wins. Every loser is reported with both paths.
        let mut by_id: BTreeMap<&str, Vec<&Arc<Guideline>>> = BTreeMap::new();
        for g in state.files.values().filter_map(|f| f.good.as_ref()) {
            by_id.entry(g.id.as_str()).or_default().push(g);
        }
        let mut chosen = Vec::with_capacity(by_id.len());
        for (id, mut candidates) in by_id {
            if candidates.len() > 1 {
                candidates.sort_by(|a, b| a.source.cmp(&b.source));
                let keeper = served_from
                    .get(id)
                    .and_then(|src| candidates.iter().position(|g| g.source == *src))
                    .unwrap_or(0);
                let kept = candidates.swap_remove(keeper);
                for loser in candidates {
                    errors.push(LoadError::new(
                        &loser.source,
                        loser.id_line,
                        format!(
                            "duplicate id `{id}`: already defined in {}",
                            kept.source.display()
                        ),
                    ));
                }
                chosen.push(kept.clone());
            } else {
                chosen.push(candidates[0].clone());
            }
        }
        // Then each team guidebook, then each repository's rules: an id an earlier source (or an
        // earlier file of the same source) holds is theirs, and the later one is reported.
        let mut taken: HashMap<String, PathBuf> = chosen
            .iter()
            .map(|g| (g.id.clone(), g.source.clone()))
            .collect();
        let mut add = |g: &Arc<Guideline>, errors: &mut Vec<LoadError>| match taken.get(&g.id) {
            Some(kept) => errors.push(LoadError::new(
                &g.source,
                g.id_line,
                format!(
                    "duplicate id `{}`: already defined in {}",
                    g.id,
                    kept.display()
                ),
            )),
            None => {
                taken.insert(g.id.clone(), g.source.clone());
                chosen.push(g.clone());
            }
        };
        for files in &state.teams {
            errors.extend(files.values().filter_map(|f| f.error.clone()));
            let mut good: Vec<&Arc<Guideline>> =
                files.values().filter_map(|f| f.good.as_ref()).collect();
            good.sort_by(|a, b| a.source.cmp(&b.source));
            for g in good {
                add(g, &mut errors);
            }
        }
        for rules in state.repositories.values() {
            errors.extend(rules.errors.iter().cloned());
            for g in &rules.guidelines {
                add(g, &mut errors);
            }
        }
        errors.sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
        let built_from = Instant::now();
        let snapshot = GuidelineSnapshot::build(self.root.clone(), chosen, errors);
        let built = built_from.elapsed();
        let outcome = ReloadOutcome::Swapped {
            guidelines: snapshot.guidelines.len(),
            errors: snapshot.errors.len(),
        };
        tracing::info!(
            root = %self.root.display(),
            guidelines = snapshot.guidelines.len(),
            patterns = snapshot.pattern_count(),
            errors = snapshot.errors.len(),
            listed_ms = crate::time::log_ms(phases.listed),
            parsed_ms = crate::time::log_ms(phases.parsed),
            built_ms = crate::time::log_ms(built),
            took_ms = crate::time::log_ms(phases.started.elapsed()),
            "guidebook loaded"
        );
        self.current.store(Arc::new(snapshot));
        let mut loaded = self.loaded.0.locked();
        if !*loaded {
            *loaded = true;
            self.loaded.1.notify_all();
        }
        outcome
    }
}

/// Refreshes `files` from a root's `listing`: every listed file re-read and parsed if its stamp
/// changed (the last good version kept when it broke), every file no longer listed dropped.
/// Whether anything was parsed or dropped.
fn refresh_files(
    listing: Vec<(PathBuf, std::fs::Metadata)>,
    files: &mut FileMap,
    parse: impl Fn(&Path, &str) -> Result<Guideline, LoadError> + Sync,
) -> bool {
    let mut parsed = false;
    let mut next = HashMap::with_capacity(listing.len());
    let work: Vec<_> = listing
        .into_iter()
        .map(|(path, meta)| {
            let path = PathKey(path);
            let previous = files.remove(&path);
            (path, meta, previous)
        })
        .collect();
    // Parsing and validating the patterns is most of a large guidebook's load: every core
    // takes a share of the files.
    let refreshed = crate::parallel::map(work, 64, |(path, meta, previous)| {
        let (entry, refreshed) = FileState::refresh(
            previous,
            Stamp::of(&meta),
            || read_text(&path.0, MAX_GUIDELINE_BYTES),
            |text| parse(&path.0, &text),
        );
        (path, entry, refreshed)
    });
    for (path, entry, refreshed) in refreshed {
        parsed |= refreshed;
        next.insert(path, entry);
    }
    // Whatever is left was deleted: its guideline goes with it.
    parsed |= !files.is_empty();
    *files = next;
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, dir: &str, id: &str, pattern: &str) -> PathBuf {
        crate::guidebook::write_test_guideline(
            root,
            dir,
            &format!("id: {id}\nmatch:\n  any:\n    - regex:\n        pattern: '{pattern}'\ncontent: {id} says {pattern}\n"),
        )
    }

    fn ids(gb: &Guidebook) -> Vec<String> {
        gb.snapshot()
            .guidelines
            .iter()
            .map(|g| g.id().to_string())
            .collect()
    }

    #[test]
    fn a_broken_file_keeps_its_last_good_version() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "a", "alpha", "foo");
        let gb = Guidebook::load(dir.path().to_path_buf());
        assert_eq!(ids(&gb), vec!["alpha"]);

        // Broken: an invalid regex. The old guideline stays, the error names file and line.
        std::fs::write(
            &p,
            "id: alpha\nmatch:\n  any:\n    - regex:\n        pattern: 'foo('\ncontent: x\n",
        )
        .unwrap();
        assert!(matches!(gb.reload(), ReloadOutcome::Swapped { .. }));
        let s = gb.snapshot();
        assert_eq!(ids(&gb), vec!["alpha"]);
        assert_eq!(s.guidelines[0].guideline.patterns, vec!["foo".to_string()]);
        assert_eq!(s.errors.len(), 1);
        assert_eq!(s.errors[0].path, p);
        assert_eq!(s.errors[0].line, Some(5));

        // Fixed: the new version is served and the error is gone.
        write(dir.path(), "a", "alpha", "bar");
        gb.reload();
        let s = gb.snapshot();
        assert_eq!(s.guidelines[0].guideline.patterns, vec!["bar".to_string()]);
        assert!(s.errors.is_empty());
        assert_eq!(gb.reload(), ReloadOutcome::Unchanged);
    }

    #[test]
    fn duplicate_ids_are_rejected_naming_both_paths() {
        let dir = tempfile::tempdir().unwrap();
        let first = write(dir.path(), "b", "same", "x");
        let gb = Guidebook::load(dir.path().to_path_buf());
        // "a/" sorts first, but "b/" already serves the id and keeps it.
        let second = write(dir.path(), "a", "same", "y");
        gb.reload();
        let s = gb.snapshot();
        assert_eq!(s.guidelines.len(), 1);
        assert_eq!(s.guidelines[0].guideline.source, first);
        assert_eq!(s.errors.len(), 1);
        assert_eq!(s.errors[0].path, second);
        assert!(s.errors[0].message.contains(&first.display().to_string()));
    }

    #[test]
    fn among_duplicates_loaded_together_the_first_path_wins() {
        // `a/z` comes before `a-b` in path order (component `a` before `a-b`), though `-`
        // is a smaller byte than `/`; the files are kept by hash, in no order at all.
        let dir = tempfile::tempdir().unwrap();
        let mut losers = Vec::new();
        for sub in ["c", "a-b", "b/x", "a0", "ab"] {
            losers.push(write(dir.path(), sub, "same", sub));
        }
        let first = write(dir.path(), "a/z", "same", "first");
        let gb = Guidebook::load(dir.path().to_path_buf());
        let s = gb.snapshot();
        assert_eq!(s.guidelines.len(), 1);
        assert_eq!(s.guidelines[0].guideline.source, first);
        losers.sort();
        let reported: Vec<&PathBuf> = s.errors.iter().map(|e| &e.path).collect();
        assert_eq!(reported, losers.iter().collect::<Vec<_>>());
    }

    #[test]
    fn deleted_files_take_their_guideline_away() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a", "alpha", "foo");
        let p = write(dir.path(), "b", "beta", "foo");
        let gb = Guidebook::load(dir.path().to_path_buf());
        assert_eq!(ids(&gb), vec!["alpha", "beta"]);
        std::fs::remove_file(p).unwrap();
        gb.reload();
        assert_eq!(ids(&gb), vec!["alpha"]);
    }

    /// Regression (found by the rewrite fault test): a `guideline.yaml` replaced by a
    /// directory used to be walked into and dropped like a deleted file, withdrawing the
    /// guideline silently. It is a broken file: last good version served, error reported.
    #[test]
    fn a_guideline_file_replaced_by_a_directory_keeps_its_last_good_version() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "b", "beta", "foo");
        let gb = Guidebook::load(dir.path().to_path_buf());
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        gb.reload();
        assert_eq!(ids(&gb), vec!["beta"]);
        let s = gb.snapshot();
        assert_eq!(s.errors.len(), 1);
        assert_eq!(s.errors[0].path, p);
        std::fs::remove_dir(&p).unwrap();
        gb.reload();
        assert_eq!(ids(&gb), Vec::<String>::new());
        assert!(gb.snapshot().errors.is_empty());
    }

    #[test]
    fn a_missing_root_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let gb = Guidebook::load(dir.path().join("nope"));
        let s = gb.snapshot();
        assert!(s.guidelines.is_empty());
        assert_eq!(s.errors.len(), 1);
        assert!(s.errors[0].message.contains("guidebook root"));
    }
}
