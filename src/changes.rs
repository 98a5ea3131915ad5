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
pub(crate) fn new_sides(diff: &[u8]) -> Vec<(usize, usize)> {
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

/// One file of a multi-file `git diff -U0 --full-index` (without renames), as the review reads
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileDiff {
    /// The path from the repository root, as git wrote it (unquoted), in bytes.
    pub path: Vec<u8>,
    /// What the change left: a file with its blob id (all zeros when git did not hash it, a
    /// working-tree file), or why there is nothing to review.
    pub side: NewSide,
    /// The new side of each hunk: the lines written.
    pub written: Vec<(usize, usize)>,
}

/// What a diff left at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NewSide {
    /// A regular file (mode 100644 or 100755) and its blob id.
    File { blob: String },
    /// Deleted.
    Deleted,
    /// Git calls it binary.
    Binary,
    /// A symbolic link or a submodule: no text of its own to review.
    NotAFile,
}

/// The files of a `git diff -U0 --full-index --no-renames --src-prefix=a/ --dst-prefix=b/`,
/// in git's order. A path git quotes (`"..."`, C escapes) is unquoted.
pub(crate) fn parse_diff(diff: &[u8]) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    let mut in_hunks = false;
    let mut mode: Option<&[u8]> = None;
    for line in diff.split(|b| *b == b'\n') {
        if let Some(header) = line.strip_prefix(b"diff --git ") {
            if let Some(file) = files.last_mut() {
                settle_mode(file, mode);
            }
            mode = None;
            in_hunks = false;
            files.push(FileDiff {
                path: header_path(header).unwrap_or_default(),
                side: NewSide::File {
                    blob: String::new(),
                },
                written: Vec::new(),
            });
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if line.starts_with(b"@@ ") {
            in_hunks = true;
            file.written.extend(new_sides(line));
            continue;
        }
        if in_hunks {
            continue;
        }
        if line.starts_with(b"deleted file mode ") {
            file.side = NewSide::Deleted;
        } else if let Some(m) = line
            .strip_prefix(b"new file mode ")
            .or_else(|| line.strip_prefix(b"new mode "))
        {
            mode = Some(m);
        } else if let Some(index) = line.strip_prefix(b"index ") {
            let mut words = index.split(|b| *b == b' ');
            let ids = words.next().unwrap_or_default();
            if let Some(m) = words.next() {
                mode = mode.or(Some(m));
            }
            if let (NewSide::File { blob }, Some(new)) = (
                &mut file.side,
                ids.split(|b| *b == b'.').rfind(|w| !w.is_empty()),
            ) {
                *blob = String::from_utf8_lossy(new).into_owned();
            }
        } else if line.starts_with(b"Binary files ") || line.starts_with(b"GIT binary patch") {
            if file.side != NewSide::Deleted {
                file.side = NewSide::Binary;
            }
        } else if let Some(path) = line.strip_prefix(b"+++ ") {
            if let Some(path) =
                unquote(path).and_then(|p| p.strip_prefix(b"b/").map(<[u8]>::to_vec))
            {
                file.path = path;
            }
        }
    }
    if let Some(file) = files.last_mut() {
        settle_mode(file, mode);
    }
    files.retain(|f| !f.path.is_empty());
    files
}

/// A regular file stays one; a link (120000) or a submodule (160000) is not reviewed.
fn settle_mode(file: &mut FileDiff, mode: Option<&[u8]>) {
    if matches!(file.side, NewSide::File { .. })
        && mode.is_some_and(|m| m != b"100644" && m != b"100755")
    {
        file.side = NewSide::NotAFile;
    }
}

/// The path of a `diff --git a/P b/P` header (no renames: both sides name one path).
fn header_path(header: &[u8]) -> Option<Vec<u8>> {
    if header.first() == Some(&b'"') {
        // Quoted: `"a/P" "b/P"`; the second is the new side.
        let end = quoted_end(header)?;
        let b = unquote(header.get(end + 1..)?.strip_prefix(b" ")?)?;
        return b.strip_prefix(b"b/").map(<[u8]>::to_vec);
    }
    // `a/P b/P`: the same P twice, so its length is fixed by the line's.
    let n = header.len().checked_sub(5)? / 2;
    let p = header.get(2..2 + n)?;
    (header.starts_with(b"a/") && header[2 + n..] == [b" b/".as_slice(), p].concat())
        .then(|| p.to_vec())
}

/// The index just past the closing quote of the quoted string `s` starts with.
fn quoted_end(s: &[u8]) -> Option<usize> {
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// A path as git writes it in a diff: as is (a trailing tab, which git adds after a name with
/// a space, dropped), or a C-quoted string (`"a/na\303\257ve"`) decoded to its bytes.
fn unquote(s: &[u8]) -> Option<Vec<u8>> {
    if s.first() != Some(&b'"') {
        return Some(s.strip_suffix(b"\t").unwrap_or(s).to_vec());
    }
    let end = quoted_end(s)?;
    let inner = &s[1..end - 1];
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        if inner[i] != b'\\' {
            out.push(inner[i]);
            i += 1;
            continue;
        }
        let c = *inner.get(i + 1)?;
        i += 2;
        out.push(match c {
            b'a' => 7,
            b'b' => 8,
            b't' => b'\t',
            b'n' => b'\n',
            b'v' => 11,
            b'f' => 12,
            b'r' => b'\r',
            b'0'..=b'3' => {
                let digits = inner.get(i - 1..i + 2)?;
                i += 2;
                digits.iter().try_fold(0u8, |n, d| {
                    (b'0'..=b'7').contains(d).then(|| n * 8 + (d - b'0'))
                })?
            }
            other => other,
        });
    }
    Some(out)
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

    /// A multi-file diff: an edit, a quoted non-ASCII name, a name with a space (git adds a
    /// tab after it), a deletion, a binary file, a submodule, a mode change and a new empty
    /// file.
    #[test]
    fn a_multi_file_diff_gives_each_file_its_new_side() {
        let z = "0".repeat(40);
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let diff = format!(
            "diff --git a/src/A.kt b/src/A.kt\nindex {a}..{b} 100644\n--- a/src/A.kt\n+++ b/src/A.kt\n\
             @@ -2 +2,2 @@\n--- x\n+++ y\n+z\n\
             diff --git \"a/na\\303\\257ve\\tx\" \"b/na\\303\\257ve\\tx\"\nnew file mode 100755\nindex {z}..{b}\n\
             --- /dev/null\n+++ \"b/na\\303\\257ve\\tx\"\n@@ -0,0 +1 @@\n+q\n\
             diff --git a/my file.kt b/my file.kt\nindex {a}..{b} 100644\n--- a/my file.kt\t\n+++ b/my file.kt\t\n@@ -1 +1 @@\n-a\n+b\n\
             diff --git a/gone b/gone\ndeleted file mode 100644\nindex {a}..{z}\n--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n\
             diff --git a/img.png b/img.png\nindex {a}..{b} 100644\nBinary files a/img.png and b/img.png differ\n\
             diff --git a/sub b/sub\nindex {a}..{b} 160000\n--- a/sub\n+++ b/sub\n@@ -1 +1 @@\n-Subproject commit {a}\n+Subproject commit {b}\n\
             diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n\
             diff --git a/empty b/empty\nnew file mode 100644\nindex {z}..{b}\n"
        );
        let files = parse_diff(diff.as_bytes());
        let file = |blob: &str| NewSide::File {
            blob: blob.to_string(),
        };
        type Got = (String, NewSide, Vec<(usize, usize)>);
        let got: Vec<Got> = files
            .into_iter()
            .map(|f| (String::from_utf8(f.path).unwrap(), f.side, f.written))
            .collect();
        assert_eq!(
            got,
            [
                ("src/A.kt".into(), file(&b), vec![(2, 3)]),
                ("na\u{ef}ve\tx".into(), file(&b), vec![(1, 1)]),
                ("my file.kt".into(), file(&b), vec![(1, 1)]),
                ("gone".into(), NewSide::Deleted, vec![]),
                ("img.png".into(), NewSide::Binary, vec![]),
                ("sub".into(), NewSide::NotAFile, vec![(1, 1)]),
                ("run.sh".into(), file(""), vec![]),
                ("empty".into(), file(&b), vec![]),
            ]
        );
    }

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
