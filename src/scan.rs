//! A dry run of the guidebook over a whole repository: which guideline fires on which files.
//!
//! The repository is walked the way ripgrep walks it (`.gitignore`, `.ignore` and hidden files
//! respected, the `ignore` crate), files are evaluated in parallel with the same per-file step
//! as a real `search` (repository identity, language scope, the snapshot's matching), and
//! nothing is recorded. Reads: the repository's files, `git` for its identity.

use crate::sync::Locked;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ignore::{WalkBuilder, WalkState};

use crate::evaluation::{evaluate_file, EvaluationMemo};
use crate::guidebook::GuidelineSnapshot;
use crate::repo::RepositoryResolver;

/// Where one guideline fired in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub path: PathBuf,
    pub line: usize,
    pub pattern: String,
}

/// One guideline over the repository.
#[derive(Debug, Clone, PartialEq)]
pub struct GuidelineScan {
    pub id: String,
    /// Its `severity`.
    pub severity: &'static str,
    /// Where it came from (file and line, and which source).
    pub source: String,
    /// Files it applies to (repository and language scope), whether it matched or not.
    pub applicable: usize,
    /// The files it fires on, sorted by path, with the first matching line of each.
    pub hits: Vec<Hit>,
    /// `hits / files scanned`: how much of the codebase drags it in.
    pub share: f64,
    /// Files where a `guidebook:allow` comment let all its matches through.
    pub allowed: usize,
}

/// What a scan found.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanReport {
    pub root: PathBuf,
    /// The identities of the repositories the files belong to (usually one).
    pub repositories: Vec<String>,
    /// Files read and matched.
    pub files: usize,
    /// Files listed but not read (not regular, unreadable), and why.
    pub skipped: usize,
    pub bytes: u64,
    pub elapsed: Duration,
    /// Every guideline of the snapshot, noisiest first (share, then id).
    pub guidelines: Vec<GuidelineScan>,
}

/// Scans `root` with `snapshot`, on `threads` threads (0: one per core); `progress` is called
/// once per file evaluated.
pub fn scan(
    snapshot: &GuidelineSnapshot,
    root: &Path,
    max_file_bytes: u64,
    threads: usize,
    progress: &(dyn Fn() + Sync),
) -> ScanReport {
    let started = Instant::now();
    let repos = RepositoryResolver::new();
    struct Found {
        hits: Vec<Vec<Hit>>,
        applicable: Vec<usize>,
        allowed: Vec<usize>,
        repositories: BTreeMap<String, ()>,
        files: usize,
        skipped: usize,
        bytes: u64,
    }
    let found = Mutex::new(Found {
        hits: vec![Vec::new(); snapshot.guidelines.len()],
        applicable: vec![0; snapshot.guidelines.len()],
        allowed: vec![0; snapshot.guidelines.len()],
        repositories: BTreeMap::new(),
        files: 0,
        skipped: 0,
        bytes: 0,
    });
    WalkBuilder::new(root)
        .threads(threads)
        .build_parallel()
        .run(|| {
            let mut cache = EvaluationMemo::new();
            let (repos, found) = (&repos, &found);
            Box::new(move |entry| {
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let path = entry.path();
                let evaluation =
                    evaluate_file(snapshot, repos, max_file_bytes, path, true, &mut cache);
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                let applicable = cache
                    .applicability
                    .get(&(
                        evaluation.home.clone(),
                        evaluation.repository.clone(),
                        evaluation.language,
                    ))
                    .cloned();
                let mut found = found.locked();
                if evaluation.skipped.is_some() {
                    found.skipped += 1;
                } else {
                    found.files += 1;
                    found.bytes += size.min(max_file_bytes);
                }
                if let Some(repository) = evaluation.repository {
                    found.repositories.insert(repository, ());
                }
                if let Some(applicable) = applicable.filter(|_| evaluation.skipped.is_none()) {
                    for (count, &applies) in found.applicable.iter_mut().zip(applicable.iter()) {
                        *count += usize::from(applies);
                    }
                }
                for g in evaluation.allowed {
                    found.allowed[g] += 1;
                }
                for m in evaluation.matches {
                    let (line, pattern) = m.first.unwrap_or((1, String::new()));
                    found.hits[m.guideline].push(Hit {
                        path: path.to_path_buf(),
                        line,
                        pattern,
                    });
                }
                drop(found);
                progress();
                WalkState::Continue
            })
        });
    let found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    let files = found.files;
    let mut guidelines: Vec<GuidelineScan> = snapshot
        .guidelines
        .iter()
        .zip(found.hits)
        .zip(found.applicable)
        .zip(found.allowed)
        .map(|(((g, mut hits), applicable), allowed)| {
            hits.sort_by(|a, b| a.path.cmp(&b.path));
            GuidelineScan {
                id: g.id().to_string(),
                severity: g.guideline.severity.as_str(),
                source: g
                    .guideline
                    .origin
                    .describe(&g.guideline.source, g.guideline.id_line),
                applicable,
                allowed,
                share: if files == 0 {
                    0.0
                } else {
                    hits.len() as f64 / files as f64
                },
                hits,
            }
        })
        .collect();
    guidelines.sort_by(|a, b| b.share.total_cmp(&a.share).then_with(|| a.id.cmp(&b.id)));
    ScanReport {
        root: root.to_path_buf(),
        repositories: found.repositories.into_keys().collect(),
        files,
        skipped: found.skipped,
        bytes: found.bytes,
        elapsed: started.elapsed(),
        guidelines,
    }
}
