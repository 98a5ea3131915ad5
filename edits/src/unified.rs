//! The one unified-diff reader: git's multi-file `diff --git` output ([`files`]) and the
//! hosts' one-file diffs (jsdiff's `createPatch`, [`written_lines`]) read by the same hunk
//! reader: each `+` line's number on the new side. Reads and writes nothing.

use crate::LineRanges;

/// A hunk header's `@@ -a,b +c,d @@`: each side's first line and line count (1 when left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hunk {
    pub old: (usize, usize),
    pub new: (usize, usize),
}

/// The hunk header on `line` (`@@ -a,b +c,d @@ …`), if it is one.
pub fn hunk_header(line: &[u8]) -> Option<Hunk> {
    let text =
        std::str::from_utf8(line.strip_prefix(b"@@ ")?.split(|&b| b == b'@').next()?).ok()?;
    let side = |mark: char| -> Option<(usize, usize)> {
        let word = text.split_whitespace().find_map(|w| w.strip_prefix(mark))?;
        Some(match word.split_once(',') {
            Some((start, count)) => (start.parse().ok()?, count.parse().ok()?),
            None => (word.parse().ok()?, 1),
        })
    };
    Some(Hunk {
        old: side('-')?,
        new: side('+')?,
    })
}

/// Reads one file's hunks line by line: the new-side number of every `+` line, and whether
/// every hunk held the lines its header counts.
#[derive(Debug, Default)]
struct Hunks {
    written: Vec<usize>,
    hunks: usize,
    /// The hunk being read: the new side's next line, and the old and new lines still to come.
    at: Option<(usize, usize, usize)>,
    broken: bool,
}

impl Hunks {
    fn line(&mut self, text: &[u8]) {
        if text.starts_with(b"@@ ") {
            if self.at.is_some() {
                self.broken = true;
            }
            match hunk_header(text) {
                Some(hunk) => {
                    self.hunks += 1;
                    self.at = Some((hunk.new.0, hunk.old.1, hunk.new.1));
                    self.close_if_done();
                }
                None => self.broken = true,
            }
            return;
        }
        let Some((line, old_left, new_left)) = &mut self.at else {
            return;
        };
        match text.first() {
            Some(b'+') if *new_left > 0 && *line > 0 => {
                self.written.push(*line);
                *line += 1;
                *new_left -= 1;
            }
            Some(b' ') if *new_left > 0 && *old_left > 0 => {
                *line += 1;
                *new_left -= 1;
                *old_left -= 1;
            }
            Some(b'-') if *old_left > 0 => *old_left -= 1,
            // `\ No newline at end of file`.
            Some(b'\\') => {}
            _ => {
                self.broken = true;
                self.at = None;
            }
        }
        self.close_if_done();
    }

    fn close_if_done(&mut self) {
        if let Some((_, 0, 0)) = self.at {
            self.at = None;
        }
    }

    /// The written lines, if there was a hunk and each one added up.
    fn finish(self) -> Option<LineRanges> {
        (self.hunks > 0 && !self.broken && self.at.is_none())
            .then(|| LineRanges::of_lines(self.written))
    }
}

/// The written lines of one file's unified diff (`@@ -a,b +c,d @@` hunks, other lines before
/// the first hunk and between hunks ignored): each `+` line's number in the new file. `None`
/// when there is no hunk or a hunk does not add up to its header's counts, so that a shape
/// this reader does not know is never guessed at.
pub fn written_lines(diff: &[u8]) -> Option<LineRanges> {
    let mut hunks = Hunks::default();
    for line in diff.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if hunks.at.is_none() && !line.starts_with(b"@@ ") {
            continue;
        }
        hunks.line(line);
    }
    hunks.finish()
}

/// One file of a multi-file `git diff -U0 --full-index` (without renames), as the review reads
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// The path from the repository root, as git wrote it (unquoted), in bytes.
    pub path: Vec<u8>,
    /// What the change left: a file with its blob id (all zeros when git did not hash it, a
    /// working-tree file), or why there is nothing to review.
    pub side: NewSide,
    /// The lines the change wrote: each `+` line of its hunks.
    pub written: LineRanges,
}

/// What a diff left at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewSide {
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
pub fn files(diff: &[u8]) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    let mut hunks: Option<Hunks> = None;
    let mut mode: Option<&[u8]> = None;
    for line in diff.split(|b| *b == b'\n') {
        if let Some(header) = line.strip_prefix(b"diff --git ") {
            if let Some(file) = files.last_mut() {
                settle(file, mode, hunks.take());
            }
            mode = None;
            files.push(FileDiff {
                path: header_path(header).unwrap_or_default(),
                side: NewSide::File {
                    blob: String::new(),
                },
                written: LineRanges::new(),
            });
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if let Some(hunks) = &mut hunks {
            hunks.line(line);
            continue;
        }
        if line.starts_with(b"@@ ") {
            let mut reader = Hunks::default();
            reader.line(line);
            hunks = Some(reader);
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
        settle(file, mode, hunks);
    }
    files.retain(|f| !f.path.is_empty());
    files
}

/// A file's hunks read and its mode known: a regular file stays one; a link (120000) or a
/// submodule (160000) is not one.
fn settle(file: &mut FileDiff, mode: Option<&[u8]>, hunks: Option<Hunks>) {
    if let Some(hunks) = hunks {
        file.written = LineRanges::of_lines(hunks.written);
    }
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

    fn lines(diff: &str) -> Option<Vec<[usize; 2]>> {
        written_lines(diff.as_bytes()).map(Into::into)
    }

    #[test]
    fn hunk_headers_give_both_sides() {
        assert_eq!(
            hunk_header(b"@@ -3 +3,2 @@ fun a"),
            Some(Hunk {
                old: (3, 1),
                new: (3, 2)
            })
        );
        assert_eq!(
            hunk_header(b"@@ -10,0 +11 @@"),
            Some(Hunk {
                old: (10, 0),
                new: (11, 1)
            })
        );
        assert_eq!(hunk_header(b"@@ -x +1 @@"), None);
        assert_eq!(hunk_header(b"@ -1 +1 @@"), None);
    }

    #[test]
    fn a_hosts_diff_gives_its_plus_lines() {
        let diff = "Index: a.kt\n===\n--- a.kt\n+++ a.kt\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n+C\n c\n@@ -9,1 +10,1 @@\n-x\n+y\n\\ No newline at end of file\n";
        assert_eq!(lines(diff), Some(vec![[2, 3], [10, 10]]));
        // A hunk that holds fewer lines than it counts, or none at all: not guessed at.
        assert_eq!(lines("@@ -1,3 +1,3 @@\n a\n-b\n+B\n"), None);
        assert_eq!(lines("--- a\n+++ b\n"), None);
        // Only deletions: a diff that wrote nothing.
        assert_eq!(lines("@@ -2,1 +1,0 @@\n-gone\n"), Some(vec![]));
    }

    /// `-U0` hunks (git's): the `+` lines are the new side.
    #[test]
    fn git_hunks_give_their_new_sides() {
        let diff = b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -3 +3 @@ fun a\n-x\n+y\n@@ -10,0 +11,2 @@\n+a\n+b\n@@ -20,2 +21,0 @@\n-c\n-d\n@@ -30,1 +29,3 @@\n-e\n+f\n+g\n+h\n";
        let files = files(diff);
        assert_eq!(
            Vec::from(files[0].written.clone()),
            [[3, 3], [11, 12], [29, 31]]
        );
        assert!(super::files(b"").is_empty());
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
        let files = files(diff.as_bytes());
        let file = |blob: &str| NewSide::File {
            blob: blob.to_string(),
        };
        type Got = (String, NewSide, Vec<[usize; 2]>);
        let got: Vec<Got> = files
            .into_iter()
            .map(|f| (String::from_utf8(f.path).unwrap(), f.side, f.written.into()))
            .collect();
        assert_eq!(
            got,
            [
                ("src/A.kt".into(), file(&b), vec![[2, 3]]),
                ("na\u{ef}ve\tx".into(), file(&b), vec![[1, 1]]),
                ("my file.kt".into(), file(&b), vec![[1, 1]]),
                ("gone".into(), NewSide::Deleted, vec![]),
                ("img.png".into(), NewSide::Binary, vec![]),
                ("sub".into(), NewSide::NotAFile, vec![[1, 1]]),
                ("run.sh".into(), file(""), vec![]),
                ("empty".into(), file(&b), vec![]),
            ]
        );
    }
}
