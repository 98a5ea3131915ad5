//! One file's evaluation against a guideline snapshot, the step `search`, `explain` and
//! `guidebook scan` share: its repository and language, then which applicable guidelines match
//! its content (with the first matching line of each, when asked). Reads: the file (capped),
//! its repository identity. Writes nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::files::{self, Skip};
use crate::guidebook::{Applicability, ApplicabilityKey, GuidelineSnapshot};
use crate::repo::RepositoryResolver;

/// One file's evaluation.
#[derive(Debug, Clone)]
pub struct FileEvaluation {
    pub repository: Option<String>,
    pub language: Option<&'static str>,
    pub skipped: Option<Skip>,
    /// Matching guidelines (snapshot indices, ascending) with, when details were asked for, the
    /// first matching line and pattern.
    pub matches: Vec<GuidelineMatch>,
}

#[derive(Debug, Clone)]
pub struct GuidelineMatch {
    pub guideline: usize,
    pub first: Option<(usize, String)>,
}

/// Which guidelines apply, per (repository, language): computed once per pair and reused.
pub type ApplicabilityCache = HashMap<ApplicabilityKey, Arc<Applicability>>;

/// What one thread's part of an evaluation remembers from file to file: which guidelines apply
/// per (repository, language), and each directory's repository identity. The files of one
/// change mostly share a directory, whose `.git` is then looked up once, not once per file.
#[derive(Debug, Default)]
pub struct EvaluationMemo {
    pub applicability: ApplicabilityCache,
    repositories: HashMap<PathBuf, Option<String>>,
}

impl EvaluationMemo {
    pub fn new() -> Self {
        Self::default()
    }

    /// The identity of the repository holding `path`, looked up once per directory.
    fn repository_of(&mut self, repos: &RepositoryResolver, path: &Path) -> Option<String> {
        let Some(dir) = path.parent() else {
            return repos.identity_of(path);
        };
        if let Some(known) = self.repositories.get(dir) {
            return known.clone();
        }
        let identity = repos.identity_of(path);
        self.repositories
            .insert(dir.to_path_buf(), identity.clone());
        identity
    }
}

/// One file's evaluation against `snapshot`: its repository and language, then, unless it
/// cannot be read, the applicable guidelines that match its first `max_file_bytes` (with the
/// first line and pattern of each when `details`). The one per-file step of `search`,
/// `explain` and `guidebook scan`.
pub fn evaluate_file(
    snapshot: &GuidelineSnapshot,
    repos: &RepositoryResolver,
    max_file_bytes: u64,
    path: &Path,
    details: bool,
    memo: &mut EvaluationMemo,
) -> FileEvaluation {
    let content = files::read_capped(path, max_file_bytes);
    evaluate_content(snapshot, repos, path, &content, details, memo)
}

/// [`evaluate_file`] on content already read (or the reason it could not be): what the paths
/// that name one file share.
pub(crate) fn evaluate_content(
    snapshot: &GuidelineSnapshot,
    repos: &RepositoryResolver,
    path: &Path,
    content: &Result<files::FileContent, Skip>,
    details: bool,
    memo: &mut EvaluationMemo,
) -> FileEvaluation {
    let language = crate::language::language_of(path);
    let repository = memo.repository_of(repos, path);
    match content {
        Err(skip) => FileEvaluation {
            repository,
            language,
            skipped: Some(skip.clone()),
            matches: Vec::new(),
        },
        Ok(content) => {
            let applicable = memo
                .applicability
                .entry((repository.clone(), language))
                .or_insert_with(|| snapshot.applicability_kept(repository.as_deref(), language));
            let matches = snapshot
                .matching(&content.bytes, applicable)
                .into_iter()
                .map(|g| GuidelineMatch {
                    guideline: g,
                    first: details
                        .then(|| snapshot.first_match(g, &content.bytes))
                        .flatten()
                        .map(|(line, p)| (line, p.to_string())),
                })
                .collect();
            FileEvaluation {
                repository,
                language,
                skipped: None,
                matches,
            }
        }
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
