//! A trusted repository's rules as guidelines of their own id namespace: its rule files found,
//! read beneath its root, checked against what the user trusted, and mapped onto guidelines
//! confined to that repository; what waits for `guidebook trust` is kept for `status`,
//! `doctor` and `explain`. Reads: the trust store, the repositories' rule files. Writes:
//! nothing on disk; sets each repository's guidelines in the live [`Guidebook`].
//!
//! Never on a hook's path: the daemon loads every trusted repository in the background at start,
//! when `trust.json` changes, and when a watched rule file changes.

use std::collections::{BTreeMap, BTreeSet};
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
}

impl RepositorySources {
    pub fn new(rules: RepositoryRules, trust_file: PathBuf) -> Self {
        RepositorySources {
            rules,
            trust_file,
            reports: Mutex::new(BTreeMap::new()),
            loading: Mutex::new(()),
        }
    }

    /// The trust store's path.
    pub fn trust_file(&self) -> &Path {
        &self.trust_file
    }

    /// Loads every trusted repository's rules into `guidebook` and drops the rules of every
    /// repository no longer trusted. A trust store that cannot be read keeps what is served
    /// (its error is logged). Returns the roots now served, for the caller to watch.
    pub fn reload_all(&self, guidebook: &Guidebook) -> Vec<PathBuf> {
        let _one = self.loading.lock().unwrap_or_else(|p| p.into_inner());
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
            guidebook.set_repository(&gone, None);
            self.lock_reports().remove(&gone);
        }
        for root in &trusted {
            self.load_one(&store, root, guidebook);
        }
        trusted.into_iter().collect()
    }

    /// Loads the rules of the repository at `root` again (a watched rule file changed).
    pub fn reload(&self, root: &Path, guidebook: &Guidebook) {
        let _one = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        match TrustStore::load(&self.trust_file) {
            Ok(store) => self.load_one(&store, root, guidebook),
            Err(e) => tracing::warn!(target: crate::watched::FILE_ERRORS, "{e}"),
        }
    }

    fn load_one(&self, store: &TrustStore, root: &Path, guidebook: &Guidebook) {
        let Some(trusted) = store.files_of(root) else {
            guidebook.set_repository(root, None);
            self.lock_reports().remove(root);
            return;
        };
        let (rules, report) = load_repository(root, &self.rules, trusted);
        tracing::info!(
            root = %root.display(),
            served = report.served,
            waiting = report.waiting.len(),
            errors = report.errors.len(),
            "repository rules loaded"
        );
        guidebook.set_repository(root, Some(rules));
        self.lock_reports().insert(root.to_path_buf(), report);
    }

    /// What each trusted repository's rules came to at its last load.
    pub fn reports(&self) -> Vec<RepositoryReport> {
        self.lock_reports().values().cloned().collect()
    }

    /// The report of the trusted repository at `root` (canonical), if it is trusted.
    pub fn report_of(&self, root: &Path) -> Option<RepositoryReport> {
        self.lock_reports().get(root).cloned()
    }

    fn lock_reports(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, RepositoryReport>> {
        self.reports.lock().unwrap_or_else(|p| p.into_inner())
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
/// hash) holds with the same content; every other file is reported as waiting.
pub fn load_repository(
    root: &Path,
    rules: &RepositoryRules,
    trusted: &BTreeMap<PathBuf, String>,
) -> (RepositoryGuidelines, RepositoryReport) {
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
            report.waiting.push(waiting(
                "refused",
                format!(
                    "over the repository's cap of {} bytes of rule files (repositoryRules.maxBytes)",
                    rules.max_bytes
                ),
            ));
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
            Ok(Some(g)) => out.guidelines.push(Arc::new(g)),
            Ok(None) => {}
            Err(e) => {
                report.errors.push(e.to_string());
                out.errors.push(e);
            }
        }
    }
    report.served = out.guidelines.len();
    (out, report)
}
