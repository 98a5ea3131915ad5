//! The lines of a file that differ from its last commit: what an edit is taken to have written
//! when the caller of `search` or `explain` did not say (`written`). Reads: the repository, by
//! running `git diff` (bounded in time and output).
//!
//! A file git does not track (or a repository without a commit yet) is all written; a tracked
//! file equal to its last commit wrote nothing; otherwise the new side of each hunk of
//! `git diff -U0 HEAD` is written. When git cannot answer (not installed, timed out, output
//! past the cap), the whole file counts, so a guideline is never hidden for want of an answer.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let ranges = new_sides(&out);
    if !ranges.is_empty() || out.windows(2).any(|w| w == b"@@") {
        return Written::lines(ranges);
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

/// The new side of every hunk header (`@@ -a,b +c,d @@`) of a `-U0` diff, as line ranges;
/// a hunk that only deletes writes nothing.
fn new_sides(diff: &[u8]) -> Vec<(usize, usize)> {
    diff.split(|b| *b == b'\n')
        .filter(|l| l.starts_with(b"@@ "))
        .filter_map(|l| {
            let text = std::str::from_utf8(l).ok()?;
            let new = text.split(' ').find(|w| w.starts_with('+'))?;
            let mut parts = new[1..].splitn(2, ',');
            let start: usize = parts.next()?.parse().ok()?;
            let count: usize = match parts.next() {
                Some(c) => c.parse().ok()?,
                None => 1,
            };
            (count > 0).then(|| (start, start + count - 1))
        })
        .collect()
}

/// Runs `git -C root ARGS` with the daemon's own git environment removed, bounded by
/// [`GIT_TIMEOUT`] and [`MAX_DIFF_BYTES`]: whether it succeeded and what it printed, or `None`
/// when it could not run or finish.
fn git(root: &Path, args: &[&std::ffi::OsStr]) -> Option<(bool, Vec<u8>)> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(root)
        .arg("--literal-pathspecs")
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_COMMON_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| tracing::warn!("cannot run git: {e}"))
        .ok()?;
    // Read on a thread of its own, so a long diff cannot fill the pipe and stall git.
    let stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let read = stdout.take(MAX_DIFF_BYTES as u64 + 1).read_to_end(&mut out);
        read.ok().map(|_| out)
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > GIT_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                tracing::warn!(root = %root.display(), "git {:?} timed out", args.first());
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            Err(_) => return None,
        }
    };
    let out = reader.join().ok()??;
    if out.len() > MAX_DIFF_BYTES {
        return None;
    }
    Some((status.success(), out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers_give_the_new_sides() {
        let diff = b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -3 +3 @@ fun a\n-x\n+y\n@@ -10,0 +11,2 @@\n+a\n+b\n@@ -20,2 +21,0 @@\n-c\n-d\n@@ -30,1 +29,3 @@\n";
        assert_eq!(new_sides(diff), [(3, 3), (11, 12), (29, 31)]);
        assert!(new_sides(b"").is_empty());
    }

    fn git_in(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
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
            Written::lines(vec![(3, 3), (10, 10)])
        );
        std::fs::write(&odd, body.replace("line 1\n", "first\n")).unwrap();
        assert_eq!(
            written_since_commit(&root, &odd),
            Written::lines(vec![(1, 1)])
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
