//! One file's evaluation against a guideline snapshot, the step `search`, `explain` and
//! `guidebook scan` share: its repository, language and path in the repository, then which
//! applicable guidelines match its content (on the lines the edit wrote, for `in: changes`
//! leaves), with the first matching line and each leaf's outcome when asked. Reads: the file
//! (capped), its repository identity, and `git diff` when a `changes` leaf needs the written
//! lines and the caller did not give them. Writes nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::files::{self, Skip};
use crate::guidebook::{
    Applicability, ApplicabilityKey, Edit, FilePlace, GuidelineSnapshot, LeafOutcome, Text, Written,
};
use crate::repo::{find_repository, RepositoryResolver};

/// One file's evaluation.
#[derive(Debug, Clone)]
pub struct FileEvaluation {
    pub repository: Option<String>,
    /// The canonical root of its repository, when that repository has rules of its own.
    pub home: Option<PathBuf>,
    pub language: Option<&'static str>,
    pub skipped: Option<Skip>,
    /// Matching guidelines (snapshot indices, ascending) with, when details were asked for, the
    /// first matching line and pattern.
    pub matches: Vec<GuidelineMatch>,
    /// Guidelines that would have matched but for a `guidebook:allow` comment (ascending).
    pub allowed: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct GuidelineMatch {
    pub guideline: usize,
    pub first: Option<(usize, String)>,
    /// With details: each leaf of its condition and where it held.
    pub leaves: Vec<LeafOutcome>,
}

/// What the caller knows of one file's edit.
#[derive(Debug, Clone, Default)]
pub struct FileEdit {
    /// The lines the edit wrote; `None`: worked out from `git diff HEAD` if a leaf needs them.
    pub written: Option<Written>,
    /// The content to match instead of the file on disk.
    pub content: Option<Arc<Vec<u8>>>,
}

/// Which guidelines apply, per (repository, language): computed once per pair and reused.
pub type ApplicabilityCache = HashMap<ApplicabilityKey, Arc<Applicability>>;

/// What one thread's part of an evaluation remembers from file to file: which guidelines apply
/// per (repository, language), and each directory's repository identity. The files of one
/// change mostly share a directory, whose `.git` is then looked up once, not once per file.
#[derive(Debug, Default)]
pub struct EvaluationMemo {
    pub applicability: ApplicabilityCache,
    repositories: HashMap<PathBuf, Place>,
    /// Each repository root's canonical form, looked up once (only when some guidelines are a
    /// repository's own, which are keyed by it).
    canonical: HashMap<PathBuf, Option<PathBuf>>,
}

/// A directory's repository: its root and identity, or none.
#[derive(Debug, Clone, Default)]
struct Place {
    root: Option<PathBuf>,
    identity: Option<String>,
}

impl EvaluationMemo {
    pub fn new() -> Self {
        Self::default()
    }

    /// The repository holding `path` (root and identity), looked up once per directory.
    fn place_of(&mut self, repos: &RepositoryResolver, path: &Path) -> Place {
        let look = || match find_repository(path) {
            Some(repo) => Place {
                identity: repos.identity_of_root(&repo),
                root: Some(repo.root),
            },
            None => Place::default(),
        };
        let Some(dir) = path.parent() else {
            return look();
        };
        if let Some(known) = self.repositories.get(dir) {
            return known.clone();
        }
        let place = look();
        self.repositories.insert(dir.to_path_buf(), place.clone());
        place
    }

    /// The canonical form of a repository root, looked up once per root.
    fn canonical_root(&mut self, root: &Path) -> Option<PathBuf> {
        self.canonical
            .entry(root.to_path_buf())
            .or_insert_with(|| std::fs::canonicalize(root).ok())
            .clone()
    }

    #[cfg(test)]
    fn repository_of(&mut self, repos: &RepositoryResolver, path: &Path) -> Option<String> {
        self.place_of(repos, path).identity
    }
}

/// One file's evaluation against `snapshot`: its repository and language, then, unless it
/// cannot be read, the applicable guidelines that match its first `max_file_bytes` (with the
/// first line and pattern of each when `details`), every line counting as written. The
/// per-file step of `guidebook scan`.
pub fn evaluate_file(
    snapshot: &GuidelineSnapshot,
    repos: &RepositoryResolver,
    max_file_bytes: u64,
    path: &Path,
    details: bool,
    memo: &mut EvaluationMemo,
) -> FileEvaluation {
    let content = files::read_capped(path, max_file_bytes);
    let edit = FileEdit {
        written: Some(Written::All),
        content: None,
    };
    evaluate_content(snapshot, repos, path, &content, &edit, details, memo)
}

/// [`evaluate_file`] on content already read (or the reason it could not be), with what the
/// caller said of the edit: what the paths that name one file share. Content given in `edit`
/// is matched instead of `content`.
pub(crate) fn evaluate_content(
    snapshot: &GuidelineSnapshot,
    repos: &RepositoryResolver,
    path: &Path,
    content: &Result<files::FileContent, Skip>,
    edit: &FileEdit,
    details: bool,
    memo: &mut EvaluationMemo,
) -> FileEvaluation {
    let language = crate::language::language_of(path);
    let place = memo.place_of(repos, path);
    let repository = place.identity.clone();
    let bytes: &[u8] = match (&edit.content, content) {
        (Some(given), _) => given,
        (None, Ok(content)) => &content.bytes,
        (None, Err(skip)) => {
            return FileEvaluation {
                repository,
                home: None,
                language,
                skipped: Some(skip.clone()),
                matches: Vec::new(),
                allowed: Vec::new(),
            }
        }
    };
    // A repository with rules of its own is told apart by its canonical root.
    let home = match &place.root {
        Some(root) if snapshot.has_repository_rules() => memo
            .canonical_root(root)
            .filter(|home| snapshot.has_rules_of(home)),
        _ => None,
    };
    let applicable = memo
        .applicability
        .entry((home.clone(), repository.clone(), language))
        .or_insert_with(|| {
            snapshot.applicability_kept(home.as_deref(), repository.as_deref(), language)
        });
    let relative = place
        .root
        .as_deref()
        .and_then(|root| path.strip_prefix(root).ok());
    let file_place = match relative {
        Some(relative) => FilePlace::InRepository(relative),
        None => FilePlace::Outside,
    };
    let root = place.root.as_deref();
    let since_commit = || match root {
        Some(root) => crate::changes::written_since_commit(root, path),
        None => Written::All,
    };
    let edit = match &edit.written {
        Some(written) => Edit::known(written.clone()),
        None => Edit::lazy(since_commit),
    };
    let text = Text::new(bytes).in_language(language);
    let (matched, allowed) = snapshot.matching_allowed(&text, applicable, file_place, &edit);
    let matches = matched
        .into_iter()
        .map(|g| GuidelineMatch {
            guideline: g,
            first: details
                .then(|| snapshot.first_match_in(g, &text, &edit))
                .flatten()
                .map(|(line, p)| (line, p.to_string())),
            leaves: if details {
                snapshot.guidelines[g].leaves(&text, &edit)
            } else {
                Vec::new()
            },
        })
        .collect();
    FileEvaluation {
        repository,
        home,
        language,
        skipped: None,
        matches,
        allowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Within one evaluation a directory's repository is looked up once: a `.git` removed
    /// between two files of one directory is not seen by the second (a new memo sees it).
    #[test]
    fn a_memo_looks_a_directory_repository_up_once() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("src")).unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(&repo)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
        };
        git(&["init", "-q"]);
        git(&["remote", "add", "origin", "git@github.com:acme/memo.git"]);
        let repos = RepositoryResolver::new();
        let mut memo = EvaluationMemo::new();
        let (a, b) = (repo.join("src/a.kt"), repo.join("src/b.kt"));
        assert_eq!(memo.repository_of(&repos, &a).as_deref(), Some("acme/memo"));
        std::fs::remove_dir_all(repo.join(".git")).unwrap();
        assert_eq!(
            memo.repository_of(&repos, &b).as_deref(),
            Some("acme/memo"),
            "the directory's identity is remembered"
        );
        assert_eq!(EvaluationMemo::new().repository_of(&repos, &b), None);
    }
}
