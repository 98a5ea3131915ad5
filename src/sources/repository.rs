//! A trusted repository's rules as guidelines of their own id namespace: its rule files found,
//! read beneath its root, checked against what the user trusted, and mapped onto guidelines
//! confined to that repository; what waits for `guidebook trust` is kept for `status`,
//! `doctor` and `explain`. Reads: the trust store, the repositories' rule files. Writes:
//! nothing on disk; sets each repository's guidelines in the live [`Guidebook`].
//!
//! Never on a hook's path: the daemon loads every trusted repository in the background at start,
//! when `trust.json` changes, and when a watched rule file changes.

use crate::sync::Locked;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::config::RepositoryRules;
use crate::guidebook::{
    parse_guideline, Condition, Guidebook, Guideline, LoadError, Origin, RepositoryGuidelines,
};
use crate::sources::discover::{rule_files, RuleFile};
use crate::sources::read::read_text_beneath;
use crate::sources::trust::{self, TrustStore};
use crate::sources::{native, Mapping, RuleFormat};

/// The prefix of every repository rule's id: no guidebook id can hold a `:`, so a repository's
/// rule can never shadow a team guideline or mark one as shown.
pub const ID_PREFIX: &str = "repo:";

/// Why a rule file of a trusted repository is not served.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    /// Relative to the repository root.
    pub file: PathBuf,
    /// `changed` (differs from what was trusted), `new` (not in the trust record), `refused`
    /// (not read: a symlink, a FIFO, too large, …) or `not-mapped` (a rule no edit can trigger).
    pub state: &'static str,
    pub reason: String,
}

impl Waiting {
    /// `FILE: STATE: REASON`, as `status` and `explain` list it.
    pub fn line(&self) -> String {
        format!("{}: {}: {}", self.file.display(), self.state, self.reason)
    }
}

/// What one repository's rule files came to at its last load.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryReport {
    pub root: PathBuf,
    /// Rules served (guidelines).
    pub served: usize,
    /// Files not served, and why.
    pub waiting: Vec<Waiting>,
    /// Files served from but in error (front matter, globs, regexes), with line and column.
    pub errors: Vec<String>,
    /// Whether discovery stopped at a cap (more files than `maxFiles` or `maxBytes`).
    pub truncated: bool,
    #[serde(skip)]
    pub loaded_at: Option<SystemTime>,
}

/// Every trusted repository's rules, loaded into a guidebook.
#[derive(Debug)]
pub struct RepositorySources {
    rules: RepositoryRules,
    trust_file: PathBuf,
    reports: Mutex<BTreeMap<PathBuf, RepositoryReport>>,
    /// One load at a time: two would race to set a repository's guidelines.
    loading: Mutex<()>,
    /// What each served repository's watch covers: `(directory, recursive)`.
    watched: Mutex<BTreeMap<PathBuf, BTreeSet<(PathBuf, bool)>>>,
    /// Each served repository's rule files as they stood at its last load: a change elsewhere
    /// in a watched directory (the agent's edit of a file beside an `AGENTS.md`) reloads
    /// nothing.
    fingerprints: Mutex<BTreeMap<PathBuf, Fingerprint>>,
    /// Each served repository's last good guideline per rule file: a trusted file that no
    /// longer parses keeps it served.
    last_good: Mutex<BTreeMap<PathBuf, LastGood>>,
}

/// A repository's last good guideline per rule file (relative path).
type LastGood = HashMap<PathBuf, Arc<Guideline>>;

/// The rule files in a repository's watched directories, each with what `lstat` says of it.
type Fingerprint = Vec<(PathBuf, u64, u64, i64, i64, i64)>;

/// The rule files in `dirs` (each tree walked, each other directory listed), with inode, size,
/// modification and change times; no symlink followed.
fn fingerprint(root: &Path, dirs: &BTreeSet<(PathBuf, bool)>) -> Fingerprint {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    for (dir, recursive) in dirs {
        let mut walk = ignore::WalkBuilder::new(dir);
        walk.standard_filters(false).follow_links(false);
        if !recursive {
            walk.max_depth(Some(1));
        }
        for entry in walk.build().flatten().take(10_000) {
            let path = entry.path();
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            if RuleFormat::of(relative).is_none() {
                continue;
            }
            if let Ok(m) = std::fs::symlink_metadata(path) {
                out.push((
                    relative.to_path_buf(),
                    m.ino(),
                    m.len(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// The places under a repository root where rule files live in trees of their own, watched
/// recursively; any other rule file's directory is watched on its own.
const RULE_TREES: [&str; 5] = [
    ".guidebook",
    ".cursor/rules",
    ".claude/rules",
    ".github/instructions",
    ".continue/rules",
];

impl RepositorySources {
    pub fn new(rules: RepositoryRules, trust_file: PathBuf) -> Self {
        RepositorySources {
            rules,
            trust_file,
            reports: Mutex::new(BTreeMap::new()),
            loading: Mutex::new(()),
            watched: Mutex::new(BTreeMap::new()),
            fingerprints: Mutex::new(BTreeMap::new()),
            last_good: Mutex::new(BTreeMap::new()),
        }
    }

    /// The sources `settings` configure: its `repositoryRules` and its trust store.
    pub fn of(settings: &crate::config::Settings) -> Self {
        Self::new(
            settings.repository_rules.clone(),
            trust::store_path(settings),
        )
    }

    /// The trust store's path.
    pub fn trust_file(&self) -> &Path {
        &self.trust_file
    }

    /// Loads every trusted repository's rules into `guidebook` and drops the rules of every
    /// repository no longer trusted. A trust store that cannot be read keeps what is served
    /// (its error is logged). Returns the roots now served, for the caller to watch.
    pub fn reload_all(&self, guidebook: &Guidebook) -> Vec<PathBuf> {
        let _one = lock(&self.loading);
        let store = match TrustStore::load(&self.trust_file) {
            Ok(store) => store,
            Err(e) => {
                tracing::warn!(target: crate::watched::FILE_ERRORS, "{e}; the repositories' rules served stay as they were");
                return guidebook.repositories();
            }
        };
        let trusted: BTreeSet<PathBuf> = store.roots().map(Path::to_path_buf).collect();
        for gone in guidebook
            .repositories()
            .into_iter()
            .filter(|r| !trusted.contains(r))
        {
            self.forget(&gone, guidebook);
        }
        for root in &trusted {
            self.load_one(&store, root, guidebook);
        }
        trusted.into_iter().collect()
    }

    /// Loads the rules of the repository at `root` again when one of its rule files changed
    /// (something changed in a watched directory; a file that is not a rule file leaves it).
    pub fn reload(&self, root: &Path, guidebook: &Guidebook) {
        let _one = lock(&self.loading);
        let dirs = lock(&self.watched).get(root).cloned().unwrap_or_default();
        let known = lock(&self.fingerprints).get(root).cloned();
        if known.is_some_and(|known| known == fingerprint(root, &dirs)) {
            return;
        }
        match TrustStore::load(&self.trust_file) {
            Ok(store) => self.load_one(&store, root, guidebook),
            Err(e) => tracing::warn!(target: crate::watched::FILE_ERRORS, "{e}"),
        }
    }

    /// Serves nothing of the repository at `root` and forgets all that was kept of it.
    fn forget(&self, root: &Path, guidebook: &Guidebook) {
        guidebook.set_repository(root, None);
        lock(&self.reports).remove(root);
        lock(&self.watched).remove(root);
        lock(&self.last_good).remove(root);
    }

    fn load_one(&self, store: &TrustStore, root: &Path, guidebook: &Guidebook) {
        let Some(trusted) = store.files_of(root) else {
            self.forget(root, guidebook);
            return;
        };
        // The directories of every trusted file and the rule trees, fingerprinted before the
        // files are read: a change during the load is seen by the next check.
        let outside_trees = |p: &PathBuf| !RULE_TREES.iter().any(|t| p.starts_with(root.join(t)));
        let parents = |files: &mut dyn Iterator<Item = &PathBuf>| -> Vec<(PathBuf, bool)> {
            files
                .filter_map(|f| root.join(f).parent().map(Path::to_path_buf))
                .filter(outside_trees)
                .map(|p| (p, false))
                .collect()
        };
        let mut dirs: BTreeSet<(PathBuf, bool)> = RULE_TREES
            .iter()
            .map(|tree| (root.join(tree), true))
            .collect();
        dirs.extend(parents(&mut trusted.keys()));
        let now = fingerprint(root, &dirs);
        let previous = lock(&self.last_good).remove(root).unwrap_or_default();
        let (rules, report, good) = load_repository(root, &self.rules, trusted, &previous);
        lock(&self.last_good).insert(root.to_path_buf(), good);
        dirs.extend(parents(&mut report.waiting.iter().map(|w| &w.file)));
        lock(&self.fingerprints).insert(root.to_path_buf(), now);
        lock(&self.watched).insert(root.to_path_buf(), dirs);
        tracing::info!(
            root = %root.display(),
            served = report.served,
            waiting = report.waiting.len(),
            errors = report.errors.len(),
            "repository rules loaded"
        );
        guidebook.set_repository(root, Some(rules));
        lock(&self.reports).insert(root.to_path_buf(), report);
    }

    /// The directories to watch for the served repositories' rule files — each rule tree
    /// (recursively) and the directory of every other rule file found — as `(directory,
    /// recursive)`.
    pub fn watch_set(&self) -> BTreeSet<(PathBuf, bool)> {
        lock(&self.watched).values().flatten().cloned().collect()
    }

    /// The served repository a watched directory belongs to.
    pub fn root_of(&self, dir: &Path) -> Option<PathBuf> {
        lock(&self.watched)
            .keys()
            .filter(|root| dir.starts_with(root))
            .max_by_key(|root| root.as_os_str().len())
            .cloned()
    }

    /// What each trusted repository's rules came to at its last load.
    pub fn reports(&self) -> Vec<RepositoryReport> {
        lock(&self.reports).values().cloned().collect()
    }

    /// The report of the trusted repository at `root` (canonical), if it is trusted.
    pub fn report_of(&self, root: &Path) -> Option<RepositoryReport> {
        lock(&self.reports).get(root).cloned()
    }

    /// The configured switches and caps.
    pub fn rules(&self) -> &RepositoryRules {
        &self.rules
    }
}

/// The id namespace of the repository at `root`: `repo:<directory name>/`, the name reduced to
/// the characters an id may hold.
pub fn namespace(root: &Path) -> String {
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{ID_PREFIX}{}/", id_safe(&name))
}

/// `text` with every character an id may not hold (`A-Z a-z 0-9 . _ / -`) made a `-`.
fn id_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Reads and maps the rule files of the repository at `root` that `trusted` (relative path →
/// hash) holds with the same content; every other file is reported as waiting. A trusted file
/// that does not parse is reported and keeps its guideline of `previous` (its last good one)
/// served. Also returns each served file's guideline, the next load's `previous`.
pub fn load_repository(
    root: &Path,
    rules: &RepositoryRules,
    trusted: &BTreeMap<PathBuf, String>,
    previous: &LastGood,
) -> (RepositoryGuidelines, RepositoryReport, LastGood) {
    let mut good = LastGood::new();
    let discovery = rule_files(root, rules);
    let home: Arc<Path> = Arc::from(root);
    let namespace = namespace(root);
    let mut out = RepositoryGuidelines::default();
    let mut report = RepositoryReport {
        root: root.to_path_buf(),
        served: 0,
        waiting: Vec::new(),
        errors: Vec::new(),
        truncated: discovery.truncated,
        loaded_at: Some(SystemTime::now()),
    };
    for (file, reason) in &discovery.skipped {
        report.waiting.push(Waiting {
            file: file.clone(),
            state: "refused",
            reason: reason.clone(),
        });
    }
    let mut bytes = 0u64;
    for RuleFile { relative, format } in discovery.files {
        let path = root.join(&relative);
        let waiting = |state, reason: String| Waiting {
            file: relative.clone(),
            state,
            reason,
        };
        let text = match read_text_beneath(root, &relative, rules.max_file_bytes) {
            Ok(text) => text,
            Err(refused) => {
                report.waiting.push(waiting("refused", refused.to_string()));
                continue;
            }
        };
        bytes += text.len() as u64;
        if bytes > rules.max_bytes {
            report.truncated = true;
            report
                .waiting
                .push(waiting("refused", trust::over_bytes(rules)));
            continue;
        }
        match trusted.get(&relative) {
            Some(hash) if *hash == trust::hash(text.as_bytes()) => {}
            Some(_) => {
                report.waiting.push(waiting(
                    "changed",
                    "changed since it was trusted: run `guidebook trust` to review it".into(),
                ));
                continue;
            }
            None => {
                report.waiting.push(waiting(
                    "new",
                    "not trusted yet: run `guidebook trust` to review it".into(),
                ));
                continue;
            }
        }
        let origin = Origin::Repository {
            root: home.clone(),
            file: relative.clone(),
        };
        let guideline = match format {
            RuleFormat::Guidebook => parse_guideline(&path, &text).map(|mut g| {
                g.id = format!("{namespace}{}", g.id);
                g.origin = origin;
                Some(g)
            }),
            _ => match native::parse(format, &relative, &text) {
                Ok(Mapping::Rule(rule)) => Ok(Some(Guideline {
                    id: format!("{namespace}{}", id_safe(&relative.to_string_lossy())),
                    repositories: None,
                    languages: None,
                    paths: rule.paths,
                    condition: if rule.regexes.is_empty() {
                        Condition::always()
                    } else {
                        Condition::any_in_file(rule.regexes.len())
                    },
                    patterns: rule.regexes,
                    indexes: Default::default(),
                    severity: Default::default(),
                    content: rule.content,
                    source: path.clone(),
                    origin,
                    id_line: Some(rule.content_line),
                    examples: Vec::new(),
                })),
                Ok(Mapping::NotMapped(reason)) => {
                    report.waiting.push(waiting("not-mapped", reason));
                    Ok(None)
                }
                Err(e) => Err(LoadError {
                    path: path.clone(),
                    line: e.line,
                    column: e.column,
                    message: e.message,
                }),
            },
        };
        match guideline {
            Ok(Some(g)) => {
                let g = Arc::new(g);
                good.insert(relative.clone(), g.clone());
                out.guidelines.push(g);
            }
            Ok(None) => {}
            Err(e) => {
                if let Some(kept) = previous.get(&relative) {
                    good.insert(relative.clone(), kept.clone());
                    out.guidelines.push(kept.clone());
                }
                report.errors.push(e.to_string());
                out.errors.push(e);
            }
        }
    }
    report.served = out.guidelines.len();
    (out, report, good)
}

/// `mutex` locked; a panic while it was held does not make its state unusable here (every
/// value kept is whole between statements).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.locked()
}
