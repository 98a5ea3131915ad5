//! `guidebook review`'s domain: the guidelines over the files a git diff changed, each file
//! evaluated exactly as the edit hook evaluates it (repository identity, language, path scope,
//! severity, `in: changes` on the lines the diff wrote), for a pull request, a commit about to
//! be made, or the working tree. Reads: the repository through `git` (bounded), its blobs or
//! working-tree files. Writes nothing.
//!
//! What is compared, and what counts as written:
//! - `--base B [--head H]`: `git diff $(git merge-base B H) H`, as a pull request shows it
//!   (B...H); each file's content is H's blob, never the working tree.
//! - `--staged`: `git diff --cached HEAD`; each file's content is the index's blob.
//! - neither: `git diff HEAD` and the working-tree files; an untracked file that is not ignored
//!   (`git ls-files --others --exclude-standard`) is all written.
//!
//! A repository without a commit compares with the empty tree. Deleted files, binary files
//! (as git decides, and untracked files with a NUL byte in their first 8,000 bytes), symbolic
//! links and submodules are not reviewed. Written lines are the new sides of the `-U0` hunks.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use edits::unified::{files as diff_files, NewSide};

use crate::changes::cat_blobs;
use crate::evaluation::{evaluate_content, EvaluationMemo, FileEdit};
use crate::files::{self, Skip};
use crate::git::{run_git, GitFailure, GitRun};
use crate::guidebook::{Guideline, GuidelineSnapshot, Severity, Written};
use crate::repo::RepositoryResolver;

/// How long one git command of a review may take: a pull request's diff can be large.
const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// The most diff output a review reads.
const MAX_DIFF_BYTES: usize = 512 << 20;

/// The bytes git looks at to call a file binary; an untracked file is judged the same way.
const BINARY_SNIFF: usize = 8000;

/// What to compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A pull request: from the merge base of `base` and `head` (default `HEAD`) to `head`.
    Range { base: String, head: Option<String> },
    /// The index against `HEAD`: the commit about to be made.
    Staged,
    /// The working tree against `HEAD`, untracked files included.
    WorkingTree,
}

/// One guideline firing on one changed file.
#[derive(Debug, Clone)]
pub struct Finding {
    /// From the repository root, `/`-separated.
    pub path: String,
    /// 1-based: the first match that counts.
    pub line: usize,
    pub guideline: Arc<Guideline>,
}

impl Finding {
    pub fn id(&self) -> &str {
        &self.guideline.id
    }

    pub fn severity(&self) -> Severity {
        self.guideline.severity
    }

    /// The first line of the guideline's content: its one-line message.
    pub fn message(&self) -> &str {
        first_line(&self.guideline.content)
    }
}

/// The first non-empty line of `content`, trimmed.
pub fn first_line(content: &str) -> &str {
    content
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// What a review found.
#[derive(Debug, Clone)]
pub struct ReviewReport {
    /// The repository's root (its working tree).
    pub root: PathBuf,
    /// What was compared, e.g. `1a2b3c…..4d5e6f…` or `HEAD..index`.
    pub compared: String,
    /// Changed files evaluated.
    pub files: usize,
    /// Changed files not evaluated: deleted, binary, links, submodules, unreadable.
    pub skipped: usize,
    /// Sorted by path, line, then guideline id.
    pub findings: Vec<Finding>,
    pub elapsed: Duration,
}

impl ReviewReport {
    /// Whether a `block` guideline fired: the review fails.
    pub fn blocked(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.severity() == Severity::Block)
    }
}

/// Why a review could not be made. Each text names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("{} is not in a git repository: {message}", dir.display())]
    NotARepository { dir: PathBuf, message: String },
    #[error("unknown revision `{rev}`: {message}")]
    UnknownRevision { rev: String, message: String },
    #[error(
        "`{base}` and `{head}` have no common ancestor (fetch the base's history, e.g. \
         `actions/checkout` with `fetch-depth: 0`)"
    )]
    NoMergeBase { base: String, head: String },
    #[error("`git {command}` failed in {}: {message}", root.display())]
    Git {
        command: String,
        root: PathBuf,
        message: String,
    },
    #[error("`git {command}` in {}: {source}", root.display())]
    GitFailed {
        command: String,
        root: PathBuf,
        source: GitFailure,
    },
}

/// The repository holding `dir`, and how it talks to git.
struct Repository {
    root: PathBuf,
}

impl Repository {
    fn open(dir: &Path) -> Result<Repository, ReviewError> {
        let run = run_git(
            dir,
            &["rev-parse".as_ref(), "--show-toplevel".as_ref()],
            GIT_TIMEOUT,
            1 << 20,
        )
        .map_err(|source| ReviewError::GitFailed {
            command: "rev-parse --show-toplevel".into(),
            root: dir.to_path_buf(),
            source,
        })?;
        let top = String::from_utf8_lossy(&run.stdout)
            .trim_end_matches('\n')
            .to_string();
        if !run.success || top.is_empty() {
            return Err(ReviewError::NotARepository {
                dir: dir.to_path_buf(),
                message: stderr_line(&run),
            });
        }
        let root = std::fs::canonicalize(&top).unwrap_or_else(|_| PathBuf::from(top));
        Ok(Repository { root })
    }

    /// Runs git in the repository; a failure to run or finish is an error, an exit status is
    /// the caller's to judge.
    fn git(&self, args: &[&OsStr]) -> Result<GitRun, ReviewError> {
        run_git(&self.root, args, GIT_TIMEOUT, MAX_DIFF_BYTES).map_err(|source| {
            ReviewError::GitFailed {
                command: describe(args),
                root: self.root.clone(),
                source,
            }
        })
    }

    /// Runs git, which must succeed; what it printed.
    fn git_ok(&self, args: &[&OsStr]) -> Result<Vec<u8>, ReviewError> {
        let run = self.git(args)?;
        if !run.success {
            return Err(ReviewError::Git {
                command: describe(args),
                root: self.root.clone(),
                message: stderr_line(&run),
            });
        }
        Ok(run.stdout)
    }

    /// The commit `rev` names, or an error naming `rev`.
    fn commit(&self, rev: &str) -> Result<String, ReviewError> {
        let spec = format!("{rev}^{{commit}}");
        let run = self.git(&[
            "rev-parse".as_ref(),
            "--verify".as_ref(),
            "--quiet".as_ref(),
            "--end-of-options".as_ref(),
            spec.as_ref(),
        ])?;
        let id = String::from_utf8_lossy(&run.stdout).trim().to_string();
        if !run.success || id.is_empty() {
            return Err(ReviewError::UnknownRevision {
                rev: rev.to_string(),
                message: "not a commit in this repository (for a pull request's base, fetch it \
                          first, e.g. `git fetch origin main`)"
                    .into(),
            });
        }
        Ok(id)
    }

    /// `HEAD`'s commit, or the empty tree when there is no commit yet.
    fn head_or_empty_tree(&self) -> Result<String, ReviewError> {
        match self.commit("HEAD") {
            Ok(id) => Ok(id),
            Err(_) => {
                let tree = self.git_ok(&[
                    "hash-object".as_ref(),
                    "-t".as_ref(),
                    "tree".as_ref(),
                    "--stdin".as_ref(),
                ])?;
                Ok(String::from_utf8_lossy(&tree).trim().to_string())
            }
        }
    }
}

/// `git ARGS` as a message shows it.
fn describe(args: &[&OsStr]) -> String {
    args.iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first line of what git said on standard error.
fn stderr_line(run: &GitRun) -> String {
    run.stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("git gave no reason")
        .to_string()
}

/// Where a changed file's content comes from.
enum Source {
    /// A blob of the object database (a commit's or the index's).
    Blob(String),
    /// The working tree.
    Disk { untracked: bool },
}

/// One changed file to evaluate.
struct Changed {
    relative: Vec<u8>,
    source: Source,
    written: Written,
    /// A blob's content, once read.
    blob: Option<Arc<Vec<u8>>>,
}

/// Reviews the changes `target` names in the repository holding `dir` against `snapshot`,
/// reading at most `max_file_bytes` of each file.
pub fn review(
    snapshot: &GuidelineSnapshot,
    dir: &Path,
    target: &Target,
    max_file_bytes: u64,
) -> Result<ReviewReport, ReviewError> {
    let started = Instant::now();
    let repo = Repository::open(dir)?;
    let (compared, range, cached) = match target {
        Target::Range { base, head } => {
            let head_rev = head.as_deref().unwrap_or("HEAD");
            let base_id = repo.commit(base)?;
            let head_id = repo.commit(head_rev)?;
            let merge_base =
                repo.git(&["merge-base".as_ref(), base_id.as_ref(), head_id.as_ref()])?;
            let merge_base = String::from_utf8_lossy(&merge_base.stdout)
                .trim()
                .to_string();
            if merge_base.is_empty() {
                return Err(ReviewError::NoMergeBase {
                    base: base.clone(),
                    head: head_rev.to_string(),
                });
            }
            (
                format!("{base}...{head_rev} ({merge_base}..{head_id})"),
                vec![merge_base, head_id],
                false,
            )
        }
        Target::Staged => (
            "HEAD..index".to_string(),
            vec![repo.head_or_empty_tree()?],
            true,
        ),
        Target::WorkingTree => (
            "HEAD..working tree".to_string(),
            vec![repo.head_or_empty_tree()?],
            false,
        ),
    };
    let mut args: Vec<&OsStr> = [
        "-c",
        "core.quotePath=true",
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--no-relative",
        "--full-index",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        "-U0",
    ]
    .iter()
    .map(|a| a.as_ref())
    .collect();
    if cached {
        args.push("--cached".as_ref());
    }
    args.extend(range.iter().map(|r| OsStr::new(r.as_str())));
    args.push("--".as_ref());
    let diff = repo.git_ok(&args)?;
    let mut skipped = 0;
    let mut changed: Vec<Changed> = Vec::new();
    for file in diff_files(&diff) {
        let NewSide::File { blob } = file.side else {
            skipped += 1;
            continue;
        };
        let source = match target {
            Target::WorkingTree => Source::Disk { untracked: false },
            _ => Source::Blob(blob),
        };
        changed.push(Changed {
            relative: file.path,
            source,
            written: Written::lines(file.written),
            blob: None,
        });
    }
    if *target == Target::WorkingTree {
        let untracked = repo.git_ok(&[
            "ls-files".as_ref(),
            "-z".as_ref(),
            "--others".as_ref(),
            "--exclude-standard".as_ref(),
        ])?;
        for path in untracked.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            changed.push(Changed {
                relative: path.to_vec(),
                source: Source::Disk { untracked: true },
                written: Written::All,
                blob: None,
            });
        }
    }
    // Every blob in one `git cat-file --batch`.
    let ids: Vec<String> = changed
        .iter()
        .filter_map(|c| match &c.source {
            Source::Blob(id) => Some(id.clone()),
            Source::Disk { .. } => None,
        })
        .collect();
    let cap = usize::try_from(max_file_bytes).unwrap_or(usize::MAX);
    let mut blobs = cat_blobs(&repo.root, &ids, cap, GIT_TIMEOUT)
        .map_err(|source| ReviewError::GitFailed {
            command: "cat-file --batch".into(),
            root: repo.root.clone(),
            source,
        })?
        .into_iter();
    for c in &mut changed {
        if let Source::Blob(_) = c.source {
            c.blob = blobs.next().flatten().map(|b| Arc::new(b.bytes));
        }
    }
    let evaluated = evaluate_all(snapshot, &repo.root, changed, max_file_bytes);
    let mut findings = Vec::new();
    let mut files = 0;
    for outcome in evaluated {
        match outcome {
            None => skipped += 1,
            Some(found) => {
                files += 1;
                findings.extend(found);
            }
        }
    }
    findings
        .sort_by(|a, b| (a.path.as_str(), a.line, a.id()).cmp(&(b.path.as_str(), b.line, b.id())));
    Ok(ReviewReport {
        root: repo.root,
        compared,
        files,
        skipped,
        findings,
        elapsed: started.elapsed(),
    })
}

/// Each changed file's findings (`None`: not evaluated), over the cores, each thread with an
/// evaluation memo of its own.
fn evaluate_all(
    snapshot: &GuidelineSnapshot,
    root: &Path,
    work: Vec<Changed>,
    max_file_bytes: u64,
) -> Vec<Option<Vec<Finding>>> {
    let repos = RepositoryResolver::new();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let per = work.len().div_ceil(cores).max(1);
    let mut chunks: Vec<Vec<Changed>> = Vec::new();
    let mut work = work.into_iter();
    loop {
        let chunk: Vec<_> = work.by_ref().take(per).collect();
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    crate::parallel::map(chunks, 1, |chunk| {
        let mut memo = EvaluationMemo::new();
        chunk
            .into_iter()
            .map(|changed| evaluate_one(snapshot, &repos, root, changed, max_file_bytes, &mut memo))
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect()
}

/// One changed file's findings, as the edit hook would see them; `None` when it is not
/// evaluated (gone, unreadable, binary).
fn evaluate_one(
    snapshot: &GuidelineSnapshot,
    repos: &RepositoryResolver,
    root: &Path,
    changed: Changed,
    max_file_bytes: u64,
    memo: &mut EvaluationMemo,
) -> Option<Vec<Finding>> {
    let path = root.join(OsStr::from_bytes(&changed.relative));
    let (content, given) = match changed.source {
        Source::Blob(_) => (Err(Skip::NotFound), Some(changed.blob?)),
        Source::Disk { untracked } => {
            let content = files::read_capped(&path, max_file_bytes).ok()?;
            let head = &content.bytes[..content.bytes.len().min(BINARY_SNIFF)];
            if untracked && head.contains(&0) {
                return None;
            }
            (Ok(content), None)
        }
    };
    let edit = FileEdit {
        written: Some(changed.written),
        content: given,
    };
    let evaluation = evaluate_content(snapshot, repos, &path, &content, &edit, true, memo);
    if evaluation.skipped.is_some() {
        return None;
    }
    let relative = String::from_utf8_lossy(&changed.relative).into_owned();
    Some(
        evaluation
            .matches
            .into_iter()
            .map(|m| Finding {
                path: relative.clone(),
                line: m.first.map_or(1, |(line, _)| line),
                guideline: snapshot.guidelines[m.guideline].guideline.clone(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_is_the_first_line_with_text() {
        assert_eq!(first_line("\n  Use delay().  \nWhy: ..."), "Use delay().");
        assert_eq!(first_line(""), "");
    }
}
