//! The lines of a file that differ from its last commit: what an edit is taken to have written
//! when the caller of `search` or `explain` did not say (`written`). Reads: the repository, by
//! running `git diff` (bounded in time and output).
//!
//! A file git does not track (or a repository without a commit yet) is all written; a tracked
//! file equal to its last commit wrote nothing; otherwise the new side of each hunk of
//! `git diff -U0 HEAD` is written (read by [`edits::unified`]). When git cannot answer (not installed, timed out, output
//! past the cap), the whole file counts, so a guideline is never hidden for want of an answer.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::git::{git_command, run_git, wait_bounded, GitFailure};
use crate::guidebook::Written;

/// How long one git command may take before it is abandoned.
const GIT_TIMEOUT: Duration = Duration::from_secs(3);

/// The most diff output read; a diff longer than this is a rewrite: the whole file counts.
const MAX_DIFF_BYTES: usize = 4 << 20;

/// The lines of `file` (a path inside the repository at `root`) that differ from `HEAD`.
pub fn written_since_commit(root: &Path, file: &Path) -> Written {
    let Ok(relative) = file.strip_prefix(root) else {
        return Written::All;
    };
    let relative = relative.as_os_str();
    let diff = git(
        root,
        &[
            "diff".as_ref(),
            "--no-color".as_ref(),
            "--no-ext-diff".as_ref(),
            "--no-renames".as_ref(),
            "--text".as_ref(),
            "-U0".as_ref(),
            "HEAD".as_ref(),
            "--".as_ref(),
            relative,
        ],
    );
    let Some((true, out)) = diff else {
        return Written::All;
    };
    if let Some(file) = edits::unified::files(&out).into_iter().next() {
        return Written::lines(file.written);
    }
    // No hunk: unchanged since the commit, or not tracked at all.
    match git(
        root,
        &[
            "ls-files".as_ref(),
            "--error-unmatch".as_ref(),
            "--".as_ref(),
            relative,
        ],
    ) {
        Some((true, _)) => Written::lines(Vec::new()),
        _ => Written::All,
    }
}

/// Runs `git -C root ARGS` with the daemon's own git environment removed, bounded by
/// [`GIT_TIMEOUT`] and [`MAX_DIFF_BYTES`]: whether it succeeded and what it printed, or `None`
/// when it could not run or finish.
fn git(root: &Path, args: &[&std::ffi::OsStr]) -> Option<(bool, Vec<u8>)> {
    match run_git(root, args, GIT_TIMEOUT, MAX_DIFF_BYTES) {
        Ok(run) => Some((run.success, run.stdout)),
        // Output past the cap is a rewrite, not a problem worth a warning.
        Err(GitFailure::TooLong(_)) => None,
        Err(e) => {
            tracing::warn!(root = %root.display(), "git {:?}: {e}", args.first());
            None
        }
    }
}

/// A blob's first bytes, as [`cat_blobs`] read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blob {
    pub bytes: Vec<u8>,
    /// It was longer than the cap.
    pub truncated: bool,
}

/// Reads blobs by object id with one `git cat-file --batch`: each blob's first `cap` bytes
/// (`truncated` when it was longer), in the order asked, or `None` for an id git does not
/// have (or that names no blob). Bounded by `timeout` as a whole.
pub(crate) fn cat_blobs(
    root: &Path,
    ids: &[String],
    cap: usize,
    timeout: Duration,
) -> Result<Vec<Option<Blob>>, GitFailure> {
    use std::io::{BufRead, BufReader, Write};
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut child = git_command(root)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(GitFailure::Spawn)?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input: Vec<u8> = ids
        .iter()
        .flat_map(|id| format!("{id}\n").into_bytes())
        .collect();
    // Written from a thread: git answers as it reads, and its answers fill the other pipe.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let stdout = child.stdout.take().expect("piped stdout");
    let wanted = ids.len();
    let reader = std::thread::spawn(move || -> Option<Vec<Option<Blob>>> {
        let mut out = BufReader::new(stdout);
        let mut blobs = Vec::with_capacity(wanted);
        let mut header = Vec::new();
        for _ in 0..wanted {
            header.clear();
            out.read_until(b'\n', &mut header).ok()?;
            let text = std::str::from_utf8(&header).ok()?.trim_end();
            let mut words = text.split(' ');
            let (_, kind, size) = (words.next()?, words.next(), words.next());
            let Some(size) = size.and_then(|s| s.parse::<u64>().ok()) else {
                // `<id> missing` (or `ambiguous`): no content follows.
                blobs.push(None);
                continue;
            };
            let mut kept = Vec::with_capacity(size.min(cap as u64) as usize);
            (&mut out)
                .take(size.min(cap as u64))
                .read_to_end(&mut kept)
                .ok()?;
            let rest = size.saturating_sub(cap as u64);
            std::io::copy(&mut (&mut out).take(rest), &mut std::io::sink()).ok()?;
            let mut newline = [0u8; 1];
            out.read_exact(&mut newline).ok()?;
            blobs.push((kind == Some("blob")).then_some(Blob {
                bytes: kept,
                truncated: size > cap as u64,
            }));
        }
        Some(blobs)
    });
    let status = wait_bounded(&mut child, timeout);
    let _ = writer.join();
    let blobs = reader.join().ok().flatten();
    status?;
    blobs.ok_or_else(|| {
        GitFailure::Spawn(std::io::Error::other(
            "git cat-file --batch answered in a shape not understood",
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_in(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }

    /// Against a real repository: edited lines, an unchanged file, an untracked one, a
    /// repository with no commit yet, a name git would read as a pathspec.
    #[test]
    fn written_lines_come_from_the_last_commit() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git_in(&root, &["init", "-q"]);
        let fresh = root.join("A.kt");
        std::fs::write(&fresh, "a\n").unwrap();
        assert_eq!(
            written_since_commit(&root, &fresh),
            Written::All,
            "no commit yet"
        );
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&fresh, &body).unwrap();
        let odd = root.join(":(glob)*.kt");
        std::fs::write(&odd, &body).unwrap();
        git_in(&root, &["add", "."]);
        git_in(&root, &["commit", "-qm", "base"]);
        assert_eq!(written_since_commit(&root, &fresh), Written::lines(vec![]));
        let edited = body
            .replace("line 3\n", "line three\n")
            .replace("line 8\n", "");
        std::fs::write(&fresh, format!("{edited}tail\n")).unwrap();
        assert_eq!(
            written_since_commit(&root, &fresh),
            Written::lines(vec![[3, 3], [10, 10]])
        );
        std::fs::write(&odd, body.replace("line 1\n", "first\n")).unwrap();
        assert_eq!(
            written_since_commit(&root, &odd),
            Written::lines(vec![[1, 1]])
        );
        let untracked = root.join("B.kt");
        std::fs::write(&untracked, "b\n").unwrap();
        assert_eq!(written_since_commit(&root, &untracked), Written::All);
        assert_eq!(
            written_since_commit(&root, Path::new("/elsewhere/C.kt")),
            Written::All
        );
    }
}
